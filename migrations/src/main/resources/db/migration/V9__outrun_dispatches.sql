-- Outrun dispatches, JobRunr keeps the books (issue 24). Each worker node claims queued
-- executions itself, fairly, in one statement (LeaseStore.CLAIM); JobRunr's servers never pick an
-- execution job up, they only show it. So work is no longer "held" outside JobRunr's queue:
-- every queued row is claimable, and the claim itself applies running caps and workspace
-- exclusivity. Upgrade: stop every node of the older version, migrate, start the new nodes.

-- Held rows become plain queued rows (they keep their place: enqueued_at is unchanged).
DROP INDEX IF EXISTS executions_held;
DROP INDEX IF EXISTS executions_dispatched;
DROP FUNCTION IF EXISTS outrun_owner_room(text, integer, integer);
DROP FUNCTION IF EXISTS outrun_owner_may_run(text, integer);
ALTER TABLE executions DROP COLUMN held_since;

-- enqueued_at is the row's place in its owner's queue and the time from which it may be claimed:
-- a hand-back sets it a few seconds ahead so that the trouble that refused the run can pass.

-- The claim walks the owners with queued work (a skip scan of this index) and takes each one's
-- oldest claimable rows from it, so a large backlog costs a claim only the rows it may take.
CREATE INDEX executions_queued_owner ON executions (owner, enqueued_at, id) WHERE status = 'queued';

-- How many more executions an owner may start now: its running cap (owners.max_running, else the
-- operator's default) less what runs, at most p_want; p_want when it has no cap. Under a cap it
-- takes the owner's transaction lock first and counts after: a function's statements see what
-- committed before them (READ COMMITTED), so a concurrent claim of the same owner waits for ours
-- to commit and then counts it. Without a cap it costs one primary-key lookup and takes no lock.
CREATE FUNCTION outrun_owner_free(p_owner text, p_default_max_running integer, p_want integer)
    RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cap integer;
    running integer;
BEGIN
    cap := coalesce((SELECT max_running FROM owners WHERE owner = p_owner), p_default_max_running);
    IF cap IS NULL THEN
        RETURN p_want;
    END IF;
    -- The count below is only exact with a snapshot per statement: under REPEATABLE READ (a
    -- database default an operator may set, which PgBouncer's transaction mode would not let a
    -- node override) two claims could both see room. Refuse loudly rather than pass the cap.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'outrun: claims under a running cap need READ COMMITTED, not %',
            current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('outrun.owner:' || p_owner, 0));
    SELECT count(*) INTO running FROM (SELECT 1 FROM executions
        WHERE owner = p_owner AND status = 'running' LIMIT cap) r;
    RETURN greatest(least(cap - running, p_want), 0);
END
$$;

-- The sweep's dashboard watch joins a job an admin changed to the queued or running execution it
-- carries now (the lost-dispatch repair that used the queued-only index is gone: a claim no
-- longer needs its job, and the claiming node writes a missing one).
DROP INDEX IF EXISTS executions_queued_job;
CREATE INDEX executions_live_job ON executions (job_id) WHERE status IN ('queued', 'running');
