package io.outrun.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.client.OutrunClient;
import io.outrun.api.http.ApiHarness;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.SubmitRequest;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The `outrun` client commands against a real API and worker, captured with setOut/setErr. */
class CliIT {

    private static ApiHarness api;
    private static WorkerNode worker;

    @BeforeAll
    static void start() {
        api = ApiHarness.start();
        // In bubblewrap, as outrun dev runs them (a terminal needs it on host processes).
        worker = WorkerNode.start(api.core(), WorkerConfig.defaults("w-cli-it"), new ProcessSandbox().isolated(java.util.List.of()),
                Limits.DEFAULTS);
    }

    @AfterAll
    static void stop() {
        worker.close();
        api.close();
    }

    record Result(int code, String out, String err) {
    }

    static Result outrun(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Outrun.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int code = cl.execute(args);
        return new Result(code, out.toString(), err.toString());
    }

    private static Result client(String command, String... rest) {
        String[] args = new String[rest.length + 5];
        args[0] = command;
        args[1] = "--api";
        args[2] = api.base().toString();
        args[3] = "--token";
        args[4] = api.aliceToken;
        System.arraycopy(rest, 0, args, 5, rest.length);
        return outrun(args);
    }

    @Test
    void runFollowStreamsOutputAndExitsWithTheCommandsCode() {
        Result r = client("run", "--follow", "--", "for i in 1 2 3; do echo step $i; sleep 0.3; done; echo bad >&2; exit 4");
        assertThat(r.code()).isEqualTo(4);
        assertThat(r.out()).isEqualTo("step 1\nstep 2\nstep 3\n");
        assertThat(r.err()).startsWith("bad\n").contains("failed");
        assertThat(r.err()).as("plain when not on a terminal").doesNotContain("\033[");
    }

    @Test
    void sendAnswersAPromptLineByLineAndAttachForwardsThisTerminalsInput() throws Exception {
        String id = client("run", "--stdin", "--", "read a; echo got:$a; read b; echo got:$b").out().strip();
        Result one = client("send", "--wait-ms", "20000", id, "one");
        assertThat(one.code()).as(one.err()).isZero();
        assertThat(one.out()).isEqualTo("got:one\n");
        Result two = client("send", "--eof", "--wait-ms", "20000", id, "two", "words");
        assertThat(two.out()).isEqualTo("got:two words\n");
        assertThat(two.err()).contains("closed after 14 bytes");
        WorkerApiWait.until(api.alice(), id, ExecutionView::finished);
        Result late = client("send", id, "x");
        assertThat(late.code()).isEqualTo(1);
        assertThat(late.err()).contains("execution_finished").contains("outrun status " + id).doesNotContain("/v1/");
        Result plain = client("send", client("run", "--", "true").out().strip(), "x");
        assertThat(plain.err()).contains("stdin_not_open").contains("--stdin true");

        String tty = client("run", "--tty", "--", "test -t 0 && echo is-a-tty; read a; echo got:$a").out().strip();
        java.io.InputStream keyboard = System.in;
        System.setIn(new java.io.ByteArrayInputStream("typed\n".getBytes(StandardCharsets.UTF_8)));
        try {
            Result attached = client("attach", tty);
            assertThat(attached.code()).as(attached.err()).isZero();
            assertThat(attached.out().replace("\r", "")).contains("is-a-tty\n").contains("got:typed\n");
        } finally {
            System.setIn(keyboard);
        }
    }

    @Test
    void runWaitPrintsTheOutputAndJsonIsParseable() {
        Result r = client("run", "--wait", "--", "echo", "hello", "world");
        assertThat(r.code()).isZero();
        assertThat(r.out()).isEqualTo("hello world\n");
        Result json = client("run", "--wait", "--json", "--", "echo hi");
        assertThat(json.out()).contains("\"status\":\"succeeded\"").contains("\"text\":\"hi\\n\"");
        Result timeout = client("run", "--wait", "--timeout-ms", "500", "--", "sleep 20");
        assertThat(timeout.code()).isEqualTo(124);
    }

