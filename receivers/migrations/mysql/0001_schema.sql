-- The receivers' schema on MySQL and MariaDB: the same tables, keys and evidence as Postgres's
-- three migrations leave (migrations/postgres/), in MySQL's spelling. InnoDB throughout (the
-- designs need transactions and row locks). Every id column compares bytes (utf8mb4_bin): under
-- the server's default case-insensitive collation, `evt_A` and `evt_a` would be one key. An id
-- is at most 255 characters (a longer one is refused by strict mode, answered 5xx, never cut).

-- One row per account, created by the first event that names it (an upsert).
CREATE TABLE accounts (
    id           BIGINT  NOT NULL PRIMARY KEY,
    credits      BIGINT  NOT NULL DEFAULT 0,
    plan         TEXT,
    plan_version BIGINT  NOT NULL DEFAULT 0,
    plan_created BIGINT  NOT NULL DEFAULT 0
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Dedupe keys of check-then-insert and the atomic designs, with the SHA-256 (hex) of the body
-- each was first stored with.
CREATE TABLE processed_events (
    event_id    VARCHAR(255) NOT NULL PRIMARY KEY,
    body_sha256 CHAR(64)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Check-in-transaction's keys: an index that is NOT unique, so only the transaction's isolation
-- keeps two copies of an event from both applying (the design's whole point).
CREATE TABLE checked_events (
    event_id    VARCHAR(255) NOT NULL,
    body_sha256 CHAR(64),
    INDEX checked_events_id (event_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per credit applied, written in the same transaction as the credit. No UNIQUE: a
-- second row for one event is the evidence of a duplicate apply.
CREATE TABLE credit_ledger (
    id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    event_id   VARCHAR(255) NOT NULL,
    account_id BIGINT       NOT NULL,
    amount     BIGINT       NOT NULL,
    INDEX credit_ledger_event (event_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Every change of an account's plan_version, written by the triggers below (never by receivers).
CREATE TABLE plan_changes (
    id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    account_id  BIGINT NOT NULL,
    old_version BIGINT NOT NULL,
    new_version BIGINT NOT NULL
) ENGINE = InnoDB;

CREATE TRIGGER accounts_plan_inserted AFTER INSERT ON accounts FOR EACH ROW
    INSERT INTO plan_changes (account_id, old_version, new_version)
    SELECT NEW.id, 0, NEW.plan_version FROM DUAL WHERE NEW.plan_version <> 0;

CREATE TRIGGER accounts_plan_updated AFTER UPDATE ON accounts FOR EACH ROW
    INSERT INTO plan_changes (account_id, old_version, new_version)
    SELECT NEW.id, OLD.plan_version, NEW.plan_version FROM DUAL WHERE NEW.plan_version <> OLD.plan_version;

-- The inbox design: verified deliveries stored, keyed by their id alone, then applied by workers.
-- MySQL has no partial index: the pending rows are found through (processed_at, attempts, id).
CREATE TABLE webhook_inbox (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    source       VARCHAR(255) NOT NULL,
    webhook_id   VARCHAR(255) NOT NULL,
    body_sha256  CHAR(64),
    payload      LONGTEXT     NOT NULL,
    received_at  TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    processed_at TIMESTAMP(6) NULL,
    attempts     BIGINT       NOT NULL DEFAULT 0,
    last_error   TEXT,
    UNIQUE KEY webhook_inbox_webhook_id_key (webhook_id),
    INDEX webhook_inbox_pending (processed_at, attempts, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Dedupe keys that expire (the retention experiment); times are seconds on the caller's clock.
CREATE TABLE dedupe_keys (
    event_id   VARCHAR(255) NOT NULL PRIMARY KEY,
    expires_at DOUBLE       NOT NULL,
    INDEX dedupe_keys_expiry (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Deliveries refused because their id was already stored with another body.
CREATE TABLE id_conflicts (
    event_id        VARCHAR(255) NOT NULL,
    stored_sha256   CHAR(64)     NOT NULL,
    received_sha256 CHAR(64)     NOT NULL,
    deliveries      BIGINT       NOT NULL DEFAULT 1,
    first_seen      TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    last_seen       TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (event_id, received_sha256)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Written and rolled back by the health check, to learn whether the database takes writes.
CREATE TABLE receiver_probe (
    id BIGINT NOT NULL PRIMARY KEY
) ENGINE = InnoDB;
