-- Files in, artifacts out, full output kept, named workspaces (issue 11).
--
-- Everything is stored in PostgreSQL, so any API node of the fleet can serve it, and in chunks of
-- at most 1 MiB, so no row or bytea value grows without bound (a 200 MB artifact is 200 rows).
-- Artifacts go with their execution (ON DELETE CASCADE: `outrun prune` deletes executions);
-- workspaces belong to an owner and live until deleted.

-- What a submission asked for beyond its command: input files (one tar, bounded by the API's
-- files limit), artifact globs and a workspace name. Written in the insert's transaction.
CREATE TABLE execution_inputs (
    execution_id uuid  PRIMARY KEY REFERENCES executions (id) ON DELETE CASCADE,
    files_tar    bytea,                 -- null: no input files
    artifacts    jsonb NOT NULL DEFAULT '[]',
    workspace    text
);

-- One row per collected file, per kept full stream (`stdout`, `stderr`) and per file that was
-- asked for but not kept (status says why): what is over a limit is reported, not dropped.
CREATE TABLE artifacts (
    execution_id uuid        NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    name         text        NOT NULL,  -- path relative to the workdir, or stdout / stderr
    status       text        NOT NULL CHECK (status IN ('stored', 'over_limit', 'not_regular', 'incomplete', 'missing')),
    size         bigint      NOT NULL,  -- bytes of the content as served (decompressed)
    sha256       text,                  -- of the content as served; null unless stored
    encoding     text        NOT NULL DEFAULT 'identity' CHECK (encoding IN ('identity', 'gzip')),
    detail       text,                  -- why it is not stored, or what is missing
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (execution_id, name)
);

CREATE TABLE artifact_chunks (
    execution_id uuid   NOT NULL,
    name         text   NOT NULL,
    seq          int    NOT NULL CHECK (seq >= 0),
    data         bytea  NOT NULL,       -- at most 1 MiB, as stored (gzip for encoding gzip)
    PRIMARY KEY (execution_id, name, seq),
    FOREIGN KEY (execution_id, name) REFERENCES artifacts (execution_id, name) ON DELETE CASCADE
);

-- A workspace: a tar of the workdir as a run left it, restored into the next run that names it.
CREATE TABLE workspaces (
    owner        text        NOT NULL,
    name         text        NOT NULL,
    size         bigint      NOT NULL,
    sha256       text        NOT NULL,
    saved_at     timestamptz NOT NULL DEFAULT now(),
    saved_by     uuid,                  -- the execution whose end saved it
    PRIMARY KEY (owner, name)
);

CREATE TABLE workspace_chunks (
    owner  text  NOT NULL,
    name   text  NOT NULL,
    seq    int   NOT NULL CHECK (seq >= 0),
    data   bytea NOT NULL,
    PRIMARY KEY (owner, name, seq),
    FOREIGN KEY (owner, name) REFERENCES workspaces (owner, name) ON DELETE CASCADE
);

-- Finding the running execution of an (owner, workspace): the claim's serialization check.
CREATE INDEX execution_inputs_workspace ON execution_inputs (workspace) WHERE workspace IS NOT NULL;

-- Two runs of one workspace never interleave: a claim is refused (the execution is held, as under
-- an owner's running cap) while another execution of the same (owner, workspace) is running, and
-- a run saves its workspace before its end is written. Under the workspace's transaction lock, so
-- two claims of one workspace never both win (the second counts the first once it commits).
CREATE FUNCTION outrun_workspace_free(p_id uuid) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    ws text;
    own text;
BEGIN
    SELECT i.workspace, e.owner INTO ws, own
        FROM execution_inputs i JOIN executions e ON e.id = i.execution_id WHERE i.execution_id = p_id;
    IF ws IS NULL THEN
        RETURN true;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('outrun.workspace:' || own || '/' || ws, 0));
    RETURN NOT outrun_workspace_busy(p_id);
END
$$;

-- Whether another execution of the same (owner, workspace) runs now; no lock (the release of held
-- work skips such executions; a race only costs one refused claim).
CREATE FUNCTION outrun_workspace_busy(p_id uuid) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM execution_inputs mine
        JOIN executions me ON me.id = mine.execution_id
        JOIN execution_inputs other ON other.workspace = mine.workspace AND other.execution_id <> mine.execution_id
        JOIN executions oe ON oe.id = other.execution_id AND oe.owner = me.owner AND oe.status = 'running'
        WHERE mine.execution_id = p_id AND mine.workspace IS NOT NULL)
$$;