    @Test
    void runWithoutWaitPrintsTheIdThenStatusLogsCancelAndLsUseIt() {
        Result run = client("run", "--", "echo first; sleep 60");
        assertThat(run.code()).isZero();
        String id = run.out().strip();
        assertThat(id).matches("[0-9a-f-]{36}");
        assertThat(run.err()).contains("outrun logs -f " + id);
        WorkerApiWait.until(api.alice(), id, v -> v.stdout().totalBytes() > 0);
        Result status = client("status", id);
        assertThat(status.out()).contains("running").contains("echo first");
        Result logs = client("logs", id);
        assertThat(logs.out()).isEqualTo("first\n");
        Result ls = client("ls", "--status", "running");
        assertThat(ls.out()).contains(id);
        Result cancel = client("cancel", id);
        assertThat(cancel.code()).isZero();
        assertThat(cancel.out()).contains("cancel requested");
        Result follow = client("logs", "--follow", id);
        assertThat(follow.code()).isEqualTo(130);
        assertThat(follow.out()).isEqualTo("first\n");
    }

    @Test
    void runTakesAScriptOverTheArgvLimitFromAFileAndLogsReadsOnFromItsCursor(@TempDir Path dir) throws Exception {
        Path script = dir.resolve("big.sh");
        // 200 KB: more than one argv string may hold (128 KiB), so `run -- "$(cat big.sh)"` cannot send it.
        Files.writeString(script, "# " + "x".repeat(200_000) + "\necho from-file; sleep 2; echo later; sleep 60\n");
        Result run = client("run", "--max-attempts", "1", "--script", script.toString());
        assertThat(run.code()).as(run.err()).isZero();
        String id = run.out().strip();
        WorkerApiWait.until(api.alice(), id, v -> v.stdout().totalBytes() > 0);
        assertThat(api.alice().get(id).maxAttempts()).isEqualTo(1);
        Result status = client("status", id);
        assertThat(status.out()).as("next steps as CLI commands").contains("outrun logs -f " + id).doesNotContain("GET /v1");
        Result first = client("logs", id);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("cursor (\\S+)").matcher(first.err());
        assertThat(m.find()).as(first.err()).isTrue();
        WorkerApiWait.until(api.alice(), id, v -> v.stdout().totalBytes() >= "from-file\nlater\n".length());
        Result next = client("logs", id, "--cursor", m.group(1));
        assertThat(first.out() + next.out()).as("nothing repeated, nothing skipped").isEqualTo("from-file\nlater\n");
        client("cancel", id);
        assertThat(client("run").err()).contains("--file");

        Result early = client("run", "--wait-for-output", "--", "echo ready; sleep 60");
        assertThat(early.code()).as(early.err()).isZero();
        assertThat(early.out()).isEqualTo("ready\n");
        java.util.regex.Matcher ids = java.util.regex.Pattern.compile("running as (\\S+)\\. Read on: outrun logs \\S+ --cursor (\\S+)")
                .matcher(early.err());
        assertThat(ids.find()).as(early.err()).isTrue();
        assertThat(client("logs", ids.group(1), "--cursor", ids.group(2)).out()).as("nothing new after the cursor").isEmpty();
        client("cancel", ids.group(1));
    }

    @Test
    void errorsShowCodeMessageAndGuidance() {
        Result missing = client("status", "00000000-0000-0000-0000-000000000000");
        assertThat(missing.code()).isEqualTo(1);
        assertThat(missing.err()).contains("execution_not_found").contains("outrun ls lists your executions").doesNotContain("/v1/");
        Result badToken = outrun("ls", "--api", api.base().toString(), "--token", "nope");
        assertThat(badToken.code()).isEqualTo(1);
        assertThat(badToken.err()).contains("identity_required");
        Result unreachable = outrun("ls", "--api", "http://127.0.0.1:1", "--token", "x");
        assertThat(unreachable.code()).isEqualTo(1);
        assertThat(unreachable.err()).contains("cannot reach");
    }

