-- Issue 41 moved the two interfaces JobRunr's jobs name: io.outrun.dispatch.ExecutionRunner is
-- io.outrun.core.books.ExecutionRunner, io.outrun.schedule.ScheduleFiring is
-- io.outrun.core.schedule.ScheduleFiring. JobRunr keeps a job's class and method in its JSON and
-- its signature, and warns at every node's start and at every firing about a scheduled or
-- recurring job whose class no longer exists. So the jobs not yet ended and every recurring job
-- (a schedule) are rewritten to the new names; an ended job is history and keeps its own. The
-- version column is left as it is: a node of the previous version that saves one of these jobs
-- during a rolling deploy writes its old names back (more warnings, nothing else) instead of
-- failing JobRunr's version check and losing a book's end.
-- On a new database JobRunr's tables come after this migration (JobRunr makes them): nothing to do.
DO $$
BEGIN
    IF to_regclass('jobrunr_jobs') IS NOT NULL THEN
        UPDATE jobrunr_jobs
           SET jobasjson = replace(replace(jobasjson,
                   'io.outrun.dispatch.ExecutionRunner', 'io.outrun.core.books.ExecutionRunner'),
                   'io.outrun.schedule.ScheduleFiring', 'io.outrun.core.schedule.ScheduleFiring'),
               jobsignature = replace(replace(jobsignature,
                   'io.outrun.dispatch.ExecutionRunner', 'io.outrun.core.books.ExecutionRunner'),
                   'io.outrun.schedule.ScheduleFiring', 'io.outrun.core.schedule.ScheduleFiring')
         WHERE state IN ('AWAITING', 'SCHEDULED', 'ENQUEUED', 'PROCESSING')
           AND (jobsignature LIKE 'io.outrun.dispatch.ExecutionRunner%'
                OR jobsignature LIKE 'io.outrun.schedule.ScheduleFiring%');
    END IF;
    IF to_regclass('jobrunr_recurring_jobs') IS NOT NULL THEN
        UPDATE jobrunr_recurring_jobs
           SET jobasjson = replace(jobasjson, 'io.outrun.schedule.ScheduleFiring', 'io.outrun.core.schedule.ScheduleFiring')
         WHERE jobasjson LIKE '%io.outrun.schedule.ScheduleFiring%';
    END IF;
END
$$;
