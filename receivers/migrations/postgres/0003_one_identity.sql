-- One rule for what identifies an event: its id alone, in every design (docs/design.md). The
-- inbox's key was (source, webhook_id), so one signed delivery replayed to other
-- /webhooks/{source} paths was stored, and applied, once per path.
ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_source_webhook_id_key;
ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_webhook_id_key UNIQUE (webhook_id);

-- The SHA-256 of the body each key was first stored with (hex), so a delivery that reuses an id
-- with another body is told apart from a duplicate. NULL for keys stored before this migration.
ALTER TABLE processed_events ADD COLUMN body_sha256 TEXT;
ALTER TABLE webhook_inbox ADD COLUMN body_sha256 TEXT;

-- Deliveries refused because their id was already stored with another body: one row per id and
-- conflicting body, with how many deliveries brought it.
CREATE TABLE id_conflicts (
    event_id        TEXT        NOT NULL,
    stored_sha256   TEXT        NOT NULL,
    received_sha256 TEXT        NOT NULL,
    deliveries      BIGINT      NOT NULL DEFAULT 1,
    first_seen      TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen       TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, received_sha256)
);

-- Written and rolled back by the health check, to learn whether the database takes writes.
CREATE TABLE receiver_probe (
    id BIGINT PRIMARY KEY
);
