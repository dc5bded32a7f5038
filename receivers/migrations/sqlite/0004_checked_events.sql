-- check-in-transaction's keys: the check, the effect and the key's insert in one transaction,
-- and an index that is NOT unique (what a team writes that trusts the transaction instead of a
-- constraint), so only the isolation level keeps two copies of an event from both applying.
-- The index keeps a serializable check's read to the id's own entries rather than the table.
CREATE TABLE checked_events (
    event_id    TEXT NOT NULL,
    body_sha256 TEXT
);
CREATE INDEX checked_events_id ON checked_events (event_id);
