package io.outrun.core.store;

import java.util.List;
import java.util.stream.IntStream;

/**
 * The {@code executions} table's statements, whichever class runs them: the submission, the
 * claim, the end, the cancel, the reads, stdin, retention, the listing and the fleet's counts;
 * its departures are in {@link ExecutionsDepartures}, the rest of the table's home. It holds
 * statements and nothing else; the stores ({@link SubmissionStore}, {@code LeaseStore}, {@link
 * RedriveStore}, {@link StdinStore}, {@code RetentionStore}, and outside this package the
 * artifact, owner and HTTP classes) bind, run and map them. A statement lives here when the first table it changes is
 * {@code executions} (after a {@code WITH}, the main statement's table; when that is a
 * {@code SELECT}, the first table its parts change), or, for a read, when the rows it returns
 * or counts are executions (see CONTRIBUTING.md, "SQL").
 */
public final class ExecutionsTable {

    /** Bits of the listing's filters, picking its statement in {@link #PAGE}. */
    public static final int PAGE_BY_STATUS = 1;
    public static final int PAGE_BY_LABELS = 2;
    public static final int PAGE_AFTER = 4;

    // --- an owner's: submit, status, cancel (SubmissionStore) ---
    /**
     * Stores any number of submissions in one statement: one array per column, one element per
     * row ({@code unnest} zips them), so a burst of submits (group commit) or a batch pays one
     * round trip and one WAL flush, and a single submit is the same statement with arrays of one.
     * Timestamps travel as ISO-8601 text; env and labels as JSON text; retry_on comma-joined.
     * A row whose (owner, idempotency key) exists is skipped: it is not in the RETURNING.
     */
    /**
     * The rows of a submit or a batch, and the wake-up of as many nodes as it made executions
     * (as {@link NodesTable#WAKE_NODES}: free nodes first, the busy ones too when too few are
     * free), in one statement: a submit pays no round trip of its own for the wake-up. The
     * NOTIFYs go out at commit, when the rows are there to claim. They serialise commits that
     * notify on PostgreSQL's notify lock; a node's submits share one transaction (GroupCommit),
     * so that is one commit per API node at a time, not one per submit.
     */
    public static final NamedSql INSERT = NamedSql.of("""
            WITH ins AS (INSERT INTO executions (id, owner, command, image, workdir, env, labels, timeout_ms,
              max_output_bytes, max_attempts, idempotency_key, stdin, memory_mb, cpu_millis, pids, tmpfs_mb, network,
              starts_at, enqueued_at, retry_max, retry_backoff_ms, retry_on, traceparent, tracestate,
              parent_id, depth, cancel_with_parent, identity_audience)
            -- A delayed start (V18) is claimable from then on: the claim goes by enqueued_at.
            SELECT r.id, r.owner, r.command, r.image, r.workdir, r.env::jsonb, r.labels::jsonb, r.timeout_ms,
              r.max_output_bytes, r.max_attempts, r.idempotency_key, r.stdin, r.memory_mb, r.cpu_millis, r.pids,
              r.tmpfs_mb, r.network, s.at, greatest(coalesce(s.at, now()), now()), r.retry_max, r.retry_backoff_ms,
              CASE WHEN r.retry_on IS NULL THEN NULL ELSE string_to_array(r.retry_on, ',') END,
              r.traceparent, r.tracestate, r.parent_id, r.depth, r.cancel_with_parent, r.identity_audience
            FROM unnest(:id::uuid[], :owner::text[], :command::text[], :image::text[], :workdir::text[], :env::text[],
                :labels::text[], :timeout_ms::bigint[], :max_output_bytes::int[], :max_attempts::int[],
                :idempotency_key::text[], :stdin::text[], :memory_mb::int[], :cpu_millis::int[], :pids::int[],
                :tmpfs_mb::int[], :network::text[], :start_at::text[], :delay_ms::bigint[], :retry_max::int[],
                :retry_backoff_ms::bigint[], :retry_on::text[], :traceparent::text[], :tracestate::text[],
                :parent_id::uuid[], :depth::int[], :cancel_with_parent::boolean[], :identity_audience::text[])
              AS r(id, owner, command, image, workdir, env, labels, timeout_ms, max_output_bytes, max_attempts,
                idempotency_key, stdin, memory_mb, cpu_millis, pids, tmpfs_mb, network, start_at, delay_ms, retry_max,
                retry_backoff_ms, retry_on, traceparent, tracestate, parent_id, depth, cancel_with_parent,
                identity_audience)
              CROSS JOIN LATERAL (SELECT coalesce(r.start_at::timestamptz,
                now() + r.delay_ms * interval '1 millisecond') AS at) s
            ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING id, status, dispatch_seq, job_id, enqueued_at, created_at, starts_at),
              live AS (SELECT wake_channel, running < slots AS free FROM nodes
                 WHERE NOT draining AND heartbeat_at > now() - coalesce(lease_ttl_ms, 60000) * interval '1 millisecond'),
              free AS (SELECT wake_channel FROM live WHERE free ORDER BY random() LIMIT (SELECT count(*) FROM ins)),
              busy AS (SELECT wake_channel FROM live WHERE NOT free AND (SELECT count(*) FROM free) < (SELECT count(*) FROM ins)),
              woke AS (SELECT count(pg_notify(n.wake_channel, n.why)) AS nodes FROM (SELECT wake_channel, 'free' AS why
                FROM free UNION ALL SELECT wake_channel, 'busy' FROM busy) n)
            SELECT ins.*, (SELECT nodes FROM woke) AS woke FROM ins""");

