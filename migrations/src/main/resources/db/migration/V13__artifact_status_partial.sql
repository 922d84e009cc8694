-- A workspace saved without some entries (a FIFO, a socket, a name no file system of the sandbox
-- could hold again) reports it under @workspace with status 'partial' (issue 25 #8): the save
-- happened, and the detail names what the next run will not find.
ALTER TABLE artifacts DROP CONSTRAINT artifacts_status_check;
ALTER TABLE artifacts ADD CONSTRAINT artifacts_status_check
    CHECK (status IN ('stored', 'over_limit', 'not_regular', 'incomplete', 'missing', 'partial'));
