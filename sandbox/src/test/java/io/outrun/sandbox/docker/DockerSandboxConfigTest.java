package io.outrun.sandbox.docker;

import java.util.List;

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
                ok.responseTimeout(), 1, ok.leftoverScope(), List.of(), ok.engineGrace())).hasMessageContaining("maxConnections");
        assertThatThrownBy(() -> ok.withEngineGrace(Duration.ZERO)).hasMessageContaining("engineGrace");
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

    @Test
    void onlyTheDefaultImageAndTheAllowlistMayRun() {
        DockerSandboxConfig config = DockerSandboxConfig.defaults("n");
        assertThat(config.allows(DockerSandboxConfig.DEFAULT_IMAGE)).isTrue();
        assertThat(config.allows("debian:12")).isFalse();
        DockerSandboxConfig some = config.withAllowedImages(List.of("python:3.12", "tools/*"));
        assertThat(some.allows("python:3.12")).isTrue();
        assertThat(some.allows("tools/node:20")).isTrue();
        assertThat(some.allows("python:3.11")).isFalse();
        assertThat(config.withAllowedImages(List.of("*")).allows("anything:1")).isTrue();
    }
}
