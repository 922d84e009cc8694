-- A run's stdin (issue 26): /dev/null unless the submission keeps it open (a pipe) or asks for a
-- terminal. What its owner writes is stored like output, in order at exact byte offsets, so that
-- any API node takes a write, the worker that runs the execution feeds it to the command, and a
-- re-run attempt (its worker died) starts with everything written so far.
ALTER TABLE executions
    ADD COLUMN stdin text NOT NULL DEFAULT 'none' CHECK (stdin IN ('none', 'pipe', 'tty')),
    -- Bytes written so far; the next write starts here (the row lock orders concurrent writers).
    ADD COLUMN stdin_bytes bigint NOT NULL DEFAULT 0,
    -- Set by the write that sent end of file: nothing more is taken.
    ADD COLUMN stdin_closed_at timestamptz;

CREATE TABLE execution_stdin (
    execution_id uuid        NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    start_offset bigint      NOT NULL,
    data         bytea       NOT NULL,
    written_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (execution_id, start_offset)
);
