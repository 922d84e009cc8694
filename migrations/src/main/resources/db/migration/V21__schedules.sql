-- Recurring schedules (issue 28): an owner's named submission and when to fire it. JobRunr keeps
-- the timing (a recurring job per schedule, shown on the dashboard's Recurring Jobs page, whose
-- firings are jobs of their own); Outrun turns each firing into an execution labelled
-- schedule=<name>, once, keyed by the firing job's id.
CREATE TABLE schedules (
    owner             text        NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
    name              text        NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    recurring_job_id  text        NOT NULL UNIQUE,
    cron              text,
    every_ms          bigint      CHECK (every_ms >= 5000),
    zone              text        NOT NULL DEFAULT 'UTC',
    overlap           text        NOT NULL CHECK (overlap IN ('skip', 'queue')),
    submission        jsonb       NOT NULL,  -- the checked submission, as the API node that took it made it
    created_at        timestamptz NOT NULL DEFAULT now(),
    last_fired_at     timestamptz,
    last_execution_id uuid,
    fired             bigint      NOT NULL DEFAULT 0,
    skipped           bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, name),
    CHECK ((cron IS NULL) <> (every_ms IS NULL))
);
