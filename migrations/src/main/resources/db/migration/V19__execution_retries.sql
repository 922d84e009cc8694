-- Retries of a failed command (issue 28): the policy a submission asked for (null: none), the
-- retries made, and what the last retried attempt ended with. A retry re-queues the row like a
-- lost attempt's re-drive; it is an attempt beyond max_attempts (which stays as submitted), so
-- lease re-drives keep their own budget: attempts may reach max_attempts + retries.
ALTER TABLE executions
    ADD COLUMN retry_max        integer CHECK (retry_max BETWEEN 1 AND 10),
    ADD COLUMN retry_backoff_ms bigint  CHECK (retry_backoff_ms >= 0),
    ADD COLUMN retry_on         text[],
    ADD COLUMN retries          integer NOT NULL DEFAULT 0 CHECK (retries >= 0),
    ADD COLUMN last_failure     text;

ALTER TABLE executions DROP CONSTRAINT attempts_bounded,
    ADD CONSTRAINT attempts_bounded CHECK (attempt <= max_attempts + retries);
