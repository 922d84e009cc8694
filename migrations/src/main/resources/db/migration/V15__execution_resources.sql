-- Resources one execution asks of its sandbox (issue 27), clamped by the API to the operator's
-- maxima. NULL: the node's default (its --memory-mb, --cpus, --pids, --tmpfs-mb).
ALTER TABLE executions
    ADD COLUMN memory_mb  integer CHECK (memory_mb > 0),
    ADD COLUMN cpu_millis integer CHECK (cpu_millis > 0),
    ADD COLUMN pids       integer CHECK (pids > 0),
    ADD COLUMN tmpfs_mb   integer CHECK (tmpfs_mb > 0);
