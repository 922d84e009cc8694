package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.model.output.Captured;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The guidance fixes of issue 10: each case an agent met that looped or misled it. */
class GuidanceTest {

    private final ApiConfig config = ApiConfig.defaults("127.0.0.1", 0);
    private final Guidance guidance = new Guidance(config);

    private static Execution execution(ExecutionStatus status, int attempt, int maxAttempts, boolean cancelRequested,
                                       int maxOutputBytes, Integer exitCode, String errorCode, Captured out, Captured err) {
        return base().maxOutputBytes(maxOutputBytes).status(status).attempt(attempt).maxAttempts(maxAttempts)
                .leaseEpoch(attempt).outputEpoch(attempt).cancelRequested(cancelRequested)
                .startedAt(attempt > 0 ? Instant.now() : null).finishedAt(status.isTerminal() ? Instant.now() : null)
                .exitCode(exitCode).errorCode(errorCode).errorMessage(errorCode == null ? null : "message")
                .stdout(out).stderr(err).build();
    }

    /** An execution of alice's, as a submit with the defaults stores it. */
    private static Execution.Builder base() {
        return Execution.builder().id(UUID.randomUUID()).owner("alice").command("cmd").env(Map.of()).labels(Map.of())
                .timeoutMs(600_000L).bookSeq(1).jobId(UUID.randomUUID()).createdAt(Instant.now());
    }

    private static Captured text(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return new Captured(b, new byte[0], b.length);
    }

    /** What a capture keeps of 110,000 bytes of lines under a bound of {@code keep}: head and tail halves. */
    private static Captured flood(int keep) {
        byte[] all = "0123456789\n".repeat(10_000).getBytes(StandardCharsets.UTF_8);
        int head = keep / 2;
        int tail = keep - head;
        return Captured.ofRaw(java.util.Arrays.copyOf(all, head), java.util.Arrays.copyOfRange(all, all.length - tail,
                all.length), all.length);
    }

    @Test
    void truncatedAtTheServersMaximumDoesNotAskForALargerMaximum() {
        int max = config.maxOutputBytes();
        String atMax = guidance.forExecution(execution(ExecutionStatus.SUCCEEDED, 1, 3, false, max, 0, null,
                flood(1000), Captured.EMPTY));
        assertThat(atMax).contains("truncated").contains("already kept this server's maximum")
                .doesNotContain("larger maxOutputBytes");
        String below = guidance.forExecution(execution(ExecutionStatus.SUCCEEDED, 1, 3, false, 1000, 0, null,
                flood(1000), Captured.EMPTY));
        assertThat(below).contains("larger maxOutputBytes (up to " + max + ")");
    }

    @Test
    void pointsToArtifactsAndWorkspacesNotToFilesThatVanishWithTheSandbox() {
        String truncated = guidance.forExecution(execution(ExecutionStatus.SUCCEEDED, 1, 3, false, 1000, 0, null,
                flood(1000), Captured.EMPTY));
        String timedOut = guidance.forExecution(execution(ExecutionStatus.TIMED_OUT, 1, 3, false, 1000, null, "timed_out",
                text("begin\n"), Captured.EMPTY));
        for (String text : new String[] {truncated, timedOut}) {
            assertThat(text).doesNotContain("to a file").doesNotContain("to files").contains("removed when it ends")
                    .contains("artifacts");
        }
        assertThat(truncated).contains("/artifacts/stdout");
        assertThat(timedOut).contains("workspace");
    }

    @Test
    void aCancelRequestedAnswerDoesNotOfferTheCancelAgain() {
        String running = guidance.forExecution(execution(ExecutionStatus.RUNNING, 1, 3, true, 1000, null, null,
                Captured.EMPTY, Captured.EMPTY));
        String queued = guidance.forExecution(execution(ExecutionStatus.QUEUED, 0, 3, true, 1000, null, null,
                Captured.EMPTY, Captured.EMPTY));
        assertThat(running).startsWith("Cancel requested").doesNotContain("/cancel");
        assertThat(queued).startsWith("Cancel requested").doesNotContain("/cancel");
        assertThat(guidance.forExecution(execution(ExecutionStatus.RUNNING, 1, 3, false, 1000, null, null,
                Captured.EMPTY, Captured.EMPTY))).contains("/cancel stops it");
    }

