package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outrun.sandbox.SandboxUnavailableException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class DockerSandboxConfigTest {

    @Test
    void defaultsPointAtTheLocalEngineAndTheBuiltImage() {
        DockerSandboxConfig config = DockerSandboxConfig.defaults("node-1");
        assertThat(config.dockerHost()).isEqualTo("unix:///var/run/docker.sock");
        assertThat(config.image()).isEqualTo("outrun-sandbox:latest");
        assertThat(config.connectTimeout()).isPositive();
        assertThat(config.responseTimeout()).isPositive();
        assertThat(config.leftoverScope()).isEqualTo(DockerSandboxConfig.LeftoverScope.NODE);
    }

    @Test
    void rejectsBadValuesNamingTheOption() {
        DockerSandboxConfig ok = DockerSandboxConfig.defaults("node-1");
        assertThatThrownBy(() -> ok.withDockerHost("http://x")).hasMessageContaining("dockerHost");
        assertThatThrownBy(() -> ok.withImage(" ")).hasMessageContaining("image");
        assertThatThrownBy(() -> DockerSandboxConfig.defaults("node 1")).hasMessageContaining("nodeId");
        assertThatThrownBy(() -> ok.withTimeouts(Duration.ZERO, ok.responseTimeout())).hasMessageContaining("connectTimeout");
        assertThatThrownBy(() -> ok.withTimeouts(ok.connectTimeout(), Duration.ofSeconds(-1)))
                .hasMessageContaining("responseTimeout");
        assertThatThrownBy(() -> new DockerSandboxConfig(ok.dockerHost(), ok.image(), "n", ok.connectTimeout(),
                ok.responseTimeout(), 1, ok.leftoverScope())).hasMessageContaining("maxConnections");
        assertThatThrownBy(() -> ok.withLeftoverScope(null)).hasMessageContaining("leftoverScope");
    }

    @Test
    void verifyNamesAnUnreachableEngine() {
        DockerSandboxConfig config = DockerSandboxConfig.defaults("node-1").withDockerHost("unix:///nonexistent/docker.sock");
        try (DockerSandbox sandbox = new DockerSandbox(config)) {
            assertThatThrownBy(sandbox::verify)
                    .isInstanceOf(SandboxUnavailableException.class)
                    .hasMessageContaining("unix:///nonexistent/docker.sock")
                    .hasMessageContaining("unreachable");
        }
    }
}