    public static final NamedSql STATUS_OWNED = NamedSql.of("""
            SELECT status FROM executions WHERE id = :id AND owner = :owner""");

    /**
     * One statement, so that a row moving between queued and running (claimed, re-driven, handed
     * back) at the same moment is cancelled in whichever state it is in. Two statements that differ
     * only in their WHERE clause: an owner's cancel names the owner, an operator's does not.
     */
    public static final NamedSql CANCEL_OWNED = NamedSql.of("""
            WITH c AS (UPDATE executions SET status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
                cancel_requested_at = coalesce(cancel_requested_at, now()),
                finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END,
                error_code = CASE WHEN status = 'queued' THEN 'cancelled' ELSE error_code END,
                -- An operator's cancel of a running row says so in advance: its end keeps the message.
                -- Queued after a retried failure, it did start: its message says what the last attempt did.
                error_message = CASE WHEN status = 'queued' AND retries > 0 AND NOT :operator
                    THEN 'Cancelled by its owner while waiting to retry; ' || last_failure || '.'
                  WHEN status = 'queued' OR :operator THEN :queued_message::text ELSE error_message END,
                updated_at = now()
                WHERE id = :id AND owner = :owner AND status IN ('queued', 'running') RETURNING id, status),
              l AS (UPDATE leases SET cancel_requested = true WHERE execution_id IN (SELECT id FROM c))
            SELECT status FROM c""");

    public static final NamedSql CANCEL_ANY = NamedSql.of("""
            WITH c AS (UPDATE executions SET status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
                cancel_requested_at = coalesce(cancel_requested_at, now()),
                finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END,
                error_code = CASE WHEN status = 'queued' THEN 'cancelled' ELSE error_code END,
                -- An operator's cancel of a running row says so in advance: its end keeps the message.
                -- Queued after a retried failure, it did start: its message says what the last attempt did.
                error_message = CASE WHEN status = 'queued' AND retries > 0 AND NOT :operator
                    THEN 'Cancelled by its owner while waiting to retry; ' || last_failure || '.'
                  WHEN status = 'queued' OR :operator THEN :queued_message::text ELSE error_message END,
                updated_at = now()
                WHERE id = :id AND status IN ('queued', 'running') RETURNING id, status),
              l AS (UPDATE leases SET cancel_requested = true WHERE execution_id IN (SELECT id FROM c))
            SELECT status FROM c""");

    // --- a run token's (issue 31: io.outrun.api.http.RunScope, ProgressStore) ---
    /**
     * What a request made with a run token may do, in one read: whether the token's attempt still
     * runs (the token dies with it), the run's depth (its children are one deeper), what it holds
     * (its network, identity, secrets: its children may hold no more), and whether
     * {@code :target} (null: none) is one of the run's children.
     */
    public static final NamedSql RUN_SCOPE = NamedSql.of("""
            SELECT r.status = 'running' AND r.attempt = :attempt AND r.lease_epoch = :epoch
                AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = r.id AND l.epoch = r.lease_epoch
                  AND l.expires_at > now()) AS live, r.depth, r.job_id, r.network, r.identity_audience,
              -- What the run itself holds: its children may hold no more (SubmitChecks.asChild).
              coalesce((SELECT i.secrets FROM execution_inputs i WHERE i.execution_id = r.id), '{}') AS secrets,
              (:target::uuid IS NOT NULL AND EXISTS (SELECT 1 FROM executions c WHERE c.id = :target::uuid
                AND c.parent_id = r.id AND c.owner = r.owner)) AS child
            FROM executions r WHERE r.id = :run AND r.owner = :owner""");

