-- The side effect, the dedupe keys, the evidence the checker reads, and the inbox.

-- One row per account, created by the first event that names it (an upsert).
CREATE TABLE accounts (
    id           BIGINT  PRIMARY KEY,
    credits      BIGINT  NOT NULL DEFAULT 0,
    plan         TEXT,
    plan_version BIGINT  NOT NULL DEFAULT 0,
    plan_created BIGINT  NOT NULL DEFAULT 0
);

-- Dedupe keys of check-then-insert and the atomic designs.
CREATE TABLE processed_events (
    event_id TEXT PRIMARY KEY
);

-- One row per credit applied, written in the same transaction as the credit. No UNIQUE: a
-- second row for one event is the evidence of a duplicate apply.
CREATE TABLE credit_ledger (
    id         BIGSERIAL PRIMARY KEY,
    event_id   TEXT      NOT NULL,
    account_id BIGINT    NOT NULL,
    amount     BIGINT    NOT NULL
);
CREATE INDEX credit_ledger_event ON credit_ledger (event_id);

-- Every change of an account's plan_version, written by the trigger below (never by receivers).
CREATE TABLE plan_changes (
    id          BIGSERIAL PRIMARY KEY,
    account_id  BIGINT  NOT NULL,
    old_version BIGINT  NOT NULL,
    new_version BIGINT  NOT NULL
);

CREATE FUNCTION record_plan_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.plan_version <> 0 THEN
            INSERT INTO plan_changes (account_id, old_version, new_version) VALUES (NEW.id, 0, NEW.plan_version);
        END IF;
    ELSIF NEW.plan_version <> OLD.plan_version THEN
        INSERT INTO plan_changes (account_id, old_version, new_version)
        VALUES (NEW.id, OLD.plan_version, NEW.plan_version);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER accounts_plan_changes
    AFTER INSERT OR UPDATE OF plan_version ON accounts
    FOR EACH ROW EXECUTE FUNCTION record_plan_change();

-- The inbox design: verified deliveries stored, then applied by workers.
CREATE TABLE webhook_inbox (
    id           BIGSERIAL   PRIMARY KEY,
    source       TEXT        NOT NULL,
    webhook_id   TEXT        NOT NULL,
    payload      TEXT        NOT NULL,
    received_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    processed_at TIMESTAMPTZ,
    attempts     BIGINT      NOT NULL DEFAULT 0,
    last_error   TEXT,
    UNIQUE (source, webhook_id)
);
CREATE INDEX webhook_inbox_pending ON webhook_inbox (id) WHERE processed_at IS NULL AND attempts < 5;
