package io.outrun.core.logging;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

class ExecutionMdcTest {

    @AfterEach
    void clean() {
        MDC.clear();
    }

    @Test
    void tagsTheThreadAndPutsBackWhatWasThereOnClose() {
        UUID id = UUID.randomUUID();
        MDC.put("owner", "outer");
        try (ExecutionMdc ignored = ExecutionMdc.put(id, "alice", 2)) {
            assertThat(MDC.get(ExecutionMdc.EXECUTION_ID)).isEqualTo(id.toString());
            assertThat(MDC.get(ExecutionMdc.OWNER)).isEqualTo("alice");
            assertThat(MDC.get(ExecutionMdc.ATTEMPT)).isEqualTo("2");
            try (ExecutionMdc inner = ExecutionMdc.put("other", "bob", null)) {
                assertThat(MDC.get(ExecutionMdc.EXECUTION_ID)).isEqualTo("other");
                assertThat(MDC.get(ExecutionMdc.ATTEMPT)).as("a null leaves the key out").isNull();
            }
            assertThat(MDC.get(ExecutionMdc.OWNER)).isEqualTo("alice");
            assertThat(MDC.get(ExecutionMdc.ATTEMPT)).isEqualTo("2");
        }
        assertThat(MDC.get(ExecutionMdc.OWNER)).isEqualTo("outer");
        assertThat(MDC.get(ExecutionMdc.EXECUTION_ID)).isNull();
        assertThat(MDC.get(ExecutionMdc.ATTEMPT)).isNull();
    }

    @Test
    void clearRemovesOnlyItsOwnKeys() {
        MDC.put("jobrunr.jobId", "j");
        ExecutionMdc.put("e", "o", 1);
        ExecutionMdc.clear();
        assertThat(MDC.get(ExecutionMdc.EXECUTION_ID)).isNull();
        assertThat(MDC.get(ExecutionMdc.OWNER)).isNull();
        assertThat(MDC.get("jobrunr.jobId")).isEqualTo("j");
    }
}
