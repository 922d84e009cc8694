package io.outrun.sandbox.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import java.io.IOException;
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

    DockerClients(DockerSandboxConfig config) {
        DefaultDockerClientConfig clientConfig = DefaultDockerClientConfig.createDefaultConfigBuilder()
                .withDockerHost(config.dockerHost())
                .withDockerTlsVerify(false)
                .build();
        this.control = client(clientConfig, config, config.responseTimeout());
        this.streams = client(clientConfig, config, null);
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