    @Test
    void tokenCreatePrintsTheTokenLastAndRevokeDisablesIt() {
        var db = TestDatabase.migrated(DatabaseConfig::new);
        String[] dbArgs = {"--db-url", db.url(), "--db-user", db.user(), "--db-password", db.password()};
        Result created = outrun(concat(new String[] {"token", "create", "--owner", "erin"}, dbArgs));
        assertThat(created.code()).as(created.err()).isZero();
        List<String> lines = created.out().lines().toList();
        String token = lines.get(lines.size() - 1);
        assertThat(token).startsWith("otk_").hasSizeGreaterThanOrEqualTo(47);
        Result revoked = outrun(concat(new String[] {"token", "revoke", token}, dbArgs));
        assertThat(revoked.code()).isZero();
        Result again = outrun(concat(new String[] {"token", "revoke", token}, dbArgs));
        assertThat(again.code()).isEqualTo(1);
        Result badOwner = outrun(concat(new String[] {"token", "create", "--owner", "bad owner"}, dbArgs));
        assertThat(badOwner.code()).isEqualTo(2);
    }

    /** Issue 31: `outrun keys rotate` needs the secrets key; ls shows the current key and the retired one's overlap. */
    @Test
    void keysRotateKeepsTheRetiredKeyPublishedAndLsListsBoth(@TempDir Path dir) throws Exception {
        var db = TestDatabase.migrated(DatabaseConfig::new);
        String[] dbArgs = {"--db-url", db.url(), "--db-user", db.user(), "--db-password", db.password()};
        if (System.getenv(SecretsKeyOptions.ENV) == null) {
            Result noKey = outrun(concat(new String[] {"keys", "rotate"}, dbArgs));
            assertThat(noKey.code()).isEqualTo(2);
            assertThat(noKey.err().strip()).doesNotContain("\n").contains("OUTRUN_SECRETS_KEY").contains("--secrets-key-file");
        }
        Path keyFile = dir.resolve("secrets.key");
        Files.writeString(keyFile, io.outrun.core.secrets.SecretsKey.generate());
        String[] rotate = concat(new String[] {"keys", "rotate", "--secrets-key-file", keyFile.toString()}, dbArgs);
        Result first = outrun(rotate);
        assertThat(first.code()).as(first.err()).isZero();
        java.util.regex.Matcher kid = java.util.regex.Pattern.compile("new signing key (\\S+)").matcher(first.out());
        assertThat(kid.find()).as(first.out()).isTrue();
        assertThat(first.out()).contains("no key before it");
        Result second = outrun(rotate);
        assertThat(second.code()).as(second.err()).isZero();
        assertThat(second.out()).contains("retired " + kid.group(1)).containsPattern("until 20\\d\\d-\\d\\d-\\d\\dT");
        Result ls = outrun(concat(new String[] {"keys", "ls"}, dbArgs));
        assertThat(ls.code()).as(ls.err()).isZero();
        List<String> rows = ls.out().lines().toList();
        assertThat(rows).hasSize(3);
        assertThat(rows.get(0)).contains("KID").contains("PUBLISHED UNTIL");
        assertThat(rows.get(1)).endsWith("current").doesNotContain(kid.group(1));
        assertThat(rows.get(2)).startsWith(kid.group(1)).endsWith("published");
        Path otherKey = dir.resolve("other.key");
        Files.writeString(otherKey, io.outrun.core.secrets.SecretsKey.generate());
        Result wrongKey = outrun(concat(new String[] {"keys", "rotate", "--secrets-key-file", otherKey.toString()}, dbArgs));
        assertThat(wrongKey.code()).isEqualTo(2);
        assertThat(wrongKey.err()).contains("sealed under another secrets key");
        assertThat(outrun(concat(new String[] {"keys", "ls"}, dbArgs)).out().lines()).hasSize(3);
    }