    @Test
    void queuedPromisesNoTimeItCannotKeep() {
        String queued = guidance.forExecution(execution(ExecutionStatus.QUEUED, 0, 3, false, 1000, null, null,
                Captured.EMPTY, Captured.EMPTY));
        assertThat(queued).doesNotContain("within seconds").contains("free slot");
    }

    @Test
    void aFailureWithAnEmptyStderrDoesNotSendTheReaderToStderr() {
        String outOnly = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 3, "command_failed",
                text("why\n"), Captured.EMPTY));
        assertThat(outOnly).contains("exited with code 3").contains("nothing on stderr; read stdout").doesNotContain("Read stderr");
        String silent = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 3, "command_failed",
                Captured.EMPTY, Captured.EMPTY));
        assertThat(silent).contains("printed nothing at all").doesNotContain("stderr");
        String both = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 3, "command_failed",
                text("a\n"), text("b\n")));
        assertThat(both).contains("Read stderr (and stdout)");
    }

    @Test
    void aMemoryKillHasItsOwnCodeAndAPlainSigkillDoesNotBlameMemory() {
        String oom = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 137, "out_of_memory",
                Captured.EMPTY, Captured.EMPTY));
        assertThat(oom).contains("killed the command for memory").contains("limit");
        String killed = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 137, "command_failed",
                Captured.EMPTY, Captured.EMPTY));
        assertThat(killed).contains("SIGKILL").contains("not by the memory limit");
    }

    @Test
    void anEngineFaultDoesNotSendTheCallerToFixTheCommand() {
        String lost = guidance.forExecution(execution(ExecutionStatus.FAILED, 3, 3, false, 1000, 143, "sandbox_lost",
                Captured.EMPTY, Captured.EMPTY));
        assertThat(lost).contains("ended from outside").contains("did not fail by itself").doesNotContain("fix the command");
    }

    @Test
    void aRequeuedExecutionSaysItsAttemptWasLost() {
        String requeued = guidance.forExecution(execution(ExecutionStatus.QUEUED, 1, 3, false, 1000, null, null,
                Captured.EMPTY, Captured.EMPTY));
        assertThat(requeued).contains("Attempt 1 of 3 lost its worker").contains("as attempt 2").contains("maxAttempts 1");
        String rerun = guidance.forExecution(execution(ExecutionStatus.RUNNING, 2, 3, false, 1000, null, null,
                Captured.EMPTY, Captured.EMPTY));
        assertThat(rerun).contains("attempt 2 of 3").contains("Earlier attempts lost their worker");
        String once = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 1, false, 1000, null, "lease_expired",
                Captured.EMPTY, Captured.EMPTY));
        assertThat(once).contains("maxAttempts 1").contains("not run again");
    }

    @Test
    void exit127SaysTheToolIsNotInTheImage() {
        String g = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 127, "command_failed",
                Captured.EMPTY, text("bash: line 1: make: command not found\n")));
        assertThat(g).contains("127 means a command was not found").contains("default sandbox image, which has bash, coreutils, git, make").contains("with image naming");
        String g126 = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 126, "command_failed",
                Captured.EMPTY, text("bash: ./run.sh: Permission denied\n")));
        assertThat(g126).contains("could not be executed").doesNotContain("127");
    }

    @Test
    void aNetworkFailureSaysTheRunHasNoNetwork() {
        String g = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 6, "command_failed",
                Captured.EMPTY, text("curl: (6) Could not resolve host: example.com\n")));
        assertThat(g).contains("network failure").contains("no network unless the operator allows it");
        String plain = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 1, "command_failed",
                Captured.EMPTY, text("assertion failed\n")));
        assertThat(plain).doesNotContain("network");
        String refused = guidance.forExecution(execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 56, "command_failed",
                Captured.EMPTY, text("outrun egress: pypi.org:443 refused: not on this node's list. The operator allows"
                        + " hosts with --egress-allow HOST[:PORT],…; ask for this one if the run needs it.\n"
                        + "curl: (56) CONNECT tunnel failed, response 403\n")));
        assertThat(refused).contains("egress proxy refused a host").contains("--egress-allow").doesNotContain("network failure");
    }

    @Test
    void aCancelFromTheDashboardDoesNotBlameTheOwner() {
        Execution byAdmin = base().maxOutputBytes(1000).status(ExecutionStatus.CANCELLED).maxAttempts(3)
                .cancelRequested(true).finishedAt(Instant.now()).errorCode("cancelled")
                .errorMessage(io.outrun.core.redrive.RedriveSweep.ADMIN_CANCEL).stdout(Captured.EMPTY).stderr(Captured.EMPTY)
                .build();
        assertThat(guidance.forExecution(byAdmin)).contains("by an operator from the dashboard").contains("not by you");
        String byOwner = guidance.forExecution(execution(ExecutionStatus.CANCELLED, 1, 3, true, 1000, null, "cancelled",
                Captured.EMPTY, Captured.EMPTY));
        assertThat(byOwner).contains("Cancelled by its owner");
    }

    @Test
    void anArtifactNotStoredSaysWhyInItsOwnTerms() {
        assertThat(FileRoutes.notStoredGuidance("not_regular")).contains("links are never followed").doesNotContain("smaller");
        assertThat(FileRoutes.notStoredGuidance("missing")).contains("Nothing in the workdir matched");
        assertThat(FileRoutes.notStoredGuidance("over_limit")).contains("smaller");
    }

    @Test
    void eachChannelNamesItsOwnNextSteps() {
        Execution running = execution(ExecutionStatus.RUNNING, 1, 3, false, 1000, null, null, Captured.EMPTY, Captured.EMPTY);
        String http = guidance.forExecution(running, Channel.HTTP);
        String mcp = guidance.forExecution(running, Channel.MCP);
        String cli = guidance.forExecution(running, Channel.CLI);
        assertThat(http).contains("GET /v1/executions/" + running.id() + "/output?cursor=").contains("/cancel");
        assertThat(mcp).contains("read_output with executionId " + running.id()).contains("cancel_execution")
                .doesNotContain("/v1/").doesNotContain("GET ");
        assertThat(cli).contains("outrun logs " + running.id()).contains("outrun cancel " + running.id())
                .doesNotContain("/v1/");
        Execution timedOut = execution(ExecutionStatus.TIMED_OUT, 1, 3, false, 1000, null, "timed_out", text("x\n"),
                Captured.EMPTY);
        assertThat(guidance.forExecution(timedOut, Channel.MCP)).contains("list_artifacts with executionId")
                .contains("larger timeoutMs").doesNotContain("/v1/");
        assertThat(guidance.forExecution(timedOut, Channel.CLI)).contains("larger --timeout-ms").contains("outrun get ");
        assertThat(ApiError.notFound("x").guidance(Channel.MCP)).contains("list_executions").doesNotContain("/v1/");
        assertThat(ApiError.notFound("x").guidance(Channel.HTTP)).contains("GET /v1/executions");
    }

    @Test
    void aRunWaitingForItsWorkspaceNamesTheRunThatHoldsIt() {
        Execution queued = execution(ExecutionStatus.QUEUED, 0, 3, false, 1000, null, null, Captured.EMPTY, Captured.EMPTY);
        UUID holder = UUID.randomUUID();
        String text = guidance.forExecution(queued, Channel.HTTP, new io.outrun.core.store.SubmissionStore.WorkspaceHeld("site", holder));
        assertThat(text).contains("waits for its workspace site").contains(holder.toString()).contains("never overlap")
                .doesNotContain("fewest running").doesNotContain("running cap");
    }

    @Test
    void aProcessKilledForMemoryIsNamedEvenWhenTheCommandWentOn() {
        Execution ok = base().maxOutputBytes(1000).status(ExecutionStatus.SUCCEEDED).attempt(1).maxAttempts(3)
                .leaseEpoch(1).outputEpoch(1).startedAt(Instant.now()).finishedAt(Instant.now()).exitCode(0)
                .errorMessage(io.outrun.core.store.Outcome.MEMORY_KILL_NOTE + " (512 MiB); the command went on without it.")
                .stdout(Captured.EMPTY).stderr(Captured.EMPTY).build();
        assertThat(guidance.forExecution(ok)).contains("killed by the kernel for using more memory").contains("512 MiB")
                .contains("use less memory");
        Execution failed = execution(ExecutionStatus.FAILED, 1, 3, false, 1000, 3, "command_failed", Captured.EMPTY,
                Captured.EMPTY);
        assertThat(guidance.forExecution(failed)).doesNotContain("memory");
    }
}
