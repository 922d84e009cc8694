package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every way a submit body can be wrong, one case per test: each is a 400 {@code invalid_request}
 * whose message names the field. No server, no database ({@code ApiIT} checks the same answers
 * over HTTP).
 */
class SubmissionParserTest {

    private final SubmissionParser parser = new SubmissionParser(ApiConfig.defaults("127.0.0.1", 0));

    static Stream<Arguments> invalidBodies() {
        StringBuilder labels = new StringBuilder("{");
        for (int i = 0; i <= ApiConfig.DEFAULT_MAX_LABELS; i++) {
            labels.append(i == 0 ? "" : ",").append("\"k").append(i).append("\":\"v\"");
        }
        labels.append('}');
        return Stream.of(
                Arguments.of("truncated JSON", "{\"command\": \"echo", "body"),
                Arguments.of("an array", "[1,2]", "body"),
                Arguments.of("empty", "", "body"),
                Arguments.of("no command", "{}", "command"),
                Arguments.of("blank command", "{\"command\": \"  \"}", "command"),
                Arguments.of("command not a string", "{\"command\": 42}", "command"),
                Arguments.of("NUL in command", "{\"command\": \"a\\u0000b\"}", "command"),
                Arguments.of("timeoutMs a string", "{\"command\": \"x\", \"timeoutMs\": \"10\"}", "timeoutMs"),
                Arguments.of("timeoutMs negative", "{\"command\": \"x\", \"timeoutMs\": -5}", "timeoutMs"),
                Arguments.of("timeoutMs fractional", "{\"command\": \"x\", \"timeoutMs\": 1.5}", "timeoutMs"),
                Arguments.of("timeoutMs below -2^64", "{\"command\": \"x\", \"timeoutMs\": -99999999999999999999999}", "timeoutMs"),
                Arguments.of("maxOutputBytes zero", "{\"command\": \"x\", \"maxOutputBytes\": 0}", "maxOutputBytes"),
                Arguments.of("waitMs negative", "{\"command\": \"x\", \"waitMs\": -1}", "waitMs"),
                Arguments.of("unknown field", "{\"command\": \"x\", \"bogus\": 1}", "bogus"),
                Arguments.of("env name not allowed", "{\"command\": \"x\", \"env\": {\"LD_PRELOAD\": \"/x.so\"}}", "env.LD_PRELOAD"),
                Arguments.of("env value not a string", "{\"command\": \"x\", \"env\": {\"LANG\": 1}}", "env.LANG"),
                Arguments.of("env not an object", "{\"command\": \"x\", \"env\": [\"A\"]}", "env"),
                Arguments.of("relative workdir", "{\"command\": \"x\", \"workdir\": \"rel\"}", "workdir"),
                Arguments.of("image with a space", "{\"command\": \"x\", \"image\": \"bad image\"}", "image"),
                Arguments.of("too many labels", "{\"command\": \"x\", \"labels\": " + labels + "}", "labels"),
                Arguments.of("repeated field", "{\"command\": \"x\", \"command\": \"y\"}", "body"),
                Arguments.of("trailing garbage", "{\"command\": \"x\"} trailing", "body"),
                Arguments.of("unpaired surrogate in command", "{\"command\": \"echo \\ud800 x\"}", "command"),
                Arguments.of("unpaired surrogate in a label", "{\"command\": \"x\", \"labels\": {\"a\": \"\\udc00\"}}", "labels.a"),
                Arguments.of("maxAttempts zero", "{\"command\": \"x\", \"maxAttempts\": 0}", "maxAttempts"),
                Arguments.of("maxAttempts a string", "{\"command\": \"x\", \"maxAttempts\": \"1\"}", "maxAttempts"),
                Arguments.of("waitFor unknown", "{\"command\": \"x\", \"waitFor\": \"start\"}", "waitFor"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidBodies")
    void anInvalidBodyIsA400NamingTheField(String name, String body, String field) {
        assertThatThrownBy(() -> parse(body))
                .isInstanceOfSatisfying(ApiError.class, e -> {
                    assertThat(e.httpStatus()).isEqualTo(400);
                    assertThat(e.code()).isEqualTo("invalid_request");
                    assertThat(e.getMessage()).contains(field).doesNotContain("Exception");
                });
    }

    @Test
    void anEnvNameOfTheSandboxWrapperIsRefusedWhateverTheAllowlist() {
        SubmissionParser allowAll = new SubmissionParser(ApiConfig.defaults("127.0.0.1", 0).withEnvAllowlist(List.of("*")));
        assertThat(allowAll.parse("{\"command\": \"x\", \"env\": {\"MINE\": \"1\"}}".getBytes(StandardCharsets.UTF_8), "o", null)
                .submission().env()).containsEntry("MINE", "1");
        assertThatThrownBy(() -> allowAll.parse("{\"command\": \"x\", \"env\": {\"_outrun_s\": \"/x\"}}"
                .getBytes(StandardCharsets.UTF_8), "o", null))
                .isInstanceOfSatisfying(ApiError.class, e -> {
                    assertThat(e.httpStatus()).isEqualTo(400);
                    assertThat(e.getMessage()).contains("env._outrun_s").contains("reserved");
                });
    }

    @Test
    void aProperSurrogatePairIsText() {
        assertThat(parse("{\"command\": \"echo \\ud83d\\ude00\"}").submission().command()).isEqualTo("echo \ud83d\ude00");
    }

    @Test
    void aTimeoutBeyond64BitsIsClampedToTheMaximum() {
        assertThat(parse("{\"command\": \"x\", \"timeoutMs\": 99999999999999999999999}").submission().timeoutMs())
                .isEqualTo(ApiConfig.DEFAULT_MAX_TIMEOUT_MS);
    }

    @Test
    void maxAttemptsAboveTheOperatorsMaximumIsClamped() {
        assertThat(parse("{\"command\": \"x\", \"maxAttempts\": 99}").submission().maxAttempts())
                .isEqualTo(ApiConfig.DEFAULT_MAX_ATTEMPTS);
        assertThat(parse("{\"command\": \"x\", \"maxAttempts\": 1}").submission().maxAttempts()).isEqualTo(1);
    }

    @Test
    void resourcesAreClampedToTheOperatorsMaximaAndAbsentOnesLeftToTheNode() {
        var r = parse("{\"command\": \"x\", \"memoryMb\": 100000, \"cpus\": 0.5, \"pids\": 64, \"tmpfsMb\": 99999999999}")
                .submission().resources();
        assertThat(r).isEqualTo(new io.outrun.core.execution.Resources(ApiConfig.DEFAULT_MAX_MEMORY_MB, 500, 64,
                ApiConfig.DEFAULT_MAX_TMPFS_MB));
        assertThat(parse("{\"command\": \"x\", \"cpus\": 64}").submission().resources())
                .isEqualTo(new io.outrun.core.execution.Resources(null, (int) (ApiConfig.DEFAULT_MAX_CPUS * 1000), null, null));
        assertThat(parse("{\"command\": \"x\"}").submission().resources()).isEqualTo(io.outrun.core.execution.Resources.NONE);
        SubmissionParser strict = new SubmissionParser(ApiConfig.defaults("127.0.0.1", 0)
                .withMaxResources(new io.outrun.core.execution.Resources(256, 1500, 100, 64)));
        assertThat(strict.parse("{\"command\": \"x\", \"memoryMb\": 1024, \"cpus\": 2, \"pids\": 1000, \"tmpfsMb\": 128}"
                .getBytes(StandardCharsets.UTF_8), "o", null).submission().resources())
                .isEqualTo(new io.outrun.core.execution.Resources(256, 1500, 100, 64));
    }

    @Test
    void egressIsRefusedNamingTheFlagUnlessTheOperatorAllowsSomeHost() {
        assertThatThrownBy(() -> parse("{\"command\": \"x\", \"network\": \"egress\"}"))
                .isInstanceOfSatisfying(ApiError.class, e -> {
                    assertThat(e.code()).isEqualTo("egress_not_allowed");
                    assertThat(e.guidance()).contains("--egress-allow");
                });
        SubmissionParser allowing = new SubmissionParser(ApiConfig.defaults("127.0.0.1", 0)
                .withEgress(io.outrun.model.egress.EgressPolicy.parse(List.of("pypi.org"))));
        assertThat(allowing.parse("{\"command\": \"x\", \"network\": \"egress\"}".getBytes(StandardCharsets.UTF_8), "o", null)
                .submission().resources().egress()).isTrue();
        assertThat(parse("{\"command\": \"x\", \"network\": \"none\"}").submission().resources().isEmpty()).isTrue();
        assertThatThrownBy(() -> allowing.parse("{\"command\": \"x\", \"network\": \"bridge\"}"
                .getBytes(StandardCharsets.UTF_8), "o", null))
                .isInstanceOfSatisfying(ApiError.class, e -> assertThat(e.getMessage()).startsWith("network: must be \"egress\""));
    }

    @Test
    void resourcesThatMakeNoSenseAreRefusedNamingTheField() {
        for (String[] c : new String[][] {
                {"\"memoryMb\": 8", "memoryMb: must be at least 16"},
                {"\"memoryMb\": \"1g\"", "memoryMb: must be an integer"},
                {"\"cpus\": 0", "cpus: must be at least 0.01"},
                {"\"cpus\": \"two\"", "cpus: must be a number"},
                {"\"pids\": 1", "pids: must be at least 8"},
                {"\"tmpfsMb\": 0", "tmpfsMb: must be at least 1"},
                {"\"tmpfsMb\": 1.5", "tmpfsMb: must be an integer"}}) {
            assertThatThrownBy(() -> parse("{\"command\": \"x\", " + c[0] + "}"))
                    .isInstanceOfSatisfying(ApiError.class, e -> {
                        assertThat(e.httpStatus()).isEqualTo(400);
                        assertThat(e.getMessage()).startsWith(c[1]);
                    });
        }
    }

    @Test
    void unspecifiedLimitsTakeTheServersDefaults() {
        var parsed = parse("{\"command\": \"x\"}").submission();
        assertThat(parsed.timeoutMs()).isEqualTo(ApiConfig.DEFAULT_TIMEOUT_MS);
        assertThat(parsed.maxOutputBytes()).isEqualTo(ApiConfig.DEFAULT_OUTPUT_BYTES);
        assertThat(parsed.maxAttempts()).isEqualTo(ApiConfig.DEFAULT_MAX_ATTEMPTS);
        assertThat(parsed.owner()).isEqualTo("alice");
    }

    private SubmissionParser.Parsed parse(String body) {
        return parser.parse(body.getBytes(StandardCharsets.UTF_8), "alice", null);
    }
}
