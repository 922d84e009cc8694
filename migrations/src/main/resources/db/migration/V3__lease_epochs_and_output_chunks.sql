-- Round two of the run lifecycle, in one migration (issues "Lease core, fleet grade" and "Fleet
-- scale"). Upgrade: stop every node of the older version, migrate, start the new nodes; running
-- rows keep their leases, expire, and are re-driven by the new sweep.
--
-- 1. Lease identity that is never reused. Every claim takes a new lease_epoch (never
--    decremented, not even by a hand-back) under the node's incarnation (node id + a per-process
--    id, kept in lease_owner). `attempt` is now only the count of runs that started.
-- 2. Narrow leases. A running execution's lease lives in its own small row (`leases`), renewed
--    by a HOT update that writes no index and none of the execution's wide row. The row exists
--    exactly while the execution is running (the trigger below removes it on every move out of
--    running); the sweep scans this table, whose size is the number of running executions.
-- 3. Append-only output. Output lives in `execution_output` as chunks at exact byte offsets per
--    (execution, epoch, stream); a flush inserts only new bytes. The head and tail bounds are
--    kept by the writer (chunks that fall out of the kept tail are deleted in batches) and by
--    the reader (which takes the head run from offset 0 and the tail run ending at the last
--    byte). The execution shows the output of `output_epoch`: a claim points it at its epoch, a
--    hand-back points it back, so a claim that never ran hides nothing.
-- 4. Fleet bookkeeping: live nodes (`nodes`, upserted by each node's heartbeat; instant pickup
--    wakes a node chosen from it) and fleet-wide tasks held by one node at a time (`fleet_tasks`:
--    the sweep, and the watermark of lost-dispatch detection).

ALTER TABLE executions
    ADD COLUMN lease_epoch       bigint NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0),
    ADD COLUMN output_epoch      bigint NOT NULL DEFAULT 0,
    ADD COLUMN prev_output_epoch bigint NOT NULL DEFAULT 0;

-- Existing rows: the epoch starts at the attempt count, so it only grows from here.
UPDATE executions SET lease_epoch = attempt, output_epoch = attempt, prev_output_epoch = attempt
    WHERE attempt > 0;

CREATE TABLE leases (
    execution_id     uuid        PRIMARY KEY,
    epoch            bigint      NOT NULL,
    owner            text        NOT NULL,      -- the holder's incarnation
    expires_at       timestamptz NOT NULL,
    renewed_at       timestamptz NOT NULL DEFAULT now(),
    -- Copied here by a cancel request, so a renewal learns of it without reading executions.
    cancel_requested boolean     NOT NULL DEFAULT false
) WITH (fillfactor = 50);  -- room on each page for HOT renewals

INSERT INTO leases (execution_id, epoch, owner, expires_at, renewed_at, cancel_requested)
    SELECT id, lease_epoch, lease_owner, coalesce(lease_expires_at, now()), coalesce(heartbeat_at, now()),
           cancel_requested_at IS NOT NULL
    FROM executions WHERE status = 'running';

CREATE TABLE execution_output (
    execution_id uuid     NOT NULL,
    epoch        bigint   NOT NULL,
    stream       smallint NOT NULL CHECK (stream IN (1, 2)),   -- 1 stdout, 2 stderr
    start_offset bigint   NOT NULL CHECK (start_offset >= 0),
    end_offset   bigint   NOT NULL,
    data         bytea    NOT NULL,
    CONSTRAINT chunk_length CHECK (end_offset = start_offset + octet_length(data) AND end_offset > start_offset),
    PRIMARY KEY (execution_id, epoch, stream, start_offset)
);

-- What was kept of earlier output moves into chunks: the head at 0, the tail ending at the total.
INSERT INTO execution_output (execution_id, epoch, stream, start_offset, end_offset, data)
    SELECT id, output_epoch, 1, 0, octet_length(stdout_head), stdout_head FROM executions WHERE octet_length(stdout_head) > 0
    UNION ALL
    SELECT id, output_epoch, 1, stdout_total_bytes - octet_length(stdout_tail), stdout_total_bytes, stdout_tail
        FROM executions WHERE octet_length(stdout_tail) > 0
    UNION ALL
    SELECT id, output_epoch, 2, 0, octet_length(stderr_head), stderr_head FROM executions WHERE octet_length(stderr_head) > 0
    UNION ALL
    SELECT id, output_epoch, 2, stderr_total_bytes - octet_length(stderr_tail), stderr_total_bytes, stderr_tail
        FROM executions WHERE octet_length(stderr_tail) > 0;

-- The lease moved out; the byte counts stay (written once, at the end of an attempt).
ALTER TABLE executions DROP CONSTRAINT running_has_lease;
DROP INDEX executions_running_lease;
ALTER TABLE executions
    DROP COLUMN lease_expires_at,
    DROP COLUMN heartbeat_at,
    DROP COLUMN stdout_head, DROP COLUMN stdout_tail, DROP COLUMN stderr_head, DROP COLUMN stderr_tail;
ALTER TABLE executions ADD CONSTRAINT running_has_owner CHECK (status <> 'running' OR lease_owner IS NOT NULL);

-- Every move out of running drops the lease row, whichever statement makes it: one place, so a
-- lease can never outlive its run's state.
CREATE FUNCTION executions_drop_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM leases WHERE execution_id = NEW.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER executions_lease_gone AFTER UPDATE OF status ON executions
    FOR EACH ROW WHEN (OLD.status = 'running' AND NEW.status <> 'running')
    EXECUTE FUNCTION executions_drop_lease();

-- An owner's listing filtered by status, newest first.
CREATE INDEX executions_owner_status_created ON executions (owner, status, created_at DESC, id DESC);

CREATE TABLE nodes (
    incarnation  text        PRIMARY KEY,
    node_id      text        NOT NULL,
    version      text        NOT NULL,
    wake_channel text        NOT NULL,
    slots        integer     NOT NULL,
    running      integer     NOT NULL,
    draining     boolean     NOT NULL DEFAULT false,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 50);

CREATE TABLE fleet_tasks (
    name        text        PRIMARY KEY,
    holder      text,                       -- the incarnation that runs it now
    held_until  timestamptz NOT NULL DEFAULT '-infinity',
    watermark   timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 50);
INSERT INTO fleet_tasks (name) VALUES ('sweep');
-- Lost-dispatch detection joins a recently ended JobRunr job to the queued row it carried.
CREATE INDEX executions_queued_job ON executions (job_id) WHERE status = 'queued';
-- The first sweep after the upgrade checks every queued row once; later ones only what changed.
UPDATE fleet_tasks SET watermark = '-infinity' WHERE name = 'sweep';
