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
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
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
        NamedSql.Args args = NamedSql.Args.of("id", UUID.randomUUID(), "owner", s.owner(), "command", s.command())
                .and("image", s.image())
                .and("workdir", s.workdir())
                .and("env", ExecutionRows.json(s.env()))
                .and("labels", ExecutionRows.json(s.labels()))
                .and("timeout_ms", s.timeoutMs())
                .and("max_output_bytes", s.maxOutputBytes())
                .and("max_attempts", s.maxAttempts())
                .and("idempotency_key", s.idempotencyKey())
                .and("stdin", s.stdin().wire())
                .and("memory_mb", s.resources().memoryMb())
                .and("cpu_millis", s.resources().cpuMillis())
                .and("pids", s.resources().pids())
                .and("tmpfs_mb", s.resources().tmpfsMb())
                .and("network", s.resources().network())
                .and("start_at", s.startAt() == null ? null : OffsetDateTime.ofInstant(s.startAt(), ZoneOffset.UTC))
                .and("delay_ms", s.delayMs())
                .and("retry_max", s.retry() == null ? null : s.retry().maxRetries())
                .and("retry_backoff_ms", s.retry() == null ? null : s.retry().backoffMs())
                .and("retry_on", s.retry() == null ? null : String.join(",", s.retry().on()))
                .and("traceparent", trace == null ? null : trace.traceparent())
                .and("tracestate", trace == null ? null : trace.tracestate())
                .and("parent_id", s.lineage().parentId())
                .and("depth", s.lineage().depth())
                .and("cancel_with_parent", s.lineage().cancelWithParent())
                .and("identity_audience", s.identityAudience());
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionsTable.INSERT.prepare(c, args)) {
            // With inputs (files, artifacts, workspace) or a webhook, the row and those commit together.
            boolean together = !s.inputs().isEmpty() || s.webhook() != null;
            if (together) {
                c.setAutoCommit(false);
            }
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    Execution inserted = newRow(rs, s, trace);
                    if (together) {
                        if (!s.inputs().isEmpty()) {
                            insertInputs(c, inserted.id(), s.inputs());
                        }
                        if (s.webhook() != null) {
                            try (PreparedStatement w = WebhookStore.INSERT.prepare(c, NamedSql.Args.of("id", inserted.id(),
                                    "url", s.webhook()))) {
                                w.executeUpdate();
                            }
                        }
                        c.commit();
                    }
                    return new Inserted(inserted, true);
                }
            } catch (SQLException | RuntimeException e) {
                if (together) {
                    c.rollback();
                }
                throw e;
            } finally {
                if (together && !c.getAutoCommit()) {
                    c.rollback(); // nothing left to commit on the idempotent path; the pool wants autocommit back
                    c.setAutoCommit(true);
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot store a new execution for owner " + s.owner(), e);
        }
        return new Inserted(findByIdempotencyKey(s.owner(), s.idempotencyKey()).orElseThrow(
                () -> new StoreException("idempotency key conflict without a row for owner " + s.owner(), null)), false);
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

    /** A submission's files, artifacts, workspace and secrets' names (V7, V17 {@code execution_inputs}), in the insert's transaction. */
    private static void insertInputs(Connection c, UUID id, RunInputs inputs) throws SQLException {
        String artifacts;
        String secrets;
        try {
            artifacts = ExecutionRows.JSON.writeValueAsString(inputs.artifacts());
            secrets = ExecutionRows.JSON.writeValueAsString(inputs.secrets());
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        NamedSql.Args args = NamedSql.Args.of("id", id, "files_tar", inputs.filesTar(), "artifacts", artifacts)
                .and("workspace", inputs.workspace()).and("secrets", secrets);
        try (PreparedStatement ps = ExecutionInputsTable.INSERT.prepare(c, args)) {
            ps.executeUpdate();
        }
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
