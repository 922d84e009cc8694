package io.outrun.sandbox.docker;

import io.outrun.model.inputs.Allowlist;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How a node reaches its Docker engine. Validated once at construction: a bad value fails fast
 * and names the option.
 *
 * @param dockerHost      engine address, {@code unix:///path} or {@code tcp://host:port};
 *                        default {@value #DEFAULT_HOST}
 * @param image           image for specs that name none; default {@value #DEFAULT_IMAGE} (built by
 *                        {@code sandbox/image/build.sh}); it needs bash and coreutils' {@code head}
 * @param nodeId          this node's id, written to every container's {@code outrun.node} label;
 *                        letters, digits and {@code . _ -}, at most 128 characters
 * @param connectTimeout  how long to wait for a connection to the engine; default 5 s
 * @param responseTimeout how long a control call (create, start, kill, remove, inspect, list) may
 *                        wait for its answer; default 30 s. Output and exit streams have none:
 *                        they last as long as the command and end when the container stops
 * @param maxConnections  connections kept to the engine per client; each run holds two
 *                        streaming ones while it runs; default 256
 * @param leftoverScope   which Outrun containers {@code removeLeftovers} considers; default
 *                        {@link LeftoverScope#NODE}
 * @param allowedImages   images an execution may ask for besides {@code image}: exact references,
 *                        {@code prefix*}, or {@code *} for any image on the engine; default none
 *                        (every command is hostile: the operator decides what it may run in)
 * @param engineGrace     how long a run whose engine stopped answering waits for it to answer
 *                        again before the attempt counts as lost; default 60 s. With the engine's
 *                        {@code live-restore} on, a run whose engine comes back within it goes on
 *                        in the same attempt
 */
public record DockerSandboxConfig(
        String dockerHost,
        String image,
        String nodeId,
        Duration connectTimeout,
        Duration responseTimeout,
        int maxConnections,
        LeftoverScope leftoverScope,
        List<String> allowedImages,
        Duration engineGrace) {

    public static final String DEFAULT_HOST = "unix:///var/run/docker.sock";
    public static final String DEFAULT_IMAGE = "outrun-sandbox:latest";

    /** Which containers {@link DockerSandbox#removeLeftovers} looks at. */
    public enum LeftoverScope {
        /**
         * Only those labelled with this node's id. Safe when engines are shared, but a node that
         * restarts under a new id never sees its predecessor's containers: use a stable node id.
         */
        NODE,
        /**
         * Every Outrun container on the engine, whichever node started it. Right when node ids
         * change across restarts, provided the policy keeps runs that other nodes still hold
         * (a live lease on that attempt); never share such an engine with another fleet.
         */
        ENGINE
    }

    private static final Pattern NODE_ID = Pattern.compile("[A-Za-z0-9._-]{1,128}");

    public DockerSandboxConfig {
        Objects.requireNonNull(dockerHost, "dockerHost");
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(nodeId, "nodeId");
        Objects.requireNonNull(connectTimeout, "connectTimeout");
        Objects.requireNonNull(responseTimeout, "responseTimeout");
        Objects.requireNonNull(leftoverScope, "leftoverScope");
        allowedImages = allowedImages == null ? List.of() : List.copyOf(allowedImages);
        Objects.requireNonNull(engineGrace, "engineGrace");
        if (engineGrace.isNegative() || engineGrace.isZero()) {
            throw new IllegalArgumentException("engineGrace must be positive: " + engineGrace);
        }
        String scheme = schemeOf(dockerHost);
        if (!scheme.equals("unix") && !scheme.equals("tcp")) {
            throw new IllegalArgumentException("dockerHost must be unix:///path or tcp://host:port: " + dockerHost);
        }
        if (image.isBlank()) {
            throw new IllegalArgumentException("image must not be blank");
        }
        if (!NODE_ID.matcher(nodeId).matches()) {
            throw new IllegalArgumentException("nodeId must be 1-128 letters, digits, '.', '_' or '-': " + nodeId);
        }
        if (connectTimeout.isNegative() || connectTimeout.isZero()) {
            throw new IllegalArgumentException("connectTimeout must be positive: " + connectTimeout);
        }
        if (responseTimeout.isNegative() || responseTimeout.isZero()) {
            throw new IllegalArgumentException("responseTimeout must be positive: " + responseTimeout);
        }
        if (maxConnections < 2) {
            throw new IllegalArgumentException("maxConnections must be at least 2: " + maxConnections);
        }
    }

    /** Defaults for everything but the node id. */
    public static DockerSandboxConfig defaults(String nodeId) {
        return new DockerSandboxConfig(DEFAULT_HOST, DEFAULT_IMAGE, nodeId, Duration.ofSeconds(5),
                Duration.ofSeconds(30), 256, LeftoverScope.NODE, List.of(), Duration.ofSeconds(60));
    }

    public DockerSandboxConfig withDockerHost(String host) {
        return new DockerSandboxConfig(host, image, nodeId, connectTimeout, responseTimeout, maxConnections, leftoverScope,
                allowedImages, engineGrace);
    }

    public DockerSandboxConfig withImage(String newImage) {
        return new DockerSandboxConfig(dockerHost, newImage, nodeId, connectTimeout, responseTimeout, maxConnections, leftoverScope,
                allowedImages, engineGrace);
    }

    public DockerSandboxConfig withTimeouts(Duration connect, Duration response) {
        return new DockerSandboxConfig(dockerHost, image, nodeId, connect, response, maxConnections, leftoverScope,
                allowedImages, engineGrace);
    }

    public DockerSandboxConfig withLeftoverScope(LeftoverScope scope) {
        return new DockerSandboxConfig(dockerHost, image, nodeId, connectTimeout, responseTimeout, maxConnections, scope, allowedImages, engineGrace);
    }

    public DockerSandboxConfig withAllowedImages(List<String> images) {
        return new DockerSandboxConfig(dockerHost, image, nodeId, connectTimeout, responseTimeout, maxConnections,
                leftoverScope, images, engineGrace);
    }

    public DockerSandboxConfig withEngineGrace(Duration grace) {
        return new DockerSandboxConfig(dockerHost, image, nodeId, connectTimeout, responseTimeout, maxConnections,
                leftoverScope, allowedImages, grace);
    }

    /** True when an execution may run in {@code requested} (its default image always may). */
    public boolean allows(String requested) {
        return requested.equals(image) || Allowlist.allows(allowedImages, requested);
    }

    private static String schemeOf(String host) {
        try {
            String scheme = URI.create(host).getScheme();
            return scheme == null ? "" : scheme;
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("dockerHost is not a URI: " + host, e);
        }
    }
}
