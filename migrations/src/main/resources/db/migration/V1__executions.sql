-- Outrun's own schema. JobRunr creates its tables (jobrunr_*) itself in the same database.
-- Every time below is the database's clock: nodes never write their own now().

CREATE TABLE executions (
    id                  uuid        PRIMARY KEY,
    owner               text        NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
    command             text        NOT NULL,
    image               text,
    workdir             text,
    env                 jsonb       NOT NULL DEFAULT '{}'::jsonb,
    labels              jsonb       NOT NULL DEFAULT '{}'::jsonb,
    timeout_ms          bigint      NOT NULL CHECK (timeout_ms > 0),
    max_output_bytes    integer     NOT NULL CHECK (max_output_bytes > 0),
    status              text        NOT NULL DEFAULT 'queued'
                        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled')),
    attempt             integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts        integer     NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    lease_owner         text,
    lease_expires_at    timestamptz,
    heartbeat_at        timestamptz,
    cancel_requested_at timestamptz,
    idempotency_key     text,
    -- Bumped each time the row is (re)queued for dispatch; the JobRunr job that carries the
    -- dispatch has a UUID derived from (id, dispatch_seq), so every enqueue is idempotent and the
    -- sweep can tell whether the current dispatch's job still exists.
    dispatch_seq        integer     NOT NULL DEFAULT 1,
    job_id              uuid        GENERATED ALWAYS AS (md5(id::text || ':' || dispatch_seq::text)::uuid) STORED,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    enqueued_at         timestamptz NOT NULL DEFAULT now(),
    started_at          timestamptz,
    finished_at         timestamptz,
    exit_code           integer,
    error_code          text,
    error_message       text,
    -- Output is kept bounded per stream: the first bytes (head) and the last bytes (tail);
    -- the tail starts at byte offset total_bytes - length(tail), so cursors stay exact.
    stdout_head         bytea       NOT NULL DEFAULT ''::bytea,
    stdout_tail         bytea       NOT NULL DEFAULT ''::bytea,
    stderr_head         bytea       NOT NULL DEFAULT ''::bytea,
    stderr_tail         bytea       NOT NULL DEFAULT ''::bytea,
    stdout_truncated    boolean     NOT NULL DEFAULT false,
    stderr_truncated    boolean     NOT NULL DEFAULT false,
    stdout_total_bytes  bigint      NOT NULL DEFAULT 0,
    stderr_total_bytes  bigint      NOT NULL DEFAULT 0,
    -- A running row always has a lease; a terminal row has a finish time and no lease.
    CONSTRAINT running_has_lease CHECK (status <> 'running' OR (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT terminal_is_finished CHECK (status IN ('queued', 'running') OR (finished_at IS NOT NULL AND lease_owner IS NULL)),
    CONSTRAINT attempts_bounded CHECK (attempt <= max_attempts)
);

-- One execution per (owner, key): a retried submit returns the first one.
CREATE UNIQUE INDEX executions_owner_idempotency_key ON executions (owner, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- An owner's listing, newest first, paginated by (created_at, id).
CREATE INDEX executions_owner_created ON executions (owner, created_at DESC, id DESC);

-- The re-drive sweep: expired leases of running rows, and queued rows waiting too long.
CREATE INDEX executions_running_lease ON executions (lease_expires_at) WHERE status = 'running';
CREATE INDEX executions_queued ON executions (enqueued_at) WHERE status = 'queued';

-- Orphan clean-up and retention look at terminal rows by finish time.
CREATE INDEX executions_finished ON executions (finished_at) WHERE finished_at IS NOT NULL;

-- Owners authenticate with bearer tokens; only a SHA-256 of each token is stored.
CREATE TABLE api_tokens (
    id          uuid        PRIMARY KEY,
    owner       text        NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
    token_hash  bytea       NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX api_tokens_owner ON api_tokens (owner);

-- The state machine, enforced by the database too: a statement that would make an illegal move
-- fails instead of corrupting a row. io.outrun.execution.ExecutionStatus holds the same table.
CREATE FUNCTION executions_check_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status THEN
        IF OLD.status IN ('succeeded', 'failed', 'timed_out', 'cancelled') THEN
            RAISE EXCEPTION 'execution % is % (terminal) and cannot change', OLD.id, OLD.status
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF (OLD.status, NEW.status) IN (
            ('queued', 'running'), ('queued', 'cancelled'),
            ('running', 'succeeded'), ('running', 'failed'), ('running', 'timed_out'),
            ('running', 'cancelled'), ('running', 'queued')) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'illegal execution transition % -> % for %', OLD.status, NEW.status, OLD.id
        USING ERRCODE = 'check_violation';
END
$$;

CREATE TRIGGER executions_transition BEFORE UPDATE OF status ON executions
    FOR EACH ROW EXECUTE FUNCTION executions_check_transition();