    /** The run's latest progress, while the attempt that reports it runs; no row: it does not. */
    public static final NamedSql PROGRESS = NamedSql.of("""
            UPDATE executions e SET progress_percent = :percent, progress_message = :message, progress_at = now()
             WHERE e.id = :id AND e.owner = :owner AND e.status = 'running' AND e.attempt = :attempt
               AND e.lease_epoch = :epoch AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = e.id
                 AND l.epoch = e.lease_epoch AND l.expires_at > now())
            RETURNING progress_at""");

    /**
     * Cancels the live children of {@code :parent} that end with it, and theirs, in one
     * statement; answers the ids it cancelled or asked to stop. (A running one is told through
     * its lease, as any cancel is.)
     */
    public static final NamedSql CANCEL_CHILDREN = NamedSql.of("""
            WITH RECURSIVE family(id) AS (
                SELECT c.id FROM executions c WHERE c.parent_id = :parent AND c.cancel_with_parent
                  AND c.status IN ('queued', 'running')
              UNION
                SELECT c.id FROM executions c JOIN family f ON c.parent_id = f.id WHERE c.cancel_with_parent
                  AND c.status IN ('queued', 'running')),
              c AS (UPDATE executions SET status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
                cancel_requested_at = coalesce(cancel_requested_at, now()),
                finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END,
                error_code = CASE WHEN status = 'queued' THEN 'cancelled' ELSE error_code END,
                error_message = :message::text,
                updated_at = now()
                WHERE id IN (SELECT id FROM family) AND status IN ('queued', 'running') RETURNING id, status, job_id),
              l AS (UPDATE leases SET cancel_requested = true WHERE execution_id IN (SELECT id FROM c))
            SELECT id, status, job_id FROM c""");

    /**
     * The live children that end with their parent whose parent has ended (the sweeper's check,
     * for a parent that ended by itself, by a reap, or on another node): their parents' ids.
     */
    public static final NamedSql ENDED_PARENTS = NamedSql.of("""
            SELECT DISTINCT c.parent_id FROM executions c JOIN executions p ON p.id = c.parent_id
             WHERE c.parent_id IS NOT NULL AND c.cancel_with_parent AND c.status IN ('queued', 'running')
               AND p.status IN ('succeeded', 'failed', 'timed_out', 'cancelled')
             LIMIT 100""");

    // --- a row as read (ExecutionRows.read) ---
    /**
     * A row as read: its own columns (the same list, without "e.", is what the claim's RETURNING
     * names), its lease's expiry and, while it runs, how far each stream's stored output reaches.
     * Written once; each way of finding the row is a statement of its own, this text and its
     * WHERE joined at class load (CONTRIBUTING.md, "SQL").
     */
    private static final String ROW = """
            SELECT e.id, e.owner, e.command, e.image, e.workdir, e.env::text AS env_json, e.labels::text AS labels_json,
              e.timeout_ms, e.max_output_bytes, e.status, e.attempt, e.max_attempts, e.lease_owner, e.lease_epoch, e.output_epoch,
              e.cancel_requested_at, e.idempotency_key, e.dispatch_seq, e.job_id, e.enqueued_at, e.created_at, e.started_at, e.finished_at,
              e.exit_code, e.error_code, e.error_message, e.stdout_total_bytes, e.stderr_total_bytes, e.stdin, e.stdin_bytes,
              e.stdin_closed_at, e.memory_mb, e.cpu_millis, e.pids, e.tmpfs_mb, e.network, e.starts_at,
              e.retry_max, e.retry_backoff_ms, e.retry_on, e.retries, e.last_failure, e.traceparent, e.tracestate,
              e.parent_id, e.depth, e.cancel_with_parent, e.identity_audience, e.progress_percent, e.progress_message, e.progress_at,
              l.expires_at AS lease_expires_at,
              (SELECT o.end_offset FROM execution_output o WHERE o.execution_id = e.id AND o.epoch = e.output_epoch
                 AND o.stream = 1 ORDER BY o.start_offset DESC LIMIT 1) AS stdout_end,
              (SELECT o.end_offset FROM execution_output o WHERE o.execution_id = e.id AND o.epoch = e.output_epoch
                 AND o.stream = 2 ORDER BY o.start_offset DESC LIMIT 1) AS stderr_end,
              -- V20: its completion webhook, if it has one (a probe of the webhooks key)
              (SELECT row_to_json(w)::text FROM webhooks w WHERE w.execution_id = e.id) AS webhook_json
            FROM executions e LEFT JOIN leases l ON l.execution_id = e.id
            """;

