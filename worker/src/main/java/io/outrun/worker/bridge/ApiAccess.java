package io.outrun.worker.bridge;

import io.outrun.core.execution.Execution;
import io.outrun.core.identity.IdentityUnavailableException;
import io.outrun.core.identity.RunTokens;
import io.outrun.core.identity.TokenIssuer;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.Limits;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What each attempt of this node gets of Outrun's API (issue 31): its tokens, signed here at its
 * start ({@code OUTRUN_API_TOKEN}, and {@code OUTRUN_ID_TOKEN} when its submission asked for an
 * identity), and {@code OUTRUN_API} where the run can reach the API: in a container, its own
 * listener of the node's {@link ApiBridge} behind the relay its sandbox runs in it
 * ({@code DockerSandbox.withApiRelay}, {@code ProcessSandbox.withApiRelay}); as a host
 * process with the host's network, the node's {@code --api-url} itself; else nowhere (no
 * {@code OUTRUN_API}).
 *
 * <p>A node that cannot sign (no issuer, no secrets key, the key sealed under another) fails a
 * run that asked for an identity ({@link IdentityUnavailableException}); any other run goes
 * without the {@code OUTRUN_API*} variables, as before issue 31.
 */
public final class ApiAccess implements AutoCloseable {

    public static final String API = "OUTRUN_API";
    public static final String API_TOKEN = "OUTRUN_API_TOKEN";
    public static final String ID_TOKEN = "OUTRUN_ID_TOKEN";

    private static final Logger LOG = LoggerFactory.getLogger(ApiAccess.class);

    private final TokenIssuer issuer;
    private final String whyNoIssuer;
    private final ApiBridge bridge;
    private final String directUrl;

    /**
     * @param issuer      signs the runs' tokens; null: this node signs none, for {@code whyNoIssuer}
     * @param bridge      the node's bridge, for container runs; null: none
     * @param directUrl   without a bridge, the API's URL for runs with the host's network (host
     *                    processes); null: runs cannot reach the API
     */
    public ApiAccess(TokenIssuer issuer, String whyNoIssuer, ApiBridge bridge, String directUrl) {
        this.issuer = issuer;
        this.whyNoIssuer = whyNoIssuer;
        this.bridge = bridge;
        this.directUrl = directUrl;
    }

    /** A node whose runs get nothing of the API. */
    public static ApiAccess none(String why) {
        return new ApiAccess(null, why, null, null);
    }

    /** What one attempt was given; {@link #close} at the attempt's end ends its bridge connections. */
    public static final class Grant implements AutoCloseable {
        static final Grant NONE = new Grant(Map.of(), null);

        private final Map<String, String> env;
        private final ApiBridge.Listener listener;

        Grant(Map<String, String> env, ApiBridge.Listener listener) {
            this.env = env;
            this.listener = listener;
        }

        /**
         * {@code spec} with the grant's variables over any of the same names, and the socket for a
         * bridged run: its sandbox serves it on {@value Limits#API_RELAY_PORT} in the run (the relay,
         * ahead of the run where it can), so the command itself is the user's alone.
         */
        public RunSpec applyTo(RunSpec spec) {
            if (env.isEmpty()) {
                return spec;
            }
            Map<String, String> all = new LinkedHashMap<>(spec.env());
            all.putAll(env);
            RunSpec given = spec.withEnv(all);
            if (listener == null) {
                return given;
            }
            return given.withLimits(spec.limits().withApiSocket(listener.socket()));
        }

        /** Never the tokens. */
        @Override
        public String toString() {
            return "ApiAccess.Grant[" + env.keySet() + (listener == null ? "" : ", " + listener) + "]";
        }

        @Override
        public void close() {
            if (listener != null) {
                listener.close();
            }
        }
    }

    /**
     * The grant of {@code e}'s attempt starting now; its bridge listener, if any, is named {@code name}.
     *
     * @throws IdentityUnavailableException when {@code e} asked for an identity and this node cannot sign
     * @throws SandboxException             when its bridge listener cannot be opened (the run never started)
     */
    public Grant grant(Execution e, String name) {
        RunTokens tokens;
        try {
            if (issuer == null) {
                throw new IdentityUnavailableException(whyNoIssuer);
            }
            // The attempt's start as claimed (the database's clock, what the API shows as
            // startedAt): its tokens expire no later than startedAt + timeoutMs, the run's deadline.
            tokens = issuer.issue(e, e.startedAt() != null ? e.startedAt() : Instant.now());
        } catch (IdentityUnavailableException unsigned) {
            if (e.identityAudience() != null) {
                throw unsigned;
            }
            return Grant.NONE; // as before identities: the run just does not reach the API
        }
        Map<String, String> env = new LinkedHashMap<>();
        env.put(API_TOKEN, tokens.apiToken());
        if (tokens.idToken() != null) {
            env.put(ID_TOKEN, tokens.idToken());
        }
        ApiBridge.Listener listener = null;
        if (bridge != null) {
            try {
                listener = bridge.open(name, tokens.apiToken());
            } catch (IOException ex) {
                throw new SandboxException("cannot open the API bridge for this run: " + ex.getMessage(), ex);
            }
            env.put(API, ApiBridge.CONTAINER_URL);
        } else if (directUrl != null) {
            env.put(API, directUrl);
        }
        return new Grant(env, listener);
    }

    /**
     * Whether a host path can stand in the relay's socat address as it is: socat splits its
     * addresses at {@code ,} and {@code :}, and the relay line is not quoted for spaces.
     */
    public static boolean relayablePath(Path dir) {
        return dir.toAbsolutePath().toString().matches("[A-Za-z0-9/._+-]+");
    }

    @Override
    public void close() {
        if (bridge != null) {
            bridge.close();
        }
    }

    /** One line at the node's start: what its runs get of the API. */
    public void describe(String sandbox) {
        if (issuer == null) {
            LOG.info("runs get no run token ({}); runs that ask for an identity fail with identity_unavailable", whyNoIssuer);
        } else if (bridge != null) {
            LOG.info("runs reach Outrun's API at {} through this node's bridge (tokens issued as {})", ApiBridge.CONTAINER_URL,
                    issuer.issuer());
        } else if (directUrl != null) {
            LOG.info("runs reach Outrun's API at {} (tokens issued as {})", directUrl, issuer.issuer());
        } else {
            LOG.info("runs of the {} sandbox cannot reach Outrun's API (no --api-url, or no network); they get their"
                    + " tokens (issued as {}) all the same", sandbox, issuer.issuer());
        }
    }
}
