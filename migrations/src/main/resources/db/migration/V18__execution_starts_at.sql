-- Delayed starts (issue 28): the moment a submission asked its execution to start at
-- ("delayMs" or "startAt"); null: at once. The claim goes by enqueued_at, which the insert sets
-- to the same moment, so a delayed row waits exactly as a paused hand-back does.
ALTER TABLE executions ADD COLUMN starts_at timestamptz;
