-- Issue 31: a signed identity for every run, child executions, progress.
--
-- The fleet's signing keys (io.outrun.identity.SigningKeys). The private half is sealed under
-- the secrets key (AES-GCM, as secrets are); the public half is a JWK, published at
-- /.well-known/jwks.json while published_until is null or ahead. At most one key is current
-- (retired_at null): the one tokens are signed with. A rotation retires it and keeps it published
-- for as long as a token it signed may live.
CREATE TABLE signing_keys (
    kid              text        PRIMARY KEY CHECK (length(kid) BETWEEN 1 AND 64),
    alg              text        NOT NULL CHECK (alg IN ('ES256')),
    public_jwk       text        NOT NULL,
    private_nonce    bytea       NOT NULL,
    private_sealed   bytea       NOT NULL,
    sealed_key_id    text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    retired_at       timestamptz,
    published_until  timestamptz,
    CHECK ((retired_at IS NULL) = (published_until IS NULL))
);
CREATE UNIQUE INDEX signing_keys_one_current ON signing_keys ((true)) WHERE retired_at IS NULL;

-- A child execution (submitted with its parent's run token) names its parent; depth 0 is a root.
-- No foreign key: retention deletes a parent's row on its own schedule, and a child keeps its id.
-- identity_audience: the aud of the run's OUTRUN_ID_TOKEN (null: no ID token was asked for).
-- progress_*: the latest progress the run reported (POST /v1/executions/{id}/progress).
ALTER TABLE executions
  ADD COLUMN parent_id          uuid,
  ADD COLUMN depth              smallint NOT NULL DEFAULT 0 CHECK (depth >= 0),
  ADD COLUMN cancel_with_parent boolean NOT NULL DEFAULT true,
  ADD COLUMN identity_audience  text CHECK (identity_audience IS NULL OR length(identity_audience) BETWEEN 1 AND 200),
  ADD COLUMN progress_percent   smallint CHECK (progress_percent IS NULL OR progress_percent BETWEEN 0 AND 100),
  ADD COLUMN progress_message   text CHECK (progress_message IS NULL OR length(progress_message) <= 500),
  ADD COLUMN progress_at        timestamptz;

-- A parent's children, and (partial) the live children that must end with an ended parent.
CREATE INDEX executions_parent ON executions (parent_id) WHERE parent_id IS NOT NULL;