    /**
     * Issue 31, the CLI inside a run: with only the run's env (OUTRUN_API, OUTRUN_API_TOKEN,
     * OUTRUN_EXECUTION_ID) `outrun progress` reports and `outrun run` submits a child; `outrun
     * status` shows both. The run token is issued here as its worker would.
     */
    @Test
    void insideARunTheCliReportsProgressAndSubmitsChildren() throws Exception {
        String id = client("run", "--", "sleep 60").out().strip();
        WorkerApiWait.until(api.alice(), id, v -> v.status().equals("running"));
        // As if submitted with an identity for svc.example (this test's worker cannot sign, so it
        // would fail such a run): its child may then ask for the same audience, no other.
        try (var c = api.core().pool().getConnection(); var ps = c.prepareStatement(
                "UPDATE executions SET identity_audience = 'https://svc.example' WHERE id = ?::uuid")) {
            ps.setString(1, id);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
        var keys = new io.outrun.core.identity.SigningKeys(api.core().pool(),
                io.outrun.core.secrets.SecretsKey.fromBase64(io.outrun.core.secrets.SecretsKey.generate(), "test"));
        var execution = api.core().submissions().find(java.util.UUID.fromString(id), io.outrun.core.store.OutputStore.Read.NONE)
                .orElseThrow();
        String runToken = new io.outrun.core.identity.TokenIssuer(keys, api.base().toString())
                .issue(execution, java.time.Instant.now()).apiToken();
        java.util.Map<String, String> env = java.util.Map.of("OUTRUN_API", api.base().toString(), "OUTRUN_API_TOKEN", runToken,
                "OUTRUN_EXECUTION_ID", id);

        Process progress = inRun(env, "progress", "40", "2 of 5 shards");
        assertThat(progress.waitFor()).as(output(progress)).isZero();
        ExecutionView polled = api.alice().get(id);
        assertThat(polled.progress().percent()).isEqualTo(40);
        assertThat(polled.progress().message()).isEqualTo("2 of 5 shards");
        Result status = client("status", id);
        assertThat(status.out()).containsPattern("progress +40% 2 of 5 shards \\((just now|\\d+ s ago)\\)");

        Process child = inRun(env, "run", "--identity=https://svc.example", "--no-cancel-with-parent", "--", "echo child");
        String childOut = output(child);
        assertThat(child.waitFor()).as(childOut).isZero();
        String childId = childOut.lines().map(String::strip).filter(l -> l.matches("[0-9a-f-]{36}")).findFirst().orElseThrow();
        ExecutionView c = api.alice().get(childId);
        assertThat(c.parentId()).isEqualTo(id);
        assertThat(c.cancelWithParent()).isFalse();
        assertThat(c.identity().audience()).isEqualTo("https://svc.example");
        Result childStatus = client("status", childId);
        assertThat(childStatus.out()).containsPattern("parent +" + id + " +\\(outlives it\\)")
                .contains("OUTRUN_ID_TOKEN for https://svc.example");

        // The run's token in --token: a message alone, and an owner's token is refused.
        Result message = outrun("progress", "--api", api.base().toString(), "--token", runToken, "--id", id, "-", "linking");
        assertThat(message.code()).as(message.err()).isZero();
        assertThat(api.alice().get(id).progress().message()).isEqualTo("linking");
        Result owner = client("progress", "--id", id, "50");
        assertThat(owner.code()).isEqualTo(1);
        assertThat(owner.err()).contains("run_token_required");
        Result bad = client("progress", "--id", id, "150");
        assertThat(bad.code()).isEqualTo(2);
        client("cancel", id);
    }

    /** {@code outrun ARGS} as a separate process with exactly the run's env (no OUTRUN_TOKEN, no dev token). */
    private static Process inRun(java.util.Map<String, String> env, String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", io.outrun.worker.testing.WorkerProcess.jar().toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).directory(Files.createTempDirectory("in-run").toFile());
        pb.environment().remove("OUTRUN_TOKEN");
        pb.environment().remove("OUTRUN_API");
        pb.environment().putAll(env);
        return pb.start();
    }

    private static String output(Process p) throws java.io.IOException {
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }

    @Test
    void devStartsServesASubmitAndKeepsDataAcrossRestarts(@TempDir Path dir) throws Exception {
        String[] args = {"dev", "--data-dir", dir.toString(), "--port", "0", "--dashboard-port", "0", "--sandbox", "process"};
        String id;
        String token;
        StringWriter out = new StringWriter();
        try (DevCommand.Stack stack = devCommand(args).start(new PrintWriter(out), new PrintWriter(new StringWriter()))) {
            token = Files.readString(dir.resolve("dev-token")).strip();
            assertThat(token).isEqualTo(stack.token);
            assertThat(out.toString()).contains("curl").contains("outrun.jar run").contains("dev-token");
            OutrunClient client = new OutrunClient(URI.create("http://127.0.0.1:" + stack.api.port()), token);
            ExecutionView v = client.submit(SubmitRequest.of("echo hello from dev").withWaitMs(20_000L));
            assertThat(v.status()).isEqualTo("succeeded");
            assertThat(v.stdout().text()).isEqualTo("hello from dev\n");
            id = v.executionId();
            assertOnlyThePasswordOpensTheDatabase(stack, dir);
            assertThat(out.toString()).contains("password in").contains("db-password").doesNotContain("no password");
        }
        try (DevCommand.Stack stack = devCommand(args).start(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()))) {
            assertOnlyThePasswordOpensTheDatabase(stack, dir);
            assertThat(stack.token).as("the dev token is reused").isEqualTo(token);
            OutrunClient client = new OutrunClient(URI.create("http://127.0.0.1:" + stack.api.port()), token);
            assertThat(client.get(id).stdout().text()).isEqualTo("hello from dev\n");
        }
    }

