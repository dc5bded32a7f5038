//! The MySQL dialect's dedupe keys: inserting one (a duplicate told by its error, 1062) and what
//! a key already stored says, shared by the store (mysql.rs) and the inbox (mysql_inbox.rs).

use sqlx::mysql::{MySqlConnection, MySqlDatabaseError};

use super::{Known, StoreError, compare_bodies};

/// MySQL's error number for a duplicate key.
pub(super) const DUPLICATE_KEY: u16 = 1062;
/// MySQL's error number for a value out of its type's range (a BIGINT sum that overflows).
pub(super) const OUT_OF_RANGE: u16 = 1690;

/// The server's error number, if `e` is a MySQL server error.
pub(super) fn error_number(e: &sqlx::Error) -> Option<u16> {
    e.as_database_error().and_then(|d| d.try_downcast_ref::<MySqlDatabaseError>()).map(|d| d.number())
}

/// Where a dedupe key lives: `processed_events` or the inbox.
#[derive(Clone, Copy)]
pub(super) enum Keys {
    Processed,
    Inbox,
    /// check-in-transaction's `checked_events` (not unique: the first row of an id is its key).
    Checked,
}

/// The key's insert: ? the event's id, its body's hash.
pub(super) const INSERT_KEY: &str = "INSERT INTO processed_events (event_id, body_sha256) VALUES (?, ?)";

/// Inserts the event's key into `processed_events` with its body hash; whether it was inserted
/// (`false`: the key is there). A copy whose key an open transaction has just inserted waits for
/// it, and fails with a duplicate key once it commits.
pub(super) async fn insert_key(
    conn: &mut MySqlConnection,
    event_id: &str,
    body_sha256: &str,
) -> Result<bool, StoreError> {
    match sqlx::query(INSERT_KEY).bind(event_id).bind(body_sha256).execute(&mut *conn).await {
        Ok(_) => Ok(true),
        Err(e) if error_number(&e) == Some(DUPLICATE_KEY) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What a key already stored says about a delivery of `received`: a duplicate, or a conflict,
/// which is recorded. The key is read with a shared lock, so the read sees the committed row
/// whatever the transaction's snapshot (under REPEATABLE READ a plain read would not).
pub(super) async fn known_key(
    conn: &mut MySqlConnection,
    keys: Keys,
    event_id: &str,
    received: &str,
) -> Result<Known, StoreError> {
    let sql = match keys {
        Keys::Processed => "SELECT body_sha256 FROM processed_events WHERE event_id = ? LOCK IN SHARE MODE",
        Keys::Checked => {
            "SELECT body_sha256 FROM checked_events WHERE event_id = ? LIMIT 1 LOCK IN SHARE MODE"
        }
        Keys::Inbox => "SELECT body_sha256 FROM webhook_inbox WHERE webhook_id = ? LOCK IN SHARE MODE",
    };
    let stored: Option<Option<String>> =
        sqlx::query_scalar(sql).bind(event_id).fetch_optional(&mut *conn).await?;
    let Some(mut conflict) = compare_bodies(event_id, stored.flatten(), received) else {
        return Ok(Known::Duplicate);
    };
    sqlx::query(
        "INSERT INTO id_conflicts (event_id, stored_sha256, received_sha256) VALUES (?, ?, ?) \
         ON DUPLICATE KEY UPDATE deliveries = deliveries + 1, last_seen = CURRENT_TIMESTAMP(6)",
    )
    .bind(event_id)
    .bind(&conflict.stored_sha256)
    .bind(received)
    .execute(&mut *conn)
    .await?;
    let deliveries: i64 =
        sqlx::query_scalar("SELECT deliveries FROM id_conflicts WHERE event_id = ? AND received_sha256 = ?")
            .bind(event_id)
            .bind(received)
            .fetch_one(&mut *conn)
            .await?;
    conflict.first_seen = deliveries == 1;
    Ok(Known::Conflict(conflict))
}