    public static final NamedSql READ_BY_ID = NamedSql.of(ROW + "WHERE e.id = :id");

    /** Someone else's execution answers exactly like a missing one. */
    public static final NamedSql READ_OWNED = NamedSql.of(ROW + "WHERE e.id = :id AND e.owner = :owner");

    public static final NamedSql READ_BY_KEY = NamedSql.of(ROW + "WHERE e.owner = :owner AND e.idempotency_key = :key");

    /** The rows of several (owner, idempotency key) pairs at once: the repeats of a batch or a group commit. */
    public static final NamedSql READ_BY_KEYS = NamedSql.of(ROW + """
            WHERE (e.owner, e.idempotency_key) IN (SELECT * FROM unnest(:owners::text[], :keys::text[]))""");

    // --- a worker's: the claim and the writes fenced by its lease (LeaseStore) ---
    /**
     * The claim: up to {@code :slots} queued executions for this node, fairly. Each slot goes to
     * the owner with the fewest running executions fleet-wide (its rank: running + its place in
     * its own queue, oldest first; ties: oldest work first), so another owner's first execution
     * takes the first slot that frees, and a lone owner fills every slot. Owners are walked by a
     * skip scan of the queued index and each gives at most the rows it may take by this
     * statement's snapshot, without a lock. Running caps are then made exact for the owners picked
     * only ({@code outrun_owner_free}: the owner's lock, taken in owner order, and a fresh count),
     * and workspace exclusivity (runs of a busy workspace are skipped, one run per workspace per
     * batch, and {@code outrun_workspace_free} re-checks under the workspace's lock) is a condition
     * of the same statement. The picked rows are locked {@code SKIP LOCKED}: a row another node is claiming
     * is left to it ({@code picked} greater than what was claimed tells the caller to look again).
     * Each claimed row takes a new lease epoch (never reused) under the node's incarnation, its
     * lease row, and a NOTIFY for live readers. {@code :only_id} (tests): claim that row only.
     */
    public static final NamedSql CLAIM = NamedSql.of("""
            WITH RECURSIVE queued_owners(owner) AS (
                SELECT (SELECT q.owner FROM executions q WHERE q.status = 'queued'
                  AND (:only_id::uuid IS NULL OR q.id = :only_id::uuid) ORDER BY q.owner LIMIT 1)
              UNION ALL
                SELECT (SELECT q.owner FROM executions q WHERE q.status = 'queued' AND q.owner > o.owner
                  AND (:only_id::uuid IS NULL OR q.id = :only_id::uuid) ORDER BY q.owner LIMIT 1)
                FROM queued_owners o WHERE o.owner IS NOT NULL),
              -- Each owner's running count and cap as this statement's snapshot sees them: no lock yet.
              owner_state AS (SELECT o.owner,
                  (SELECT count(*) FROM executions r WHERE r.owner = o.owner AND r.status = 'running') AS running,
                  coalesce((SELECT w.max_running FROM owners w WHERE w.owner = o.owner), :default_max_running::integer) AS cap,
                  -- V7: the workspaces the owner runs now, read once per owner
                  ARRAY(SELECT bi.workspace FROM executions b JOIN execution_inputs bi ON bi.execution_id = b.id
                    WHERE b.owner = o.owner AND b.status = 'running' AND bi.workspace IS NOT NULL) AS busy
                FROM queued_owners o WHERE o.owner IS NOT NULL),
              candidates AS (SELECT o.owner, o.cap, c.id, c.workspace, c.enqueued_at, o.running + c.place AS rank
                FROM owner_state o CROSS JOIN LATERAL (
                  SELECT q.id, q.enqueued_at, i.workspace, row_number() OVER (ORDER BY q.enqueued_at, q.id) AS place
                  FROM executions q LEFT JOIN execution_inputs i ON i.execution_id = q.id
                  WHERE q.owner = o.owner AND q.status = 'queued' AND q.enqueued_at <= now()
                    AND q.cancel_requested_at IS NULL AND q.attempt < q.max_attempts + q.retries
                    AND (:only_id::uuid IS NULL OR q.id = :only_id::uuid)
                    AND (i.workspace IS NULL OR i.workspace <> ALL (o.busy))
                  ORDER BY q.enqueued_at, q.id
                  LIMIT CASE WHEN o.cap IS NULL THEN :slots ELSE greatest(least(o.cap - o.running, :slots), 0) END) c),
              picked AS (SELECT w.owner, w.cap, w.id, w.rank, w.enqueued_at FROM (SELECT c.*, row_number() OVER (
                    PARTITION BY c.owner, c.workspace ORDER BY c.rank, c.enqueued_at, c.id) AS nth FROM candidates c) w
                WHERE w.workspace IS NULL OR w.nth = 1
                ORDER BY w.rank, w.enqueued_at, w.id LIMIT :slots),
              -- Exact caps, for the few owners picked only: each capped one's lock is taken (in owner
              -- order, so concurrent claims never deadlock on them) and its running counted again.
              capped AS (SELECT s.owner, outrun_owner_free(s.owner, :default_max_running::integer, s.n::integer) AS free
                FROM (SELECT owner, count(*) AS n FROM picked WHERE cap IS NOT NULL GROUP BY owner ORDER BY owner OFFSET 0) s),
              allowed AS (SELECT p.id FROM (SELECT p.*, row_number() OVER (PARTITION BY p.owner
                    ORDER BY p.rank, p.enqueued_at, p.id) AS k FROM picked p) p LEFT JOIN capped c ON c.owner = p.owner
                WHERE p.cap IS NULL OR p.k <= c.free),
              locked AS (SELECT e.id FROM executions e WHERE e.id IN (SELECT id FROM allowed) AND e.status = 'queued'
                FOR UPDATE SKIP LOCKED),
              claimed AS (UPDATE executions SET status = 'running', attempt = attempt + 1,
                lease_epoch = lease_epoch + 1, lease_owner = :holder, prev_output_epoch = output_epoch,
                output_epoch = lease_epoch + 1, started_at = now(), updated_at = now(), exit_code = NULL,
                error_code = NULL, error_message = NULL, stdout_total_bytes = 0, stderr_total_bytes = 0,
                stdout_truncated = false, stderr_truncated = false
                WHERE id IN (SELECT id FROM locked WHERE outrun_workspace_free(id)) AND status = 'queued'
                RETURNING id, owner, command, image, workdir, env::text AS env_json, labels::text AS labels_json,
              timeout_ms, max_output_bytes, status, attempt, max_attempts, lease_owner, lease_epoch, output_epoch,
              cancel_requested_at, idempotency_key, dispatch_seq, job_id, enqueued_at, created_at, started_at, finished_at,
              exit_code, error_code, error_message, stdout_total_bytes, stderr_total_bytes, stdin, stdin_bytes,
              stdin_closed_at, memory_mb, cpu_millis, pids, tmpfs_mb, network, starts_at,
              retry_max, retry_backoff_ms, retry_on, retries, last_failure, traceparent, tracestate,
              parent_id, depth, cancel_with_parent, identity_audience, progress_percent, progress_message, progress_at),
              lease AS (INSERT INTO leases (execution_id, epoch, owner, expires_at)
                SELECT id, lease_epoch, lease_owner, now() + :ttl_ms * interval '1 millisecond' FROM claimed
                ON CONFLICT (execution_id) DO UPDATE SET epoch = EXCLUDED.epoch, owner = EXCLUDED.owner,
                expires_at = EXCLUDED.expires_at, renewed_at = now(), cancel_requested = false
                RETURNING execution_id, expires_at)
            -- One row at least, so that an empty claim still says how many it picked, and whether
            -- queued work is left (capped, on a busy workspace, paused, or beyond the free slots).
            SELECT won.*, (SELECT count(*) FROM picked) AS picked,
              EXISTS (SELECT 1 FROM executions q WHERE q.status = 'queued' AND q.enqueued_at <= now()
                AND q.id NOT IN (SELECT id FROM locked)) AS more,
              -- When the next queued row that is not claimable yet becomes so (a delayed start, a
              -- paused hand-back): the node looks then, not at its next poll. The queued index's first row.
              (SELECT ceil(extract(epoch FROM min(q.enqueued_at) - now()) * 1000)::int8 FROM executions q
                WHERE q.status = 'queued' AND q.enqueued_at > now()) AS next_due_ms
            FROM (SELECT 1) one LEFT JOIN (
              SELECT claimed.*, lease.expires_at AS lease_expires_at, NULL::int8 AS stdout_end,
                NULL::int8 AS stderr_end, NULL::text AS webhook_json, pg_notify('outrun_changed', claimed.id::text) AS notified,
                -- Only a run with inputs (V7) costs the node a read of them.
                EXISTS (SELECT 1 FROM execution_inputs i WHERE i.execution_id = claimed.id) AS has_inputs
              FROM claimed JOIN lease ON lease.execution_id = claimed.id) won ON true""");

