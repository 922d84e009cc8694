-- Completion webhooks (issue 28). An owner's signing secret, sealed with the operator's key as
-- secrets are (V17): Standard Webhooks signs with the secret itself, so it is kept, never hashed.
-- After a rotation the previous secret signs too (a second v1 signature) for the delivery window,
-- so receivers can move to the new one without refusing events meanwhile.
CREATE TABLE webhook_secrets (
    owner               text        PRIMARY KEY CHECK (length(owner) BETWEEN 1 AND 200),
    nonce               bytea       NOT NULL CHECK (length(nonce) = 12),
    ciphertext          bytea       NOT NULL,
    key_id              text        NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    previous_nonce      bytea,
    previous_ciphertext bytea,
    previous_key_id     text,
    rotated_at          timestamptz
);

-- One row per execution submitted with a webhook: stored with the execution, made due by its
-- end (the trigger below, in the end's own transaction, whichever statement ends it), then
-- sent by any worker node: a node takes a due row for a bounded time (next_attempt_at moves
-- past the attempt's timeout), so a node killed mid-send leaves it to another; each attempt's
-- outcome is written back under its attempt number, so a late writer changes nothing.
CREATE TABLE webhooks (
    execution_id    uuid        PRIMARY KEY REFERENCES executions (id) ON DELETE CASCADE,
    url             text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    -- waiting: the execution has not ended; pending: to send (again) at next_attempt_at;
    -- delivered: a 2xx came back; failed: no 2xx within the delivery window.
    state           text        NOT NULL DEFAULT 'waiting'
                                CHECK (state IN ('waiting', 'pending', 'delivered', 'failed')),
    event_id        text,       -- webhook-id: the same on every attempt, the receiver's dedupe key
    ended_at        timestamptz,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_attempt_at timestamptz,
    last_status     integer,    -- the receiver's HTTP status (null: no answer)
    last_error      text,
    delivered_at    timestamptz,
    CHECK (state = 'waiting' OR event_id IS NOT NULL AND ended_at IS NOT NULL),
    CHECK (state <> 'pending' OR next_attempt_at IS NOT NULL)
);
CREATE INDEX webhooks_due ON webhooks (next_attempt_at) WHERE state = 'pending';

CREATE FUNCTION outrun_webhook_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE webhooks SET state = 'pending', event_id = 'msg_' || replace(gen_random_uuid()::text, '-', ''),
        ended_at = now(), next_attempt_at = now()
      WHERE execution_id = NEW.id AND state = 'waiting';
    IF FOUND THEN
        PERFORM pg_notify('outrun_webhook', NEW.id::text);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER executions_webhook_due AFTER UPDATE OF status ON executions
    FOR EACH ROW WHEN (NEW.status IN ('succeeded', 'failed', 'timed_out', 'cancelled') AND OLD.status <> NEW.status)
    EXECUTE FUNCTION outrun_webhook_due();
