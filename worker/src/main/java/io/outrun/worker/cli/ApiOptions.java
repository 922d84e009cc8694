package io.outrun.worker.cli;

import io.outrun.api.http.ApiConfig;
import io.outrun.core.execution.Resources;
import io.outrun.core.identity.IdentityConfig;
import java.util.List;
import picocli.CommandLine.Option;

/** The API's listening address and the limits it clamps submissions to; defaults are ApiConfig's. */
public final class ApiOptions {

    @Option(names = "--port", defaultValue = "" + ApiConfig.DEFAULT_PORT, description = "API port (default ${DEFAULT-VALUE}; 0 = any free port)")
    int port;

    @Option(names = "--bind", description = "Interface to listen on (default 0.0.0.0 for `api`, 127.0.0.1 for `dev`)")
    String bind;

    @Option(names = "--max-timeout-ms", defaultValue = "" + ApiConfig.DEFAULT_MAX_TIMEOUT_MS, description = "Largest timeout a caller gets (default ${DEFAULT-VALUE})")
    long maxTimeoutMs;

    @Option(names = "--max-output-bytes", defaultValue = "" + ApiConfig.DEFAULT_MAX_OUTPUT_BYTES, description = "Largest bytes kept per stream a caller gets (default ${DEFAULT-VALUE})")
    int maxOutputBytes;

    @Option(names = "--max-body-bytes", defaultValue = "" + ApiConfig.DEFAULT_MAX_BODY_BYTES, description = "Largest request body; larger answers 413 (default ${DEFAULT-VALUE})")
    int maxBodyBytes;

    @Option(names = "--max-batch-body-bytes", defaultValue = "" + ApiConfig.DEFAULT_MAX_BATCH_BODY_BYTES,
            description = "Largest body of POST /v1/executions/batch; larger answers 413 (default ${DEFAULT-VALUE})")
    int maxBatchBodyBytes;

    @Option(names = "--max-attempts", defaultValue = "" + ApiConfig.DEFAULT_MAX_ATTEMPTS, description = "Most attempts an execution gets when workers"
            + " are lost mid-run; a submission may ask for fewer (default ${DEFAULT-VALUE})")
    int maxAttempts;

    @Option(names = "--env-allow", split = ",", defaultValue = ApiConfig.DEFAULT_ENV_ALLOW_TEXT,
            description = "Env names callers may set: NAME, PREFIX* or * (default ${DEFAULT-VALUE})")
    List<String> envAllow;

    @Option(names = "--max-memory-mb", defaultValue = "" + ApiConfig.DEFAULT_MAX_MEMORY_MB,
            description = "Most memory a submission's memoryMb gets, in MiB (default ${DEFAULT-VALUE})")
    int maxMemoryMb;

    @Option(names = "--max-cpus", defaultValue = "" + ApiConfig.DEFAULT_MAX_CPUS,
            description = "Most CPUs a submission's cpus gets (default ${DEFAULT-VALUE})")
    double maxCpus;

    @Option(names = "--max-pids", defaultValue = "" + ApiConfig.DEFAULT_MAX_PIDS,
            description = "Most processes a submission's pids gets (default ${DEFAULT-VALUE})")
    int maxPids;

    @Option(names = "--max-tmpfs-mb", defaultValue = "" + ApiConfig.DEFAULT_MAX_TMPFS_MB,
            description = "Largest workdir and /tmp a submission's tmpfsMb gets, in MiB (default ${DEFAULT-VALUE})")
    int maxTmpfsMb;

    @Option(names = "--public-url", defaultValue = "${env:OUTRUN_PUBLIC_URL}",
            description = "The URL callers reach the API at (env OUTRUN_PUBLIC_URL): the issuer of run tokens and the"
                    + " base of /.well-known/openid-configuration (default: http://<bind>:<port>)")
    String publicUrl;

    @Option(names = "--identity-audience", defaultValue = "${env:OUTRUN_IDENTITY_AUDIENCE}",
            description = "The aud of a run's identity token when its submission names none (default: the public URL)")
    String identityAudience;

    @Option(names = "--max-child-depth", defaultValue = "" + IdentityConfig.DEFAULT_MAX_CHILD_DEPTH,
            description = "How deep a run's children may nest (0: runs submit no children; default ${DEFAULT-VALUE})")
    int maxChildDepth;

    ApiConfig toConfig(String defaultBind) {
        return ApiConfig.defaults(bind != null ? bind : defaultBind, port)
                .withMaxTimeoutMs(maxTimeoutMs)
                .withMaxOutputBytes(maxOutputBytes)
                .withMaxBodyBytes(maxBodyBytes)
                .withMaxBatchBodyBytes(maxBatchBodyBytes)
                .withMaxAttempts(maxAttempts)
                .withEnvAllowlist(envAllow)
                .withIdentity(new IdentityConfig(blankToNull(publicUrl), blankToNull(identityAudience),
                        maxChildDepth))
                .withMaxResources(new Resources(maxMemoryMb, (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, Math.round(maxCpus * 1000))), maxPids, maxTmpfsMb));
    }

    private static String blankToNull(String text) {
        return text == null || text.isBlank() ? null : text;
    }
}
