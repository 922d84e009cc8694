-- How many times workers handed an execution back without running it (their sandbox refused to
-- start it: engine restarting, image gone). Counted so that an execution no sandbox can start
-- ends `failed` with the reason instead of bouncing between nodes forever.
ALTER TABLE executions ADD COLUMN handbacks integer NOT NULL DEFAULT 0 CHECK (handbacks >= 0);
