-- Dedupe keys that expire (the retention experiment): a key stops counting once expires_at has
-- passed on the caller's clock, and a purge deletes such rows. Times are seconds on that clock.
CREATE TABLE dedupe_keys (
    event_id   TEXT PRIMARY KEY,
    expires_at REAL NOT NULL
);
CREATE INDEX dedupe_keys_expiry ON dedupe_keys (expires_at);
