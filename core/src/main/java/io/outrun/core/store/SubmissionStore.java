package io.outrun.core.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.RunInputs;
import io.outrun.core.execution.StdinState;
import io.outrun.core.execution.Submission;
import io.outrun.core.execution.Webhook;
import io.outrun.core.trace.TraceContext;
import io.outrun.model.output.Captured;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * An owner's side of an execution: the submission that makes its row, the reads that show it,
 * and the cancel request. Kept apart from the worker's fenced writes ({@code LeaseStore}) because
 * none of these holds a lease: they are answered for a caller over HTTP, so each is one short
 * statement that never waits on a worker. Someone else's execution answers exactly like a missing one.
 */
public final class SubmissionStore {

    private final DataSource dataSource;

    public SubmissionStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** PostgreSQL's order of uuids: their 16 bytes compared unsigned, not Java's signed halves. */
    private static final Comparator<UUID> IN_POSTGRES_ORDER = (a, b) -> {
        int high = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
        return high != 0 ? high : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
    };

    /** The row a submission made, and whether this call made it (false: idempotent repeat). */
    public record Inserted(Execution execution, boolean created) {
    }

    /**
     * Stores a submission as a queued row (with its inputs, in one transaction); its caller then
     * enqueues its JobRunr job and wakes a node. A repeat of an idempotency key answers the first row.
     */
    public Inserted insert(Submission s) {
        return insert(s, null);
    }

    /** As {@link #insert(Submission)}, keeping {@code trace} (null: none) for the execution's later spans. */
    public Inserted insert(Submission s, TraceContext trace) {
        return insertAll(List.of(s), Collections.singletonList(trace)).get(0);
    }

