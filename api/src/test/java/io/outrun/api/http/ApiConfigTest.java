package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outrun.core.config.ConfigException;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** A bad API setting fails at construction, naming the option (or saying it has none). */
class ApiConfigTest {

    private static final ApiConfig DEFAULTS = ApiConfig.defaults("127.0.0.1", 0);

    static Stream<Arguments> badSettings() {
        return Stream.of(
                bad("--port", c -> ApiConfig.defaults("127.0.0.1", 70000)),
                bad("--bind", c -> ApiConfig.defaults(" ", 0)),
                bad("--max-timeout-ms", c -> c.withMaxTimeoutMs(999)),
                bad("--max-output-bytes", c -> c.withMaxOutputBytes(10)),
                bad("--max-body-bytes", c -> c.withMaxBodyBytes(10)),
                bad("--max-attempts", c -> c.withMaxAttempts(0)),
                bad("--max-attempts", c -> c.withMaxAttempts(21)),
                bad("--env-allow", c -> c.withEnvAllowlist(List.of("BAD NAME"))),
                bad("--image-allow", c -> c.withImageAllowlist(List.of(" "))),
                bad("(no option)", c -> c.withMaxWaitMs(-1)));
    }

    private static Arguments bad(String option, UnaryOperator<ApiConfig> change) {
        return Arguments.of(option, change);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badSettings")
    void aBadSettingNamesItsOption(String option, UnaryOperator<ApiConfig> change) {
        assertThatThrownBy(() -> change.apply(DEFAULTS)).isInstanceOf(ConfigException.class).hasMessageContaining(option);
    }

    @Test
    void theDefaultsAreValidAndMatchTheirConstants() {
        assertThat(DEFAULTS.maxAttempts()).isEqualTo(ApiConfig.DEFAULT_MAX_ATTEMPTS);
        assertThat(DEFAULTS.envAllowlist()).containsExactly("LANG", "LC_*", "TZ", "TERM", "NO_COLOR", "PAGER", "CI", "DEBUG");
        
    }

    @Test
    void lowerMaximaPullTheDefaultsDown() {
        assertThat(DEFAULTS.withMaxTimeoutMs(5_000).defaultTimeoutMs()).isEqualTo(5_000);
        assertThat(DEFAULTS.withMaxOutputBytes(4096).defaultOutputBytes()).isEqualTo(4096);
    }
}
