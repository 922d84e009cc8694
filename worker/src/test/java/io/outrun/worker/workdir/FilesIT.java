package io.outrun.worker.workdir;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.docker.DockerSandbox;
import io.outrun.sandbox.docker.DockerSandboxConfig;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Files in, artifacts out, the full output kept and workspaces, end to end: two API nodes (each its
 * own pool) on one PostgreSQL, a worker with the Docker sandbox. Submissions go to node A,
 * downloads come from node B.
 */
class FilesIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static Core coreA;
    private static Core coreB;
    private static ApiNode nodeA;
    private static ApiNode nodeB;
    private static WorkerNode worker;
    private static String alice;
    private static String bob;
    private static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        Requirements.docker();
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        coreA = Core.open(db, "files-a");
        coreB = Core.open(db, "files-b");
        nodeA = ApiNode.start(coreA, ApiConfig.defaults("127.0.0.1", 0), "a");
        nodeB = ApiNode.start(coreB, ApiConfig.defaults("127.0.0.1", 0), "b");
        TokenStore tokens = new TokenStore(coreA.pool());
        alice = tokens.create("alice").token();
        bob = tokens.create("bob").token();
        worker = WorkerNode.start(coreA, WorkerConfig.defaults("w-files"), new DockerSandbox(DockerSandboxConfig.defaults("w-files")),
                Limits.DEFAULTS);
    }

    @AfterAll
    static void stop() {
        if (worker != null) {
            worker.close();
        }
        for (AutoCloseable c : new AutoCloseable[] {nodeA, nodeB, coreA, coreB}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception ignored) {
                // best effort
            }
        }
    }

    @Test
    void inputFilesInAndArtifactsOutByteExactFromAnotherNode() throws Exception {
        byte[] binary = new byte[3 * 1024 * 1024 + 17];
        new Random(11).nextBytes(binary);
        ObjectNode body = submission("set -e; cat notes/hello.txt; ./tool.sh; mkdir -p out; cp data.bin out/copy.bin;"
                + " printf 'report' > report.txt; ln -s /etc/passwd link; mkfifo fifo");
        ArrayNode files = body.putArray("files");
        files.addObject().put("path", "notes/hello.txt").put("content", "héllo wörld\n");
        files.addObject().put("path", "data.bin").put("content", Base64.getEncoder().encodeToString(binary))
                .put("encoding", "base64");
        files.addObject().put("path", "tool.sh").put("content", "#!/bin/bash\necho tool ran\n").put("mode", "0755");
        body.putArray("artifacts").add("out/*.bin").add("report.txt").add("link").add("fifo").add("missing.txt");
        JsonNode done = awaitEnd(submit(alice, body));
        assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("succeeded");
        assertThat(done.path("stdout").path("text").asText()).isEqualTo("héllo wörld\ntool ran\n");
        String id = done.path("executionId").asText();

        JsonNode list = json(get(nodeB, alice, "/v1/executions/" + id + "/artifacts"));
        assertThat(status(list, "out/copy.bin")).isEqualTo("stored");
        assertThat(field(list, "out/copy.bin", "sha256")).isEqualTo(sha256(binary));
        assertThat(status(list, "link")).isEqualTo("not_regular");
        assertThat(status(list, "fifo")).isEqualTo("not_regular");
        assertThat(status(list, "missing.txt")).isEqualTo("missing");
        HttpResponse<byte[]> copy = get(nodeB, alice, "/v1/executions/" + id + "/artifacts/out/copy.bin");
        assertThat(copy.statusCode()).isEqualTo(200);
        assertThat(copy.body()).isEqualTo(binary);
        HttpResponse<byte[]> report = get(nodeB, alice, "/v1/executions/" + id + "/artifacts/report.txt");
        assertThat(new String(report.body(), StandardCharsets.UTF_8)).isEqualTo("report");
        // A range across a chunk boundary (chunks are 1 MiB).
        HttpResponse<byte[]> range = send(nodeB, alice, "GET", "/v1/executions/" + id + "/artifacts/out/copy.bin",
                null, "bytes=1048570-1048589");
        assertThat(range.statusCode()).isEqualTo(206);
        assertThat(range.headers().firstValue("Content-Range")).hasValue("bytes 1048570-1048589/" + binary.length);
        assertThat(range.body()).isEqualTo(java.util.Arrays.copyOfRange(binary, 1048570, 1048590));
        assertThat(get(nodeB, alice, "/v1/executions/" + id + "/artifacts/link").statusCode()).isEqualTo(404);

        // Another owner: exactly like a missing execution.
        HttpResponse<byte[]> foreign = get(nodeB, bob, "/v1/executions/" + id + "/artifacts");
        assertThat(foreign.statusCode()).isEqualTo(404);
        assertThat(json(foreign).path("error").path("code").asText()).isEqualTo("execution_not_found");
        assertThat(get(nodeB, bob, "/v1/executions/" + id + "/artifacts/report.txt").statusCode()).isEqualTo(404);
    }

    @Test
    void artifactsAreCollectedAfterFailureAndTimeout() throws Exception {
        ObjectNode failing = submission("echo partial > result.txt; exit 3");
        failing.putArray("artifacts").add("result.txt");
        JsonNode failed = awaitEnd(submit(alice, failing));
        assertThat(failed.path("status").asText()).isEqualTo("failed");
        assertThat(new String(get(nodeB, alice, "/v1/executions/" + failed.path("executionId").asText()
                + "/artifacts/result.txt").body(), StandardCharsets.UTF_8)).isEqualTo("partial\n");

        ObjectNode slow = submission("echo before-timeout > progress.txt; sleep 600");
        slow.put("timeoutMs", 3000);
        slow.putArray("artifacts").add("progress.txt");
        JsonNode timedOut = awaitEnd(submit(alice, slow));
        assertThat(timedOut.path("status").asText()).isEqualTo("timed_out");
        assertThat(new String(get(nodeB, alice, "/v1/executions/" + timedOut.path("executionId").asText()
                + "/artifacts/progress.txt").body(), StandardCharsets.UTF_8)).isEqualTo("before-timeout\n");
    }

    /** No artifact is read through a link at any depth: the engine would resolve it as root in the container. */
    @Test
    void anArtifactPathThroughALinkIsNeverFollowed() throws Exception {
        ObjectNode body = submission("set -e; ln -s / r; mkdir -p d/e; ln -s /etc d/e/l; echo kept > d/e/real.txt;"
                + " cat /etc/shadow 2>/dev/null && echo READABLE || echo denied");
        body.putArray("artifacts").add("r/etc/shadow").add("r/etc/passwd").add("d/e/l/passwd").add("d/e/real.txt");
        JsonNode done = awaitEnd(submit(alice, body));
        assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("succeeded");
        assertThat(done.path("stdout").path("text").asText()).isEqualTo("denied\n");
        String id = done.path("executionId").asText();
        JsonNode list = json(get(nodeB, alice, "/v1/executions/" + id + "/artifacts"));
        for (String through : new String[] {"r/etc/shadow", "r/etc/passwd", "d/e/l/passwd"}) {
            assertThat(status(list, through)).as(through + " in " + list).isEqualTo("not_regular");
            assertThat(field(list, through, "detail")).as(through).contains("a directory on its path");
            assertThat(get(nodeB, alice, "/v1/executions/" + id + "/artifacts/" + through).statusCode()).as(through)
                    .isEqualTo(404);
        }
        assertThat(status(list, "d/e/real.txt")).isEqualTo("stored");
        assertThat(new String(get(nodeB, alice, "/v1/executions/" + id + "/artifacts/d/e/real.txt").body(),
                StandardCharsets.UTF_8)).isEqualTo("kept\n");
    }

    @Test
    void pathsThatLeaveTheWorkdirAreRefusedNamingTheFile() throws Exception {
        for (String path : List.of("../x", "/etc/passwd", "a/../../x", "a\u0000b", "d/" + "n".repeat(256))) {
            ObjectNode body = submission("true");
            body.putArray("files").addObject().put("path", path).put("content", "x");
            HttpResponse<byte[]> answer = send(nodeA, alice, "POST", "/v1/executions", body.toString(), null);
            assertThat(answer.statusCode()).as(path).isEqualTo(400);
            assertThat(json(answer).path("error").path("message").asText()).startsWith("files[0].path");
        }
        ObjectNode artifacts = submission("true");
        artifacts.putArray("artifacts").add("../outside");
        HttpResponse<byte[]> answer = send(nodeA, alice, "POST", "/v1/executions", artifacts.toString(), null);
        assertThat(answer.statusCode()).isEqualTo(400);
        assertThat(json(answer).path("error").path("message").asText()).contains("artifacts[0]");
    }

    @Test
    void aLargeLogIsKeptWholeAndServedFromAnotherNode() throws Exception {
        // 8M lines, ~69 MB (the 200 MB is for a manual run: two shared cores in CI).
        int lines = 8_000_000;
        JsonNode done = awaitEnd(submit(alice, submission("seq 1 " + lines)));
        assertThat(done.path("status").asText()).isEqualTo("succeeded");
        assertThat(done.path("stdout").path("truncated").asBoolean()).isTrue();
        String id = done.path("executionId").asText();
        MessageDigest expected = MessageDigest.getInstance("SHA-256");
        long expectedBytes = 0;
        for (int i = 1; i <= lines; i++) {
            byte[] line = (i + "\n").getBytes(StandardCharsets.US_ASCII);
            expected.update(line);
            expectedBytes += line.length;
        }
        String expectedSha = HexFormat.of().formatHex(expected.digest());
        JsonNode list = json(get(nodeB, alice, "/v1/executions/" + id + "/artifacts"));
        assertThat(status(list, "stdout")).isEqualTo("stored");
        assertThat(field(list, "stdout", "sha256")).isEqualTo(expectedSha);
        long start = System.nanoTime();
        HttpResponse<InputStream> download = http.send(request(nodeB, alice, "GET",
                "/v1/executions/" + id + "/artifacts/stdout", null, null), HttpResponse.BodyHandlers.ofInputStream());
        MessageDigest got = MessageDigest.getInstance("SHA-256");
        long bytes = 0;
        try (InputStream in = download.body()) {
            byte[] buffer = new byte[64 * 1024];
            int n;
            while ((n = in.read(buffer)) > 0) {
                got.update(buffer, 0, n);
                bytes += n;
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("FilesIT: downloaded the %d-byte kept stdout (gzip in the database) in %.2f s: %.1f MB/s%n",
                bytes, seconds, bytes / 1e6 / seconds);
        assertThat(bytes).isEqualTo(expectedBytes);
        assertThat(HexFormat.of().formatHex(got.digest())).isEqualTo(expectedSha);
        // Ranges: the last bytes, and one across a gzip member's boundary (V12 seek points: a read
        // inflates from the member holding its first byte, not from byte 0).
        java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream((int) expectedBytes);
        for (int i = 1; i <= lines; i++) {
            all.writeBytes((i + "\n").getBytes(StandardCharsets.US_ASCII));
        }
        byte[] whole = all.toByteArray();
        long member = io.outrun.sandbox.capture.FullOutput.SEGMENT;
        for (long[] range : new long[][] {{expectedBytes - 20, expectedBytes - 1}, {3 * member - 10, 3 * member + 9},
                {0, 9}}) {
            HttpResponse<byte[]> part = http.send(request(nodeB, alice, "GET", "/v1/executions/" + id + "/artifacts/stdout",
                    null, "bytes=" + range[0] + "-" + range[1]), HttpResponse.BodyHandlers.ofByteArray());
            assertThat(part.statusCode()).isEqualTo(206);
            assertThat(part.body()).as("bytes " + range[0] + "-" + range[1])
                    .isEqualTo(java.util.Arrays.copyOfRange(whole, (int) range[0], (int) range[1] + 1));
        }
    }

    @Test
    void aFiftyMegabyteArtifactDownloadsByteExact() throws Exception {
        ObjectNode body = submission("head -c 50000000 /dev/urandom > big.bin; sha256sum big.bin");
        body.putArray("artifacts").add("big.bin");
        JsonNode done = awaitEnd(submit(alice, body));
        assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("succeeded");
        String sha = done.path("stdout").path("text").asText().split(" ")[0];
        String id = done.path("executionId").asText();
        long start = System.nanoTime();
        HttpResponse<InputStream> download = http.send(request(nodeB, alice, "GET",
                "/v1/executions/" + id + "/artifacts/big.bin", null, null), HttpResponse.BodyHandlers.ofInputStream());
        MessageDigest got = MessageDigest.getInstance("SHA-256");
        long bytes = 0;
        try (InputStream in = download.body()) {
            byte[] buffer = new byte[64 * 1024];
            int n;
            while ((n = in.read(buffer)) > 0) {
                got.update(buffer, 0, n);
                bytes += n;
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("FilesIT: downloaded a %d-byte artifact from another API node in %.2f s: %.1f MB/s%n",
                bytes, seconds, bytes / 1e6 / seconds);
        assertThat(bytes).isEqualTo(50_000_000L);
        assertThat(HexFormat.of().formatHex(got.digest())).isEqualTo(sha);
    }

    @Test
    void aWorkspaceCarriesStateAcrossRunsAndIsOwnerScoped() throws Exception {
        String ws = "proj-" + System.nanoTime();
        JsonNode first = awaitEnd(submit(alice, withWorkspace(submission(
                "mkdir -p tools && printf '#!/bin/bash\\necho tool v1\\n' > tools/t && chmod +x tools/t && echo 1 > state"), ws)));
        assertThat(first.path("status").asText()).as(first.toString()).isEqualTo("succeeded");
        JsonNode second = awaitEnd(submit(alice, withWorkspace(submission("tools/t; cat state; echo 2 >> state"), ws)));
        assertThat(second.path("stdout").path("text").asText()).isEqualTo("tool v1\n1\n");
        JsonNode third = awaitEnd(submit(alice, withWorkspace(submission("tools/t; cat state"), ws)));
        assertThat(third.path("stdout").path("text").asText()).isEqualTo("tool v1\n1\n2\n");

        JsonNode listed = json(get(nodeB, alice, "/v1/workspaces"));
        assertThat(listed.path("workspaces").findValuesAsText("name")).contains(ws);
        assertThat(get(nodeB, bob, "/v1/workspaces/" + ws).statusCode()).isEqualTo(404);
        assertThat(json(get(nodeB, bob, "/v1/workspaces")).path("workspaces").findValuesAsText("name")).doesNotContain(ws);
        assertThat(send(nodeB, bob, "DELETE", "/v1/workspaces/" + ws, null, null).statusCode()).isEqualTo(404);
        assertThat(json(get(nodeB, alice, "/v1/workspaces/" + ws)).path("savedBy").asText())
                .isEqualTo(third.path("executionId").asText());
        assertThat(send(nodeB, alice, "DELETE", "/v1/workspaces/" + ws, null, null).statusCode()).isEqualTo(204);
        assertThat(get(nodeB, alice, "/v1/workspaces/" + ws).statusCode()).isEqualTo(404);
    }

    /**
     * Issue 25 #8: hard links and long paths round-trip through a workspace (Docker sandbox), and
     * what cannot be kept (a FIFO) is reported under @workspace instead of vanishing.
     */
    @Test
    void aWorkspaceKeepsHardLinksAndLongPathsAndReportsWhatItCannotKeep() throws Exception {
        String ws = "links-" + System.nanoTime();
        String deep = String.join("/", java.util.Collections.nCopies(7, "d".repeat(200)));
        JsonNode first = awaitEnd(submit(alice, withWorkspace(submission("echo data > orig && ln orig hard && mkdir -p "
                + deep + " && echo deep > " + deep + "/f && mkfifo pipe"), ws)));
        assertThat(first.path("status").asText()).as(first.toString()).isEqualTo("succeeded");
        JsonNode report = json(get(nodeB, alice, "/v1/executions/" + first.path("executionId").asText() + "/artifacts"));
        assertThat(status(report, "@workspace")).isEqualTo("partial");
        assertThat(field(report, "@workspace", "detail")).contains("pipe").contains("FIFO");
        JsonNode second = awaitEnd(submit(alice, withWorkspace(submission("cat orig hard " + deep
                + "/f; stat -c %h orig; echo more >> hard; cat orig"), ws)));
        assertThat(second.path("status").asText()).as(second.toString()).isEqualTo("succeeded");
        assertThat(second.path("stdout").path("text").asText()).isEqualTo("data\ndata\ndeep\n2\ndata\nmore\n");
    }

    /**
     * Issue 25 #1: a sparse file of a petabyte named as an artifact is reported over_limit from the
     * engine's stat, never streamed, and the run ends at once; in a directory read, the read stops
     * at it and says so, and the engine is not left streaming it.
     */
    @Test
    void aPetabyteSparseFileIsReportedNotStreamed() throws Exception {
        ObjectNode body = submission("truncate -s 1P big && mkdir d && truncate -s 1P d/a-big && echo hi > d/z-small"
                + " && echo made");
        body.put("timeoutMs", 5000);
        body.putArray("artifacts").add("big").add("d/*");
        // Before: the engine streamed zeros for as long as anyone watched, and the run never ended.
        JsonNode done = awaitEnd(submit(alice, body));
        assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("succeeded");
        JsonNode list = json(get(nodeB, alice, "/v1/executions/" + done.path("executionId").asText() + "/artifacts"));
        assertThat(status(list, "big")).isEqualTo("over_limit");
        assertThat(field(list, "big", "size")).isEqualTo(Long.toString(1L << 50));
        assertThat(status(list, "d/a-big")).isEqualTo("over_limit");
        assertThat(status(list, "@unread/d")).isEqualTo("over_limit");
        assertThat(field(list, "@unread/d", "detail")).contains("d/a-big");
    }

    /** Issue 25 (low): a pattern over many files not collected lists 100 rows and one that counts the rest. */
    @Test
    void manyFilesNotCollectedAreCountedNotListedOneByOne() throws Exception {
        ObjectNode body = submission("for i in $(seq 150); do ln -s nowhere l$i; done; echo ok");
        body.putArray("artifacts").add("l*");
        JsonNode done = awaitEnd(submit(alice, body));
        assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("succeeded");
        JsonNode list = json(get(nodeB, alice, "/v1/executions/" + done.path("executionId").asText() + "/artifacts"));
        assertThat(list.path("artifacts").size()).isEqualTo(101);
        assertThat(status(list, "@more")).isEqualTo("over_limit");
        assertThat(field(list, "@more", "detail")).startsWith("50 more files");
    }

    @Test
    void twoRunsOfOneWorkspaceNeverInterleave() throws Exception {
        String ws = "serial-" + System.nanoTime();
        String a = submit(alice, withWorkspace(submission("echo start-a >> log; sleep 4; echo end-a >> log"), ws))
                .path("executionId").asText();
        String b = submit(alice, withWorkspace(submission("echo start-b >> log; sleep 4; echo end-b >> log"), ws))
                .path("executionId").asText();
        JsonNode doneA = awaitEnd(json(get(nodeA, alice, "/v1/executions/" + a)));
        JsonNode doneB = awaitEnd(json(get(nodeA, alice, "/v1/executions/" + b)));
        assertThat(doneA.path("status").asText()).isEqualTo("succeeded");
        assertThat(doneB.path("status").asText()).isEqualTo("succeeded");
        JsonNode firstDone = Instant.parse(doneA.path("finishedAt").asText()).isBefore(Instant.parse(doneB.path("finishedAt").asText()))
                ? doneA : doneB;
        JsonNode secondDone = firstDone == doneA ? doneB : doneA;
        assertThat(Instant.parse(secondDone.path("startedAt").asText()))
                .as("the second run starts after the first saved").isAfterOrEqualTo(Instant.parse(firstDone.path("finishedAt").asText()));
        JsonNode log = awaitEnd(submit(alice, withWorkspace(submission("cat log"), ws)));
        String x = firstDone == doneA ? "a" : "b";
        String y = firstDone == doneA ? "b" : "a";
        assertThat(log.path("stdout").path("text").asText())
                .isEqualTo("start-" + x + "\nend-" + x + "\nstart-" + y + "\nend-" + y + "\n");
    }

    // --- helpers -------------------------------------------------------------------------------

    private static ObjectNode submission(String command) {
        ObjectNode body = JSON.createObjectNode();
        body.put("command", command);
        return body;
    }

    private static ObjectNode withWorkspace(ObjectNode body, String ws) {
        return body.put("workspace", ws);
    }

    private static JsonNode submit(String token, ObjectNode body) throws Exception {
        HttpResponse<byte[]> answer = send(nodeA, token, "POST", "/v1/executions", body.toString(), null);
        assertThat(answer.statusCode()).as(new String(answer.body(), StandardCharsets.UTF_8)).isIn(200, 202);
        return json(answer);
    }

    private static JsonNode awaitEnd(JsonNode submitted) throws Exception {
        String id = submitted.path("executionId").asText();
        long deadline = System.nanoTime() + Duration.ofSeconds(180).toNanos();
        while (true) {
            JsonNode v = json(get(nodeA, alice, "/v1/executions/" + id + "?waitMs=5000"));
            String status = v.path("status").asText();
            if (!status.equals("queued") && !status.equals("running")) {
                return v;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no end within 180 s: " + v);
            }
        }
    }

    private static String status(JsonNode list, String name) {
        return field(list, name, "status");
    }

    private static String field(JsonNode list, String name, String field) {
        for (JsonNode a : list.path("artifacts")) {
            if (a.path("name").asText().equals(name)) {
                return a.path(field).asText();
            }
        }
        throw new AssertionError("no artifact " + name + " in " + list);
    }

    private static HttpResponse<byte[]> get(ApiNode node, String token, String path) throws Exception {
        return send(node, token, "GET", path, null, null);
    }

    private static HttpRequest request(ApiNode node, String token, String method, String path, String body, String range) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.port() + path))
                .timeout(Duration.ofSeconds(120))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                .header("Authorization", "Bearer " + token);
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        if (range != null) {
            b.header("Range", range);
        }
        return b.build();
    }

    private static HttpResponse<byte[]> send(ApiNode node, String token, String method, String path, String body, String range)
            throws Exception {
        return http.send(request(node, token, method, path, body, range), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static JsonNode json(HttpResponse<byte[]> answer) throws Exception {
        return JSON.readTree(answer.body());
    }

    private static String sha256(byte[] bytes) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    }
}
