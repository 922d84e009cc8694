package io.outrun.api.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.javalin.http.Context;
import io.outrun.client.wire.BatchResponse;
import io.outrun.client.wire.BatchResult;
import io.outrun.client.wire.ErrorBody;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.owner.TooManyQueuedException;
import io.outrun.core.service.ExecutionService;
import io.outrun.core.service.Stored;
import io.outrun.core.store.DiskFull;
import io.outrun.core.store.Outage;
import io.outrun.core.store.SubmissionStore;
import io.outrun.core.trace.TraceContext;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/executions/batch}: up to {@link BatchBody#MAX_ITEMS} submissions in one request,
 * each checked exactly as a single submit checks its body, and all the good ones stored in ONE
 * transaction. A bad item fails only itself: the answer (200 whenever the request itself is
 * well-formed) has one result per item, in order, with the single submit's answer or error body.
 * A batch answers at once: an item asking to wait ({@code waitMs}) is refused.
 */
final class BatchRoutes {

    private static final Logger LOG = LoggerFactory.getLogger(BatchRoutes.class);

    private final ApiConfig config;
    private final ExecutionService service;
    private final SubmissionParser parser;
    private final SubmitChecks checks;
    private final Views views;

    BatchRoutes(ApiConfig config, ExecutionService service, SubmissionParser parser, SubmitChecks checks, Views views) {
        this.config = config;
        this.service = service;
        this.parser = parser;
        this.checks = checks;
        this.views = views;
    }

    void submit(Context ctx) {
        String owner = ApiServer.owner(ctx);
        OutputMode mode = OutputMode.parse(ctx.queryParam("output"));
        ExecutionRoutes.requireJson(ctx.header("Content-Type"));
        List<BatchBody.Item> items = BatchBody.read(BodyReader.read(ctx, config.maxBatchBodyBytes(),
                BatchBody.tooLarge(config.maxBatchBodyBytes())));
        Channel ch = Channel.of(ctx);
        RunScope.Allowed run = ApiServer.run(ctx);
        BatchResult[] results = new BatchResult[items.size()];
        List<Submission> good = new ArrayList<>(items.size());
        List<Integer> goodAt = new ArrayList<>(items.size());
        for (int i = 0; i < items.size(); i++) {
            try {
                Submission s = checked(items.get(i), owner, run);
                good.add(s);
                goodAt.add(i);
            } catch (ApiError refused) {
                results[i] = refused(i, refused, ch);
            }
        }
        if (!good.isEmpty()) {
            // A W3C traceparent joins the caller's trace, for every item (one span for the batch).
            List<Stored> stored = service.submitBatch(good, TraceContext.parse(ctx.header("traceparent"),
                    ctx.header("tracestate")));
            for (int k = 0; k < good.size(); k++) {
                int i = goodAt.get(k);
                try {
                    results[i] = accepted(i, stored.get(k), good.get(k), mode, ch);
                } catch (ApiError refused) {
                    results[i] = refused(i, refused, ch);
                }
            }
        }
        int accepted = 0;
        for (BatchResult r : results) {
            accepted += r.ok() ? 1 : 0;
        }
        int refused = results.length - accepted;
        ApiServer.json(ctx, 200, new BatchResponse(accepted, refused, List.of(results), refused == 0
                ? "All " + accepted + " submissions were accepted; each result's execution has its own guidance."
                : refused + " of " + results.length + " submissions were refused, each with its own error (results[i].error);"
                        + " the others were accepted and must not be sent again. Fix the refused ones and send only"
                        + " those; with an idempotencyKey on each, resending a whole batch is safe."));
    }

    /** One item, checked as a single submit's body and its checks before the store. */
    private Submission checked(BatchBody.Item item, String owner, RunScope.Allowed run) {
        JsonNode node = item.node();
        if (!(node instanceof ObjectNode object)) {
            throw ApiError.invalid("body", "must be a JSON object such as " + SubmissionParser.EXAMPLE);
        }
        String key = null;
        JsonNode keyNode = object.remove("idempotencyKey");
        if (keyNode != null && !keyNode.isNull()) {
            if (!keyNode.isTextual()) {
                throw ApiError.invalid("idempotencyKey", "must be a string, e.g. a UUID");
            }
            key = SubmissionParser.idempotencyKey(keyNode.textValue(), "idempotencyKey");
        }
        JsonNode wait = object.get("waitMs");
        if (wait != null && !wait.isNull() && !(wait.isIntegralNumber() && wait.asLong() == 0)) {
            throw new ApiError(400, "wait_not_in_batch", "waitMs: a batch answers at once; its submissions cannot"
                    + " wait for their runs.", ch -> "Drop waitMs from the batch's submissions and follow each"
                    + " execution with " + ch.show("<id>") + " (waitMs there), or submit this one alone with waitMs.");
        }
        SubmissionParser.Parsed parsed = parser.parse(object, item.bytes(), owner, key);
        Submission submission = checks.asChild(run, parsed);
        checks.requireSubmittable(owner, submission);
        return submission;
    }

    /** What a single submit would have answered for a stored (or refused at the store) item. */
    private BatchResult accepted(int index, Stored stored, Submission submission, OutputMode mode, Channel ch) {
        if (stored.failure() != null) {
            throw asApiError(stored.failure());
        }
        Execution e = stored.inserted().execution();
        if (!stored.inserted().created()) {
            SubmitChecks.requireSameRequest(e, submission);
        }
        // Only a submission that names a workspace can wait for one: no query for the others.
        // It is stored: the holder is a hint, and a failed read of it must not answer the stored
        // batch 5xx (a client without keys would send it again and run it twice).
        SubmissionStore.WorkspaceHeld held = null;
        if (submission.inputs().workspace() != null && e.status() == ExecutionStatus.QUEUED) {
            try {
                held = service.workspaceHolder(e.id(), e.owner()).orElse(null);
            } catch (RuntimeException hintLost) {
                held = null;
            }
        }
        return BatchResult.accepted(index, e.status().isTerminal() ? 200 : 202, views.of(e, mode, ch, held),
                !stored.inserted().created());
    }

    private static BatchResult refused(int index, ApiError e, Channel ch) {
        return BatchResult.refused(index, e.httpStatus(), ErrorBody.of(e.code(), e.getMessage(), e.guidance(ch)));
    }

    /** An item's own failure at the store, as a single submit would have answered it. */
    private ApiError asApiError(RuntimeException failure) {
        if (failure instanceof TooManyQueuedException full) {
            return ApiError.tooManyQueued(full);
        }
        if (failure instanceof DiskFull.Refused || Outage.diskFull(failure)) {
            return ApiError.databaseDiskFull();
        }
        if (Outage.is(failure)) {
            return ApiError.databaseUnavailable();
        }
        if (Outage.readOnly(failure)) {
            return ApiError.databaseReadOnly();
        }
        LOG.error("a submission of a batch could not be stored", failure);
        return ApiServer.internal();
    }
}