    public static final NamedSql CANCEL_BEFORE_RETRY = NamedSql.of("""
            SELECT cancel_requested_at IS NOT NULL FROM executions
             WHERE id = :id AND lease_epoch = :epoch AND status = 'running' FOR UPDATE""");

    public static final NamedSql IS_STALE_RUN = NamedSql.of("""
            SELECT EXISTS (SELECT 1 FROM executions WHERE id = :id) AND NOT EXISTS (SELECT 1 FROM leases
              WHERE execution_id = :id AND epoch = :epoch AND owner <> :incarnation
                AND expires_at > now() - :grace_ms * interval '1 millisecond')""");

    // --- stdin (StdinStore) ---
    public static final NamedSql WRITE_STDIN = NamedSql.of("""
            WITH w AS (UPDATE executions SET stdin_bytes = stdin_bytes + :len,
                stdin_closed_at = CASE WHEN :eof THEN now() END, updated_at = now()
                WHERE id = :id AND owner = :owner AND stdin <> 'none' AND stdin_closed_at IS NULL
                  AND status IN ('queued', 'running') AND stdin_bytes + :len <= :max_total
                RETURNING id, stdin_bytes - :len AS start_offset, stdin_bytes),
              ins AS (INSERT INTO execution_stdin (execution_id, start_offset, data)
                SELECT id, start_offset, :data FROM w WHERE :len > 0)
            SELECT start_offset, stdin_bytes, pg_notify('outrun_stdin', id::text) FROM w""");