    /**
     * Issue 25 #11: without a usable Docker sandbox, `--sandbox docker` fails before PostgreSQL is
     * started, and `auto` says in its banner that it fell back to host processes, and why.
     */
    @Test
    void devChecksTheSandboxFirstAndItsBannerSaysWhenItFellBack(@TempDir Path dir) throws Exception {
        String noEngine = "unix://" + dir.resolve("no-docker.sock");
        Path refused = dir.resolve("refused");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> devCommand("dev", "--data-dir", refused.toString(), "--port",
                "0", "--dashboard-port", "0", "--sandbox", "docker", "--docker-host", noEngine)
                .start(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter())))
                .isInstanceOf(io.outrun.sandbox.SandboxUnavailableException.class);
        assertThat(refused.resolve("postgres")).as("PostgreSQL never started for a sandbox that cannot run").doesNotExist();
        StringWriter out = new StringWriter();
        try (DevCommand.Stack stack = devCommand("dev", "--data-dir", dir.resolve("auto").toString(), "--port", "0",
                "--dashboard-port", "0", "--sandbox", "auto", "--docker-host", noEngine)
                .start(new PrintWriter(out), new PrintWriter(new StringWriter()))) {
            assertThat(out.toString()).contains("sandbox process").contains("HOST PROCESSES, NO ISOLATION")
                    .contains("sandbox/image/build.sh").contains("--sandbox docker");
        }
    }

    /** A local user without the dev's password cannot reach its database, on loopback or the socket. */
    private static void assertOnlyThePasswordOpensTheDatabase(DevCommand.Stack stack, Path dir) throws Exception {
        Path file = dir.resolve(DevCommand.DB_PASSWORD_FILE);
        assertThat(Files.getPosixFilePermissions(file)).containsExactlyInAnyOrder(
                java.nio.file.attribute.PosixFilePermission.OWNER_READ, java.nio.file.attribute.PosixFilePermission.OWNER_WRITE);
        String password = Files.readString(file).strip();
        String url = stack.postgres.getJdbcUrl("postgres", "postgres");
        for (String guess : new String[] {null, "", "postgres", password + "x"}) {
            java.util.Properties props = new java.util.Properties();
            props.setProperty("user", "postgres");
            if (guess != null) {
                props.setProperty("password", guess);
            }
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> java.sql.DriverManager.getConnection(url, props).close())
                    .as("password " + guess).isInstanceOf(java.sql.SQLException.class);
        }
        java.util.Properties props = new java.util.Properties();
        props.setProperty("user", "postgres");
        props.setProperty("password", password);
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(url, props)) {
            assertThat(c.isValid(5)).isTrue();
        }
        String hba = Files.readString(dir.resolve("postgres").resolve("pg_hba.conf"));
        assertThat(hba).doesNotContain("trust").contains("scram-sha-256");
    }

    private static DevCommand devCommand(String... args) {
        CommandLine cl = Outrun.commandLine();
        CommandLine.ParseResult parsed = cl.parseArgs(args);
        return (DevCommand) parsed.subcommand().commandSpec().userObject();
    }

    private static String[] concat(String[] a, String[] b) {
        String[] all = new String[a.length + b.length];
        System.arraycopy(a, 0, all, 0, a.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    /** Polls an execution until a condition holds, with a deadline. */
    static final class WorkerApiWait {
        static void until(OutrunClient client, String id, java.util.function.Predicate<ExecutionView> condition) {
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (!condition.test(client.get(id, 1000))) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("timed out waiting on " + id);
                }
            }
        }
    }
}
