//! The Postgres dialect's key lookups and plan guard that the store (postgres.rs) and its
//! one-statement claims (postgres_claim.rs) share, so that the two never import each other in a
//! circle.

use sqlx::postgres::PgConnection;

use super::{Guard, Known, StoreError, compare_bodies};

/// The `WHERE` an upsert of a plan takes under `guard` (none for [`Guard::None`]).
pub(super) fn guard_where(guard: Guard) -> &'static str {
    match guard {
        Guard::None => "",
        Guard::CreatedGte => " WHERE accounts.plan_created <= EXCLUDED.plan_created",
        Guard::CreatedGt => " WHERE accounts.plan_created < EXCLUDED.plan_created",
        Guard::Version => " WHERE accounts.plan_version < EXCLUDED.plan_version",
    }
}

/// Where a dedupe key lives: `processed_events` or the inbox.
#[derive(Clone, Copy)]
pub(super) enum Keys {
    Processed,
    Inbox,
    /// check-in-transaction's `checked_events` (not unique: the first row of an id is its key).
    Checked,
}

/// What a key already stored says about a delivery of `received`: a duplicate, or a conflict,
/// which is recorded.
pub(super) async fn known_key(
    conn: &mut PgConnection,
    keys: Keys,
    event_id: &str,
    received: &str,
) -> Result<Known, StoreError> {
    let sql = match keys {
        Keys::Processed => "SELECT body_sha256 FROM processed_events WHERE event_id = $1",
        Keys::Checked => "SELECT body_sha256 FROM checked_events WHERE event_id = $1 LIMIT 1",
        Keys::Inbox => "SELECT body_sha256 FROM webhook_inbox WHERE webhook_id = $1",
    };
    let stored: Option<Option<String>> =
        sqlx::query_scalar(sql).bind(event_id).fetch_optional(&mut *conn).await?;
    let Some(mut conflict) = compare_bodies(event_id, stored.flatten(), received) else {
        return Ok(Known::Duplicate);
    };
    let deliveries: i64 = sqlx::query_scalar(
        "INSERT INTO id_conflicts (event_id, stored_sha256, received_sha256) VALUES ($1, $2, $3) \
         ON CONFLICT (event_id, received_sha256) \
         DO UPDATE SET deliveries = id_conflicts.deliveries + 1, last_seen = now() RETURNING deliveries",
    )
    .bind(event_id)
    .bind(&conflict.stored_sha256)
    .bind(received)
    .fetch_one(&mut *conn)
    .await?;
    conflict.first_seen = deliveries == 1;
    Ok(Known::Conflict(conflict))
}
