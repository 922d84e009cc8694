package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.testing.Requirements;
import org.junit.jupiter.api.Test;

/** The kit's Docker check (it knows no product class) asks the engine and image the sandbox uses. */
class RequirementsAgreeTest {

    @Test
    void theKitProbesTheSandboxsDefaultEngineAndImage() {
        assertThat(Requirements.DOCKER_HOST).isEqualTo(DockerSandboxConfig.DEFAULT_HOST);
        assertThat(Requirements.SANDBOX_IMAGE).isEqualTo(DockerSandboxConfig.DEFAULT_IMAGE);
    }
}
