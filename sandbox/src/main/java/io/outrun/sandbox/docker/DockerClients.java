package io.outrun.sandbox.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import com.github.dockerjava.transport.DockerHttpClient;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The two docker-java clients of a sandbox, each built from explicit config and transport.
 *
 * <p>Two, because httpclient5's response timeout is a socket read timeout that also applies to a
 * response body: a command silent for longer than it would break its output stream. So short
 * control calls go through {@link #control} (connect and response timeouts), while the attach and
 * wait streams, which live as long as the command, go through {@link #streams} (connect timeout
 * only; they end when the container stops or when the run closes them).
 */
final class DockerClients implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(DockerClients.class);

    final DockerClient control;
    final DockerClient streams;
    /**
     * The transport under {@link #control}, for a request whose answer may have to be abandoned
     * unread: its {@code Response.close()} aborts the request first, where closing a docker-java
     * stream reads the rest of a chunked body to its end (a 1 PB sparse file, streamed by the
     * engine as zeros, would never end).
     */
    final DockerHttpClient controlHttp;

    DockerClients(DockerSandboxConfig config) {
        // A Docker API is root on its host: over TCP it takes TLS (DOCKER_CERT_PATH, as the docker
        // CLI), or it must stay on this machine's loopback.
        String certs = System.getenv("DOCKER_CERT_PATH");
        URI host = URI.create(config.dockerHost());
        boolean tls = "tcp".equals(host.getScheme()) && certs != null && !certs.isBlank();
        if ("tcp".equals(host.getScheme()) && !tls && !isLoopback(host.getHost())) {
            throw new IllegalArgumentException("the Docker engine at " + config.dockerHost() + " would be reached without TLS;"
                    + " set DOCKER_CERT_PATH to its client certificates (ca.pem, cert.pem, key.pem), or use a unix socket");
        }
        DefaultDockerClientConfig.Builder builder = DefaultDockerClientConfig.createDefaultConfigBuilder()
                .withDockerHost(config.dockerHost())
                .withDockerTlsVerify(tls);
        if (tls) {
            builder.withDockerCertPath(certs);
        }
        DefaultDockerClientConfig clientConfig = builder.build();
        this.control = client(clientConfig, config, config.responseTimeout());
        this.controlHttp = ((DockerClientImpl) control).getHttpClient();
        this.streams = client(clientConfig, config, null);
    }

    private static boolean isLoopback(String host) {
        return host != null && (host.equals("localhost") || host.startsWith("127.") || host.equals("::1") || host.equals("[::1]"));
    }

    private static DockerClient client(DefaultDockerClientConfig clientConfig, DockerSandboxConfig config,
                                       Duration responseTimeout) {
        ApacheDockerHttpClient http = new ApacheDockerHttpClient.Builder()
                .dockerHost(clientConfig.getDockerHost())
                .sslConfig(clientConfig.getSSLConfig())
                .maxConnections(config.maxConnections())
                .connectionTimeout(config.connectTimeout())
                .responseTimeout(responseTimeout)
                .build();
        return DockerClientImpl.getInstance(clientConfig, http);
    }

    @Override
    public void close() {
        for (DockerClient client : new DockerClient[] {control, streams}) {
            try {
                client.close();
            } catch (IOException e) {
                log.debug("closing a docker client failed", e);
            }
        }
    }
}
