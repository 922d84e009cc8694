package io.outrun.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outrun.client.ApiException;
import io.outrun.client.OutrunClient;
import io.outrun.client.UnreachableException;
import io.outrun.client.wire.BatchResponse;
import io.outrun.client.wire.BatchResult;
import io.outrun.client.wire.Json;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Sends the submissions of a batch file, at most {@link BatchFile#MAX_PER_REQUEST} per request
 * (each request is one transaction), and prints one line per submission, in the file's order,
 * with the line it came from: {@code LINE<TAB>ID} (and {@code <TAB>replayed} for a repeat of an
 * idempotency key), or {@code LINE<TAB>error<TAB>CODE<TAB>MESSAGE}; with {@code --json} one JSON
 * object per submission, the API's result with {@code line} added.
 */
final class BatchSubmit {

    /** Exit code when some submissions were refused and the others stored (1: Outrun failed; 2: usage). */
    static final int SOME_REFUSED = 3;

    private static final int LINES_LISTED = 10;

    private final OutrunClient client;
    private final PrintWriter out;
    private final PrintWriter err;
    private final boolean json;

    BatchSubmit(OutrunClient client, PrintWriter out, PrintWriter err, boolean json) {
        this.client = client;
        this.out = out;
        this.err = err;
        this.json = json;
    }

    /** Sends them all (or up to a request refused as a whole) and returns the exit code. */
    int send(String name, List<BatchFile.Line> lines) {
        int accepted = 0;
        List<Integer> refused = new ArrayList<>();
        for (int from = 0; from < lines.size(); from += BatchFile.MAX_PER_REQUEST) {
            List<BatchFile.Line> part = lines.subList(from, Math.min(lines.size(), from + BatchFile.MAX_PER_REQUEST));
            BatchResponse answer;
            try {
                // Lines of ids need no output in the answer; --json shows what the API shows (each stream's tail).
                answer = client.submitBatch(part.stream().map(BatchFile.Line::submission).toList(), json ? null : "none");
            } catch (ApiException | UnreachableException e) {
                notSent(name, part.get(0).number(), from > 0, e);
                throw e; // reported by ClientCommand, exit 1
            }
            for (BatchResult r : answer.results()) {
                if (r.index() < 0 || r.index() >= part.size()) {
                    throw new IllegalStateException("the API answered a result for submission " + r.index()
                            + " of a batch of " + part.size());
                }
                int line = part.get(r.index()).number();
                print(line, r);
                if (r.ok()) {
                    accepted++;
                } else {
                    refused.add(line);
                }
            }
            out.flush();
        }
        err.println("outrun: " + lines.size() + " submissions from " + name + ": " + accepted + " accepted"
                + (refused.isEmpty() ? "" : ", " + refused.size() + " refused (" + listed(refused) + ")")
                + ". Follow one: outrun logs -f ID   its state: outrun status ID");
        return refused.isEmpty() ? 0 : SOME_REFUSED;
    }

    private void print(int line, BatchResult r) {
        if (json) {
            ObjectNode row = Json.mapper().createObjectNode().put("line", line);
            row.setAll((ObjectNode) Json.mapper().valueToTree(r));
            try {
                out.println(Json.mapper().writeValueAsString(row));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        } else if (r.ok()) {
            out.println(line + "\t" + r.execution().executionId() + (Boolean.TRUE.equals(r.replayed()) ? "\treplayed" : ""));
        } else {
            String code = r.error() != null && r.error().error() != null ? r.error().error().code() : "http_" + r.status();
            String message = r.error() != null && r.error().error() != null ? r.error().error().message() : "";
            out.println(line + "\terror\t" + code + "\t" + message.replace('\n', ' ').replace('\t', ' '));
        }
    }

    /** What a request refused as a whole (or unanswered) means for the file: where it stopped. */
    private void notSent(String name, int firstLine, boolean earlierSent, RuntimeException e) {
        out.flush();
        String stored = earlierSent ? "the submissions printed above were stored; " : "";
        if (e instanceof UnreachableException) {
            err.println("outrun: no answer for the request from " + name + " line " + firstLine + " on: " + stored
                    + "those from line " + firstLine + " on may or may not have been. With an idempotencyKey on"
                    + " each line, sending the file again is safe (a repeat answers the first execution).");
        } else {
            err.println("outrun: the request from " + name + " line " + firstLine + " on was refused as a whole: "
                    + stored + "nothing from line " + firstLine + " on was stored.");
        }
    }

    private static String listed(List<Integer> lines) {
        String shown = lines.stream().limit(LINES_LISTED).map(String::valueOf).collect(Collectors.joining(", "));
        return (lines.size() == 1 ? "line " : "lines ") + shown + (lines.size() > LINES_LISTED ? ", ..." : "");
    }
}