    public static final NamedSql STDIN_WHY_NOT = NamedSql.of("""
            SELECT status, stdin, stdin_bytes, stdin_closed_at IS NOT NULL AS closed FROM executions
            WHERE id = :id AND owner = :owner""");

    public static final NamedSql STDIN_PENDING = NamedSql.of("""
            SELECT e.stdin_bytes, e.stdin_closed_at IS NOT NULL AS closed, s.start_offset, s.data
            FROM executions e LEFT JOIN LATERAL (SELECT start_offset, data FROM execution_stdin
                WHERE execution_id = e.id AND start_offset >= :from ORDER BY start_offset LIMIT 64) s ON true
            WHERE e.id = :id ORDER BY s.start_offset""");

    // --- the sweep (RedriveStore) and retention (RetentionStore) ---
    /**
     * Jobs whose execution ended but which still say ENQUEUED or PROCESSING: the node that ended
     * the execution stopped (SIGKILL, power) before its books wrote the job's end, which they do
     * within a second. Only executions that ended more than {@code :grace_ms} ago (a live node has
     * written its books by then) and since the sweep's last look (with the grace's overlap), by
     * the finished-at index and one job lookup each: the table's ended history is never scanned.
     */
    public static final NamedSql BOOKS_LEFT_OPEN = NamedSql.of("""
            SELECT x.id, x.job_id, x.owner, x.status, x.attempt, x.max_attempts, x.exit_code, x.error_code,
                   x.error_message
            FROM executions x
              -- bpchar against bpchar: JobRunr's primary key answers it.
              JOIN jobrunr_jobs j ON j.id = x.job_id::text::bpchar
            -- Never more than ten minutes back: a fleet upgraded onto a big history (its mark far behind)
            -- does not scan it all at its first sweep.
            WHERE x.finished_at > greatest((SELECT watermark FROM fleet_tasks WHERE name = 'sweep')
                - 2 * :grace_ms * interval '1 millisecond', now() - interval '10 minutes')
              AND x.finished_at < now() - :grace_ms * interval '1 millisecond'
              AND j.state IN ('ENQUEUED', 'PROCESSING')
            ORDER BY x.finished_at LIMIT :limit""");

