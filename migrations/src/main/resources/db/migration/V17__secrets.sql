-- Secrets (issue 27): an owner's named values, sealed with the operator's key (AES-256-GCM; the
-- owner and name are its associated data), never stored in the clear. A run names the ones it
-- needs in its inputs; the node that runs it opens them.
CREATE TABLE secrets (
    owner       text        NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
    name        text        NOT NULL CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$'),
    nonce       bytea       NOT NULL CHECK (length(nonce) = 12),
    ciphertext  bytea       NOT NULL,
    key_id      text        NOT NULL,  -- which key sealed it (a hash prefix of the key, not the key)
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, name)
);

ALTER TABLE execution_inputs ADD COLUMN secrets text[] NOT NULL DEFAULT '{}';