    /**
     * Stores {@code submissions} in ONE transaction: one multi-row INSERT (arrays of one element
     * per row), then their inputs and webhooks as JDBC batches on the same connection, so that a
     * burst pays one WAL flush. Without inputs, webhooks or idempotency keys the INSERT alone is
     * the transaction (autocommit: no BEGIN, no COMMIT round trip). {@code traces} (same size; an element may be
     * null) are kept for the executions' later spans. Answers one {@link Inserted} per submission,
     * in order: an idempotency key that already names a row, or that an earlier submission of the
     * same list used, answers that row with {@code created} false. All or nothing: a failure
     * stores none of them (callers that must not fail the innocent retry one by one).
     */
    public List<Inserted> insertAll(List<Submission> submissions, List<TraceContext> traces) {
        int n = submissions.size();
        if (traces.size() != n) {
            throw new IllegalArgumentException(n + " submissions but " + traces.size() + " traces");
        }
        if (n == 0) {
            return List.of();
        }
        Inserted[] answers = new Inserted[n];
        // The first of each (owner, key) is inserted; a later one of the same list answers its row.
        Map<List<String>, Integer> firstOfKey = new HashMap<>();
        int[] sameAs = new int[n];
        List<Integer> rows = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Submission s = submissions.get(i);
            sameAs[i] = -1;
            if (s.idempotencyKey() != null) {
                Integer first = firstOfKey.putIfAbsent(List.of(s.owner(), s.idempotencyKey()), i);
                if (first != null) {
                    sameAs[i] = first;
                    continue;
                }
            }
            rows.add(i);
        }
        UUID[] ids = new UUID[rows.size()];
        for (int r = 0; r < ids.length; r++) {
            ids[r] = UUID.randomUUID();
        }
        // Rows of one statement share their enqueued_at and created_at (the transaction's now()):
        // the claim and the listing then go by id, so ids ascending as PostgreSQL compares them
        // (bytewise) keep the submissions' order: a batch starts and lists in the order it was sent.
        Arrays.sort(ids, IN_POSTGRES_ORDER);
        Map<UUID, Integer> byId = new HashMap<>(rows.size() * 2);
        boolean together = false;
        for (int r = 0; r < rows.size(); r++) {
            byId.put(ids[r], rows.get(r));
            Submission s = submissions.get(rows.get(r));
            // A key may name an earlier row, read after the INSERT: that read commits with the new
            // rows, or a failed read would leave them stored yet answered failed (and stored again).
            together |= !s.inputs().isEmpty() || s.webhook() != null || s.idempotencyKey() != null;
        }
        String owner = submissions.get(0).owner();
        try (Connection c = dataSource.getConnection()) {
            // With inputs (files, artifacts, workspace) or a webhook, the rows and those commit together.
            if (together) {
                c.setAutoCommit(false);
            }
            try {
                List<UUID> created = new ArrayList<>(rows.size());
                try (PreparedStatement ps = ExecutionsTable.INSERT.prepare(c, rowArgs(c, ids, rows, submissions, traces));
                     ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        int i = byId.get(rs.getObject("id", UUID.class));
                        answers[i] = new Inserted(newRow(rs, submissions.get(i), traces.get(i)), true);
                        created.add(answers[i].execution().id());
                    }
                }
                if (together) {
                    insertInputsAndWebhooks(c, created, byId, submissions);
                    answerRepeats(c, submissions, answers, rows);
                    c.commit();
                }
            } catch (SQLException | RuntimeException e) {
                if (together) {
                    Transaction.abandon(c, e); // the pool wants autocommit back; e stays the failure
                }
                throw e;
            }
            if (together) {
                c.setAutoCommit(true); // the pool wants autocommit back
            }
        } catch (SQLException e) {
            throw new StoreException("cannot store " + (n == 1 ? "a new execution" : n + " new executions")
                    + " for owner " + owner, e);
        }
        for (int i = 0; i < n; i++) {
            if (sameAs[i] >= 0) {
                answers[i] = new Inserted(answers[sameAs[i]].execution(), false);
            }
        }
        return Arrays.asList(answers);
    }

    /** The INSERT's arrays: element r of each is row r's column. */
    private static NamedSql.Args rowArgs(Connection c, UUID[] ids, List<Integer> rows, List<Submission> submissions,
                                         List<TraceContext> traces) throws SQLException {
        int m = rows.size();
        String[] owner = new String[m], command = new String[m], image = new String[m], workdir = new String[m];
        String[] env = new String[m], labels = new String[m], key = new String[m], stdin = new String[m];
        String[] network = new String[m], startAt = new String[m], retryOn = new String[m];
        String[] traceparent = new String[m], tracestate = new String[m], audience = new String[m];
        Long[] timeout = new Long[m], delay = new Long[m], backoff = new Long[m];
        Integer[] maxOutput = new Integer[m], maxAttempts = new Integer[m], memory = new Integer[m], cpu = new Integer[m];
        Integer[] pids = new Integer[m], tmpfs = new Integer[m], retryMax = new Integer[m], depth = new Integer[m];
        UUID[] parent = new UUID[m];
        Boolean[] cancelWithParent = new Boolean[m];
        for (int r = 0; r < m; r++) {
            Submission s = submissions.get(rows.get(r));
            TraceContext trace = traces.get(rows.get(r));
            owner[r] = s.owner();
            command[r] = s.command();
            image[r] = s.image();
            workdir[r] = s.workdir();
            env[r] = ExecutionRows.json(s.env());
            labels[r] = ExecutionRows.json(s.labels());
            timeout[r] = s.timeoutMs();
            maxOutput[r] = s.maxOutputBytes();
            maxAttempts[r] = s.maxAttempts();
            key[r] = s.idempotencyKey();
            stdin[r] = s.stdin().wire();
            memory[r] = s.resources().memoryMb();
            cpu[r] = s.resources().cpuMillis();
            pids[r] = s.resources().pids();
            tmpfs[r] = s.resources().tmpfsMb();
            network[r] = s.resources().network();
            startAt[r] = s.startAt() == null ? null : s.startAt().toString();
            delay[r] = s.delayMs();
            retryMax[r] = s.retry() == null ? null : s.retry().maxRetries();
            backoff[r] = s.retry() == null ? null : s.retry().backoffMs();
            retryOn[r] = s.retry() == null ? null : String.join(",", s.retry().on());
            traceparent[r] = trace == null ? null : trace.traceparent();
            tracestate[r] = trace == null ? null : trace.tracestate();
            parent[r] = s.lineage().parentId();
            depth[r] = s.lineage().depth();
            cancelWithParent[r] = s.lineage().cancelWithParent();
            audience[r] = s.identityAudience();
        }
        return NamedSql.Args.of("id", c.createArrayOf("uuid", ids), "owner", text(c, owner), "command", text(c, command))
                .and("image", text(c, image))
                .and("workdir", text(c, workdir))
                .and("env", text(c, env))
                .and("labels", text(c, labels))
                .and("timeout_ms", c.createArrayOf("int8", timeout))
                .and("max_output_bytes", c.createArrayOf("int4", maxOutput))
                .and("max_attempts", c.createArrayOf("int4", maxAttempts))
                .and("idempotency_key", text(c, key))
                .and("stdin", text(c, stdin))
                .and("memory_mb", c.createArrayOf("int4", memory))
                .and("cpu_millis", c.createArrayOf("int4", cpu))
                .and("pids", c.createArrayOf("int4", pids))
                .and("tmpfs_mb", c.createArrayOf("int4", tmpfs))
                .and("network", text(c, network))
                .and("start_at", text(c, startAt))
                .and("delay_ms", c.createArrayOf("int8", delay))
                .and("retry_max", c.createArrayOf("int4", retryMax))
                .and("retry_backoff_ms", c.createArrayOf("int8", backoff))
                .and("retry_on", text(c, retryOn))
                .and("traceparent", text(c, traceparent))
                .and("tracestate", text(c, tracestate))
                .and("parent_id", c.createArrayOf("uuid", parent))
                .and("depth", c.createArrayOf("int4", depth))
                .and("cancel_with_parent", c.createArrayOf("bool", cancelWithParent))
                .and("identity_audience", text(c, audience));
    }

    private static Array text(Connection c, String[] values) throws SQLException {
        return c.createArrayOf("text", values);
    }

    /** The inputs and webhooks of the rows just made, one JDBC batch each, in the INSERT's transaction. */
    private static void insertInputsAndWebhooks(Connection c, List<UUID> created, Map<UUID, Integer> byId,
                                                List<Submission> submissions) throws SQLException {
        try (PreparedStatement inputs = ExecutionInputsTable.INSERT.prepare(c);
             PreparedStatement hooks = WebhookStore.INSERT.prepare(c)) {
            int inputRows = 0;
            int hookRows = 0;
            for (UUID id : created) {
                Submission s = submissions.get(byId.get(id));
                if (!s.inputs().isEmpty()) {
                    ExecutionInputsTable.INSERT.bind(inputs, inputArgs(id, s.inputs()));
                    inputs.addBatch();
                    inputRows++;
                }
                if (s.webhook() != null) {
                    WebhookStore.INSERT.bind(hooks, NamedSql.Args.of("id", id, "url", s.webhook()));
                    hooks.addBatch();
                    hookRows++;
                }
            }
            if (inputRows > 0) {
                inputs.executeBatch();
            }
            if (hookRows > 0) {
                hooks.executeBatch();
            }
        }
    }

    /**
     * The rows that the INSERT skipped (their idempotency key names an earlier execution), read
     * in one statement in the insert's transaction (it commits only once every answer is known).
     */
    private static void answerRepeats(Connection c, List<Submission> submissions, Inserted[] answers, List<Integer> rows)
            throws SQLException {
        List<Integer> repeats = rows.stream().filter(i -> answers[i] == null).toList();
        if (repeats.isEmpty()) {
            return;
        }
        String[] owners = repeats.stream().map(i -> submissions.get(i).owner()).toArray(String[]::new);
        String[] keys = repeats.stream().map(i -> submissions.get(i).idempotencyKey()).toArray(String[]::new);
        Map<List<String>, Execution> found = new HashMap<>();
        try (PreparedStatement ps = ExecutionsTable.READ_BY_KEYS.prepare(c, NamedSql.Args.of("owners", text(c, owners),
                "keys", text(c, keys))); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                Execution e = ExecutionRows.map(rs, null);
                found.put(List.of(e.owner(), e.idempotencyKey()), e);
            }
        }
        for (int i : repeats) {
            Submission s = submissions.get(i);
            Execution first = found.get(List.of(s.owner(), s.idempotencyKey()));
            if (first == null) {
                throw new StoreException("idempotency key conflict without a row for owner " + s.owner(), null);
            }
            answers[i] = new Inserted(first, false);
        }
    }

    /**
     * The row just inserted: what the database chose (id aside, the status, job and clock) from
     * the RETURNING, the rest as submitted. Reading the whole row back cost a submit more CPU than
     * its insert (its JSON columns parsed again, a dozen timestamps and counters).
     */
    private static Execution newRow(ResultSet rs, Submission s, TraceContext trace) throws SQLException {
        Captured none = new Captured(new byte[0], new byte[0], 0);
        return Execution.builder()
                .id(rs.getObject("id", UUID.class)).owner(s.owner()).command(s.command()).image(s.image())
                .workdir(s.workdir()).env(s.env()).labels(s.labels()).timeoutMs(s.timeoutMs())
                .maxOutputBytes(s.maxOutputBytes()).maxAttempts(s.maxAttempts()).idempotencyKey(s.idempotencyKey())
                .status(ExecutionStatus.fromWire(rs.getString("status")))
                .bookSeq(rs.getInt("dispatch_seq")).jobId(rs.getObject("job_id", UUID.class))
                .enqueuedAt(ExecutionRows.instant(rs, "enqueued_at")).createdAt(ExecutionRows.instant(rs, "created_at"))
                .stdout(none).stderr(none)
                .stdin(StdinState.of(s.stdin())).resources(s.resources())
                .startsAt(ExecutionRows.instant(rs, "starts_at")).retry(s.retry())
                .webhook(s.webhook() == null ? null : Webhook.waiting(s.webhook()))
                .trace(trace).lineage(s.lineage()).identityAudience(s.identityAudience())
                .build();
    }

    /** A submission's files, artifacts, workspace and secrets' names (V7, V17 {@code execution_inputs}). */
    private static NamedSql.Args inputArgs(UUID id, RunInputs inputs) {
        String artifacts;
        String secrets;
        try {
            artifacts = ExecutionRows.JSON.writeValueAsString(inputs.artifacts());
            secrets = ExecutionRows.JSON.writeValueAsString(inputs.secrets());
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        return NamedSql.Args.of("id", id, "files_tar", inputs.filesTar(), "artifacts", artifacts)
                .and("workspace", inputs.workspace()).and("secrets", secrets);
    }

    /** The execution an owner submitted with this idempotency key, without its output. */
    public Optional<Execution> findByIdempotencyKey(String owner, String idempotencyKey) {
        return ExecutionRows.read(dataSource, ExecutionsTable.READ_BY_KEY, OutputStore.Read.NONE,
                NamedSql.Args.of("owner", owner, "key", idempotencyKey), owner);
    }

    /** An execution with all its kept output. */
    public Optional<Execution> find(UUID id) {
        return find(id, OutputStore.Read.ALL);
    }

    /** An execution with the output {@code read} asks for (none, all, or after a cursor). */
    public Optional<Execution> find(UUID id, OutputStore.Read read) {
        return ExecutionRows.read(dataSource, ExecutionsTable.READ_BY_ID, read, NamedSql.Args.of("id", id), id);
    }

    /** An owner's execution with all its kept output; someone else's answers exactly like a missing one. */
    public Optional<Execution> findOwned(UUID id, String owner) {
        return findOwned(id, owner, OutputStore.Read.ALL);
    }

    /** An owner's execution with the output {@code read} asks for (none, all, or after a cursor). */
    public Optional<Execution> findOwned(UUID id, String owner, OutputStore.Read read) {
        return ExecutionRows.read(dataSource, ExecutionsTable.READ_OWNED, read,
                NamedSql.Args.of("id", id, "owner", owner), id);
    }

    /** Only the state of an owner's execution: what a waiting poll re-reads, without its output. */
    public Optional<ExecutionStatus> statusOwned(UUID id, String owner) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = ExecutionsTable.STATUS_OWNED.prepare(c, NamedSql.Args.of("id", id, "owner", owner));
             ResultSet rs = ps.executeQuery()) {
            return rs.next() ? Optional.of(ExecutionStatus.fromWire(rs.getString(1))) : Optional.empty();
        } catch (SQLException e) {
            throw new StoreException("cannot read the status of execution " + id, e);
        }
    }

    /** The workspace a queued execution waits for, and the owner's running execution that holds it. */
    public record WorkspaceHeld(String workspace, UUID holder) {
    }

    /** For a queued execution of {@code owner}: the running execution of the same workspace it waits for, if any. */
    public Optional<WorkspaceHeld> workspaceHolder(UUID id, String owner) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = ExecutionInputsTable.WORKSPACE_HOLDER.prepare(c, NamedSql.Args.of("id", id, "owner", owner));
             ResultSet rs = ps.executeQuery()) {
            return rs.next() ? Optional.of(new WorkspaceHeld(rs.getString(1), rs.getObject(2, UUID.class))) : Optional.empty();
        } catch (SQLException e) {
            throw new StoreException("cannot read the workspace of execution " + id, e);
        }
    }

    /** What a cancel request did. */
    public enum CancelResult { CANCELLED_WHILE_QUEUED, REQUESTED, ALREADY_TERMINAL, NOT_FOUND }

    /**
     * Cancels an owner's execution: a queued one ends at once; a running one is flagged (on its
     * lease row too, where its worker's next renewal reads it) and its worker kills it.
     */
    public CancelResult requestCancel(UUID id, String owner) {
        Optional<CancelResult> r = cancel(ExecutionsTable.CANCEL_OWNED, NamedSql.Args.of("queued_message", Messages.CANCELLED_BEFORE_START,
                "id", id, "owner", owner).and("operator", false), id);
        if (r.isPresent()) {
            return r.get();
        }
        return statusOwned(id, owner).isPresent() ? CancelResult.ALREADY_TERMINAL : CancelResult.NOT_FOUND;
    }

    /**
     * Cancels an execution for an operator, whoever owns it (an admin deleted its JobRunr job on
     * the dashboard): as {@link #requestCancel}, with {@code message} (who cancelled) recorded
     * at once, also on a running one, whose end keeps it: its worker kills it and writes its end.
     */
    public CancelResult requestCancelAsOperator(UUID id, String message) {
        Optional<CancelResult> r = cancel(ExecutionsTable.CANCEL_ANY, NamedSql.Args.of("queued_message", message, "id", id, "operator", true), id);
        if (r.isPresent()) {
            return r.get();
        }
        return find(id, OutputStore.Read.NONE).isPresent() ? CancelResult.ALREADY_TERMINAL : CancelResult.NOT_FOUND;
    }

    /** Runs a cancel statement. Empty: the execution is not queued or running. */
    private Optional<CancelResult> cancel(NamedSql sql, NamedSql.Args args, UUID id) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = sql.prepare(c, args);
             ResultSet rs = ps.executeQuery()) {
            if (rs.next()) {
                return Optional.of(rs.getString(1).equals("cancelled") ? CancelResult.CANCELLED_WHILE_QUEUED : CancelResult.REQUESTED);
            }
        } catch (SQLException e) {
            throw new StoreException("cannot cancel execution " + id, e);
        }
        return Optional.empty();
    }
}
