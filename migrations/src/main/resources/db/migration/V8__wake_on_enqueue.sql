-- Instant pickup's wake-up is sent by the transaction that enqueues the work, not by a statement
-- after it: a trigger on JobRunr's jobs table (created by the node once JobRunr has made that table,
-- see JobRunrStorage) calls outrun_wake_on_enqueue() for every job that becomes ENQUEUED, whoever
-- enqueued it: a submission, a release of held work, a re-drive, a delayed retry coming due, an
-- admin's requeue on the dashboard. PostgreSQL delivers the NOTIFY when the job commits, the very
-- moment a node can see it, and the enqueue pays no round trip and no commit of its own for it.

-- Wakes at most `wanted` live nodes that had a free slot at their last heartbeat, chosen at random,
-- each on its own channel: new work wakes only as many nodes as it needs, never the whole fleet
-- into an onboarding query. When fewer than `wanted` nodes had a free slot, every busy node is told
-- as well: it has no slot to onboard into, but its next run's end looks for the work (a busy node's
-- job ends otherwise skip that query, see OnboardingGate). Returns how many nodes were told.
CREATE FUNCTION outrun_wake_nodes(wanted integer) RETURNS integer LANGUAGE sql VOLATILE AS $$
    WITH live AS (SELECT wake_channel, running < slots AS free FROM nodes
        WHERE heartbeat_at > now() - interval '1 minute' AND NOT draining),
      free AS (SELECT wake_channel FROM live WHERE free ORDER BY random() LIMIT wanted),
      busy AS (SELECT wake_channel FROM live WHERE NOT free AND (SELECT count(*) FROM free) < wanted)
    SELECT count(pg_notify(n.wake_channel, n.why))::integer FROM (SELECT wake_channel, 'free' AS why FROM free
      UNION ALL SELECT wake_channel, 'busy' FROM busy) n
$$;

-- A wake-up is a hint (every node also polls): it must never fail or undo the job's write, so a
-- failure here (the NOTIFY queue full, say) is only a warning in the server's log.
CREATE FUNCTION outrun_wake_on_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        PERFORM outrun_wake_nodes(1);
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'outrun: no wake-up sent for JobRunr job %: %', NEW.id, SQLERRM;
    END;
    RETURN NULL;
END
$$;
