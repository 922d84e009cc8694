package io.outrun.api.http;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.Lineage;
import io.outrun.core.execution.Retry;
import io.outrun.core.execution.Submission;
import io.outrun.core.secrets.SecretName;
import io.outrun.core.secrets.SecretStore;
import io.outrun.core.service.ExecutionService;
import io.outrun.core.webhook.WebhookUrl;
import io.outrun.model.egress.EgressPolicy;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a parsed submission must also pass before it is stored, beyond its body's shape
 * ({@link SubmissionParser}): a run's child holds no more than the run; a worker would refuse
 * unknown secrets and a webhook the operator does not allow, so they are refused now; a repeat of
 * an idempotency key must be the same request. The submit and the schedules ask the same.
 */
final class SubmitChecks {

    private final ApiConfig config;
    private final ExecutionService service;
    private final SecretStore secrets;
    private final WebhookRoutes webhooks;

    SubmitChecks(ApiConfig config, ExecutionService service, SecretStore secrets, WebhookRoutes webhooks) {
        this.config = config;
        this.service = service;
        this.secrets = secrets;
        this.webhooks = webhooks;
    }

    /**
     * A submit made with a run token (issue 31) is that run's child: labelled {@code parent=<id>},
     * one deeper than its parent (refused past the operator's {@code --max-child-depth}), and by
     * default cancelled when its parent ends. Any other submit is a root, whatever its body says.
     */
    Submission asChild(RunScope.Allowed run, SubmissionParser.Parsed parsed) {
        Submission submission = parsed.submission();
        if (run == null) {
            return submission;
        }
        int depth = run.depth() + 1;
        if (depth > config.identity().maxChildDepth()) {
            throw new ApiError(400, "too_deep", "This run is " + run.depth() + " levels below a root execution; this server"
                    + " lets children nest " + config.identity().maxChildDepth() + " deep (--max-child-depth).",
                    "Do the work in this run, or have its parent submit more children instead of nesting deeper.");
        }
        requireWithinParent(run.held(), submission);
        Map<String, String> labels = new LinkedHashMap<>(submission.labels());
        labels.put(SubmissionParser.PARENT_LABEL, run.run().executionId().toString());
        boolean cancelWithParent = parsed.cancelWithParent() == null || parsed.cancelWithParent();
        return submission.withLabels(labels)
                .withLineage(new Lineage(run.run().executionId(), depth, cancelWithParent));
    }

    /**
     * A child holds no more than its parent: the owner's secrets its parent was given, a network
     * only if its parent has one, an identity only for its parent's audience, no workspace (the
     * owner's files, which the parent's token cannot read either). Else code inside a run could
     * reach, through a child, what its owner never gave it.
     */
    private static void requireWithinParent(RunScope.Held held, Submission child) {
        List<String> beyond = child.inputs().secrets().stream().filter(s -> !held.secrets().contains(s)).toList();
        if (!beyond.isEmpty()) {
            throw exceedsParent("secrets", "names " + String.join(", ", beyond) + ", which this run was not given");
        }
        String network = child.resources().network();
        if (network != null && !network.equals(held.network())) {
            throw exceedsParent("network", "asks for " + network + ", which this run does not have");
        }
        if (child.identityAudience() != null && !child.identityAudience().equals(held.identityAudience())) {
            throw exceedsParent("identity", held.identityAudience() == null ? "asks for an identity, which this run does not have"
                    : "asks for audience " + child.identityAudience() + "; this run's identity is for " + held.identityAudience());
        }
        if (child.inputs().workspace() != null) {
            throw exceedsParent("workspace", "names a workspace: a run's children use none (they would read the owner's"
                    + " files, which the run's own token cannot)");
        }
    }

    private static ApiError exceedsParent(String field, String why) {
        return new ApiError(403, "exceeds_parent", field + ": this child " + why + ". A run's child holds no more than"
                + " the run: the secrets it was given, its network, its identity's audience, no workspace.",
                "Drop the field, or have the run's submitter give the run itself what its children need.");
    }

