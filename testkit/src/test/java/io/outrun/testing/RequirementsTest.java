package io.outrun.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.opentest4j.TestAbortedException;
import org.opentest4j.AssertionFailedError;

/** The policy: a missing part fails under CI=true and skips, with the reason, elsewhere. */
class RequirementsTest {

    @Test
    void aPresentPartPasses() {
        Requirements.require("tests", null);
        assertThat(Requirements.binary("sh")).isExecutable();
    }

    @Test
    void aMissingPartFailsUnderCiAndSkipsElsewhereNamingTheReason() {
        Class<? extends Throwable> expected = Requirements.underCi() ? AssertionFailedError.class : TestAbortedException.class;
        assertThatThrownBy(() -> Requirements.binary("no-such-binary-outrun")).isInstanceOf(expected)
                .hasMessageContaining("no-such-binary-outrun is not installed");
    }
}
