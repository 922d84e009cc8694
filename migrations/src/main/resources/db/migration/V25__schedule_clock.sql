-- Schedules at fleet scale (issue 45): Outrun keeps its schedules' time itself. JobRunr OSS fires
-- recurring jobs at its 5 s poll and documents about 100 of them; a fleet of 50 owners keeps
-- 1,000. Each schedule now says when the fleet must next look at it (next_fire_at, indexed) and
-- up to when its firings were handled (fired_through: every firing time at or before it fired,
-- was skipped or was let go by its catch-up policy). The fleet's clock takes the due schedules in
-- one statement (FOR UPDATE SKIP LOCKED), fires them and moves both forward in one transaction.
-- JobRunr keeps the recurring job of each schedule for the dashboard, and a job per firing.
ALTER TABLE schedules
    ADD COLUMN next_fire_at        timestamptz,
    ADD COLUMN fired_through       timestamptz,
    ADD COLUMN paused              boolean NOT NULL DEFAULT false,
    ADD COLUMN catch_up            text    NOT NULL DEFAULT 'one' CHECK (catch_up IN ('none', 'one', 'all')),
    ADD COLUMN catch_up_window_ms  bigint  NOT NULL DEFAULT 86400000
        CHECK (catch_up_window_ms BETWEEN 1000 AND 604800000);

-- A schedule made before this version starts from now: what JobRunr had fired is behind it.
UPDATE schedules SET next_fire_at = now(), fired_through = now();

ALTER TABLE schedules
    ALTER COLUMN next_fire_at SET DEFAULT now(),
    ALTER COLUMN next_fire_at SET NOT NULL,
    ALTER COLUMN fired_through SET DEFAULT now(),
    ALTER COLUMN fired_through SET NOT NULL;

-- The clock's one look: due and not paused, soonest first.
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE NOT paused;