    /**
     * A run naming a secret its owner does not have would fail on a worker: refused here. (One
     * deleted after this check fails its run with {@code secret_unavailable}, naming it.)
     */
    private void requireSecrets(String owner, Submission submission) {
        List<String> names = submission.inputs().secrets();
        if (names.isEmpty()) {
            return;
        }
        // A repeat of an accepted submission answers it, as ever, whatever became of its secrets since.
        if (isRepeat(owner, submission)) {
            return;
        }
        if (!secrets.hasKey()) {
            throw SecretRoutes.notConfigured();
        }
        SecretStore.Check check = secrets.check(owner, names);
        if (!check.missing().isEmpty()) {
            throw SecretRoutes.unknown(400, check.missing());
        }
        if (check.bytes() > SecretName.MAX_RUN_BYTES) {
            throw ApiError.invalid("secrets", "the secrets named hold " + check.bytes() + " bytes together; a run gets at"
                    + " most " + SecretName.MAX_RUN_BYTES + " (they travel in its environment)");
        }
    }

    /** What a worker would refuse, refused now: unknown secrets, a webhook without a signing secret. */
    void requireSubmittable(String owner, Submission submission) {
        requireSecrets(owner, submission);
        if (submission.webhook() != null && !isRepeat(owner, submission)) {
            requireWebhookAllowed(submission.webhook());
            webhooks.requireSecret(owner);
        }
    }

    /**
     * The operator's {@code --webhook-allow} decides, after resolving the name: a webhook must
     * never reach into the fleet's own network.
     */
    private void requireWebhookAllowed(String webhook) {
        EgressPolicy allowed = config.webhooks();
        if (allowed.isEmpty()) {
            throw new ApiError(400, "webhook_not_allowed", "webhook: this server sends no webhooks (its operator has"
                    + " allowed no destination).", "Submit without `webhook` and poll or follow the execution, or ask the"
                    + " operator to allow your receiver with --webhook-allow.");
        }
        WebhookUrl url = WebhookUrl.parse(webhook);
        EgressPolicy.Decision decision = allowed.decide(url.host(), url.port());
        if (!decision.allowed()) {
            throw new ApiError(400, "webhook_not_allowed", "webhook: " + decision.refusal(),
                    "Use a receiver the operator allows, or submit without `webhook`.");
        }
    }

    private boolean isRepeat(String owner, Submission submission) {
        return submission.idempotencyKey() != null
                && service.findByIdempotencyKey(owner, submission.idempotencyKey()).isPresent();
    }

    /** The same retry policy asked for (what the retries made since do not count). */
    private static boolean samePolicy(Retry first, Retry repeat) {
        if (first == null || repeat == null) {
            return first == repeat;
        }
        return first.maxRetries() == repeat.maxRetries() && first.backoffMs() == repeat.backoffMs()
                && new HashSet<>(first.on()).equals(new HashSet<>(repeat.on()));
    }

    /** A repeat of an idempotency key must be the same request, or it is a caller's bug worth naming. */
    static void requireSameRequest(Execution first, Submission repeat) {
        boolean same = first.command().equals(repeat.command())
                && Objects.equals(first.image(), repeat.image())
                && Objects.equals(first.workdir(), repeat.workdir())
                && first.env().equals(repeat.env())
                && first.labels().equals(repeat.labels())
                && first.timeoutMs() == repeat.timeoutMs()
                && first.maxAttempts() == repeat.maxAttempts()
                && first.maxOutputBytes() == repeat.maxOutputBytes()
                && first.stdin().mode() == repeat.stdin()
                && first.resources().equals(repeat.resources())
                && samePolicy(first.retry(), repeat.retry())
                && Objects.equals(first.webhook() == null ? null : first.webhook().url(), repeat.webhook())
                && (first.startsAt() != null) == (repeat.startAt() != null || repeat.delayMs() != null);
        if (!same) {
            throw new ApiError(409, "idempotency_key_reused", "Idempotency-Key " + repeat.idempotencyKey()
                    + " was already used for a different request (execution " + first.id() + ").",
                    ch -> "Use a new " + ch.idempotencyKey() + " for a new command, or " + ch.show(first.id())
                            + " for the execution the key already names.");
        }
    }
}
