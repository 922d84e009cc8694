-- Sharing one fleet between owners (issue 16).
--
-- Caps: an owner's running executions are capped fleet-wide (`owners.max_running`, else the
-- operator's default passed in by the node), checked inside the claim itself under a per-owner
-- transaction lock, so no race lets cap + 1 run. Queued ones are capped at submission.
--
-- Fair dispatch: JobRunr stays the dispatcher, but an owner keeps only a small window of its
-- queued executions in JobRunr's queue; the rest wait `held` (still `queued` to the user, with
-- `held_since` set and no job) and are released, oldest first, as that owner's executions are
-- claimed or end. JobRunr takes the oldest enqueued job first, so a burst of one owner sits
-- mostly outside its queue and another owner's first execution is behind a window, not a burst.

CREATE TABLE owners (
    owner        text        PRIMARY KEY CHECK (length(owner) BETWEEN 1 AND 200),
    max_running  integer     CHECK (max_running > 0),   -- NULL: the operator's default
    max_queued   integer     CHECK (max_queued > 0),    -- NULL: the operator's default
    updated_at   timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE executions ADD COLUMN held_since timestamptz;

-- What an owner has in JobRunr's queue (its window) and what it has held, each counted or
-- taken oldest first without reading the other.
CREATE INDEX executions_dispatched ON executions (owner) WHERE status = 'queued' AND held_since IS NULL;
CREATE INDEX executions_held ON executions (owner, created_at, id) WHERE status = 'queued' AND held_since IS NOT NULL;

-- Admin tokens may read fleet-wide views (GET /v1/admin/nodes); owners' tokens never.
ALTER TABLE api_tokens ADD COLUMN admin boolean NOT NULL DEFAULT false;

-- How many more of an owner's queued executions may enter JobRunr's queue now: the window less
-- those already there, and under a running cap also the cap less running and dispatched ones.
-- Counts stop at what they need (LIMIT), so a large backlog costs nothing here.
CREATE FUNCTION outrun_owner_room(p_owner text, p_default_max_running integer, p_window integer)
    RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cap integer;
    waiting integer;
    running integer;
    room integer;
BEGIN
    cap := coalesce((SELECT max_running FROM owners WHERE owner = p_owner), p_default_max_running);
    SELECT count(*) INTO waiting FROM (SELECT 1 FROM executions
        WHERE owner = p_owner AND status = 'queued' AND held_since IS NULL LIMIT p_window) w;
    room := p_window - waiting;
    IF cap IS NOT NULL THEN
        SELECT count(*) INTO running FROM (SELECT 1 FROM executions
            WHERE owner = p_owner AND status = 'running' LIMIT cap) r;
        room := least(room, cap - running - waiting);
    END IF;
    RETURN greatest(room, 0);
END
$$;

-- Whether one more of an owner's executions may start now. Under a cap it takes the owner's
-- transaction lock first and counts after: a function's statements see what committed before
-- them (READ COMMITTED), so a concurrent claim of the same owner waits for ours to commit and
-- then counts it. Without a cap it costs one primary-key lookup and takes no lock.
CREATE FUNCTION outrun_owner_may_run(p_owner text, p_default_max_running integer)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cap integer;
    running integer;
BEGIN
    cap := coalesce((SELECT max_running FROM owners WHERE owner = p_owner), p_default_max_running);
    IF cap IS NULL THEN
        RETURN true;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('outrun.owner:' || p_owner, 0));
    SELECT count(*) INTO running FROM (SELECT 1 FROM executions
        WHERE owner = p_owner AND status = 'running' LIMIT cap) r;
    RETURN running < cap;
END
$$;
