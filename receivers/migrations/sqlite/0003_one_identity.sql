-- One rule for what identifies an event: its id alone, in every design (docs/design.md). The
-- inbox's key was (source, webhook_id), so one signed delivery replayed to other
-- /webhooks/{source} paths was stored, and applied, once per path. SQLite cannot drop a
-- constraint, so the table is rebuilt.
CREATE TABLE webhook_inbox_new (
    id           INTEGER PRIMARY KEY,
    source       TEXT    NOT NULL,
    webhook_id   TEXT    NOT NULL UNIQUE,
    payload      TEXT    NOT NULL,
    received_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    processed_at TEXT,
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT,
    -- The SHA-256 of the body (hex); NULL for rows stored before this migration.
    body_sha256  TEXT
);
INSERT INTO webhook_inbox_new (id, source, webhook_id, payload, received_at, processed_at, attempts, last_error)
    SELECT id, source, webhook_id, payload, received_at, processed_at, attempts, last_error FROM webhook_inbox;
DROP TABLE webhook_inbox;
ALTER TABLE webhook_inbox_new RENAME TO webhook_inbox;
CREATE INDEX webhook_inbox_pending ON webhook_inbox (id) WHERE processed_at IS NULL AND attempts < 5;

-- The SHA-256 of the body each key was first stored with (hex), so a delivery that reuses an id
-- with another body is told apart from a duplicate. NULL for keys stored before this migration.
ALTER TABLE processed_events ADD COLUMN body_sha256 TEXT;

-- Deliveries refused because their id was already stored with another body: one row per id and
-- conflicting body, with how many deliveries brought it.
CREATE TABLE id_conflicts (
    event_id        TEXT    NOT NULL,
    stored_sha256   TEXT    NOT NULL,
    received_sha256 TEXT    NOT NULL,
    deliveries      INTEGER NOT NULL DEFAULT 1,
    first_seen      TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    last_seen       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (event_id, received_sha256)
) WITHOUT ROWID;

-- Written and rolled back by the health check, to learn whether the database takes writes.
CREATE TABLE receiver_probe (
    id INTEGER PRIMARY KEY
);