    /** Drops the output (and what was written to stdin) of a batch of executions that ended before the age; their state and byte counts stay. */
    public static final NamedSql CLEAR_OUTPUT = NamedSql.of("""
            WITH batch AS (SELECT e.id FROM executions e WHERE e.finished_at < now() - :age_ms * interval '1 millisecond'
                AND (EXISTS (SELECT 1 FROM execution_output o WHERE o.execution_id = e.id)
                  OR EXISTS (SELECT 1 FROM execution_stdin s WHERE s.execution_id = e.id)) LIMIT :batch),
              gone AS (DELETE FROM execution_output o USING batch WHERE o.execution_id = batch.id),
              gone_stdin AS (DELETE FROM execution_stdin s USING batch WHERE s.execution_id = batch.id)
            UPDATE executions SET stdout_truncated = stdout_total_bytes > 0, stderr_truncated = stderr_total_bytes > 0
            WHERE id IN (SELECT id FROM batch)""");

    /** Deletes a batch of executions that ended before the age, with their output. */
    public static final NamedSql DELETE_ROWS = NamedSql.of("""
            WITH batch AS (SELECT id FROM executions e WHERE finished_at < now() - :age_ms * interval '1 millisecond'
                -- A webhook still being delivered (V20) keeps its execution: its event is made from the row.
                AND NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.execution_id = e.id AND w.state = 'pending')
                LIMIT :batch),
              gone AS (DELETE FROM execution_output o USING batch WHERE o.execution_id = batch.id)
            DELETE FROM executions WHERE id IN (SELECT id FROM batch)""");

    // --- for other packages: artifacts, owners' caps, the fleet's metrics, the listing ---
    public static final NamedSql OWNED = NamedSql.of("SELECT 1 FROM executions WHERE id = :id AND owner = :owner");

    public static final NamedSql RUNNING_UNDER_EPOCH = NamedSql.of(
            "SELECT 1 FROM executions WHERE id = :id AND lease_epoch = :epoch AND status = 'running'");

    public static final NamedSql QUEUED_OF_OWNER = NamedSql.of("""
            WITH own AS (SELECT max_queued FROM owners WHERE owner = :owner)
            SELECT (SELECT count(*) FROM (SELECT 1 FROM executions WHERE owner = :owner AND status = 'queued'
                    LIMIT coalesce((SELECT max_queued FROM own), :default_cap)) q),
                   (SELECT max_queued FROM own)""");

    public static final NamedSql FLEET_NOW = NamedSql.of("""
            SELECT (SELECT count(*) FROM executions WHERE status = 'queued'),
                   (SELECT count(*) FROM executions WHERE status = 'running'),
                   (SELECT count(*) FROM leases WHERE expires_at < now()),
                   (SELECT coalesce(extract(epoch FROM now() - min(enqueued_at)), 0) FROM executions WHERE status = 'queued')""");

    public static final NamedSql FLEET_ENDED = NamedSql.of("""
            SELECT status, count(*) FROM executions WHERE finished_at > now() - interval '5 minutes' GROUP BY status""");

    /**
     * The page's statement for each mix of filters (by the bits above): eight fixed statements,
     * built once at class load by concatenating fixed text, not one with {@code :x IS NULL OR}
     * branches, which would keep a generic plan from starting the index scan at the cursor.
     */
    public static final List<NamedSql> PAGE = IntStream.range(0, 8).mapToObj(v -> NamedSql.of("""
            SELECT id, status, left(command, 200), exit_code, attempt, created_at, started_at, finished_at, labels::text,
                   (extract(epoch from (coalesce(finished_at, now()) - started_at)) * 1000)::bigint
              FROM executions WHERE owner = :owner"""
            + ((v & PAGE_BY_STATUS) != 0 ? " AND status = :status" : "")
            + ((v & PAGE_BY_LABELS) != 0 ? " AND labels @> :labels::jsonb" : "")
            + ((v & PAGE_AFTER) != 0 ? " AND (created_at, id) < (:after_created, :after_id)" : "")
            // One row more than asked tells whether another page follows.
            + " ORDER BY created_at DESC, id DESC LIMIT :limit")).toList();

    private ExecutionsTable() {
    }
}
