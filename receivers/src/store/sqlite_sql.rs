//! The SQLite dialect's statements and key lookups that the store (sqlite.rs), its one-statement
//! claims (sqlite_claim.rs) and its writer thread (sqlite_writer.rs) share: each of them imports
//! these from here, none from another, so the three never import each other in a circle.

use std::sync::LazyLock;

use sqlx::sqlite::SqliteConnection;

use super::{Guard, Known, StoreError, compare_bodies};

/// SQLite's primary result codes that say the file cannot be used now: READONLY, IOERR, CORRUPT,
/// FULL, CANTOPEN, NOTADB. Extended codes carry the primary one in their low byte.
pub(super) const FILE_TROUBLE: [i64; 6] = [8, 10, 11, 13, 14, 26];

/// Whether this process may write the file at `path` (`access(2)`, which answers for root too).
pub(super) fn writable(path: &std::path::Path) -> bool {
    nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// The credit, refused by its own WHERE when it would overflow the balance (0 rows). Without it
/// SQLite would store the sum as a REAL.
pub(super) const CREDIT: &str = "INSERT INTO accounts (id, credits) VALUES (?1, ?2) \
     ON CONFLICT (id) DO UPDATE SET credits = credits + excluded.credits \
     WHERE credits <= 9223372036854775807 - excluded.credits";
pub(super) const LEDGER: &str =
    "INSERT INTO credit_ledger (event_id, account_id, amount) VALUES (?1, ?2, ?3)";

/// The plan upsert under `guard`.
pub(super) fn plan_sql(guard: Guard) -> &'static str {
    static SQL: LazyLock<[String; 4]> = LazyLock::new(|| {
        Guard::ALL.map(|guard| {
            format!(
                "INSERT INTO accounts (id, plan, plan_version, plan_created) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (id) DO UPDATE SET plan = excluded.plan, plan_version = excluded.plan_version, \
                 plan_created = excluded.plan_created{}",
                guard_where(guard)
            )
        })
    });
    &SQL[guard.index()]
}

/// The `WHERE` an upsert of a plan takes under `guard` (none for [`Guard::None`]).
pub(super) fn guard_where(guard: Guard) -> &'static str {
    match guard {
        Guard::None => "",
        Guard::CreatedGte => " WHERE plan_created <= excluded.plan_created",
        Guard::CreatedGt => " WHERE plan_created < excluded.plan_created",
        Guard::Version => " WHERE plan_version < excluded.plan_version",
    }
}

/// The key inserted with its body hash (?1, ?2), nothing done when it is there.
pub(super) const KEY: &str =
    "INSERT INTO processed_events (event_id, body_sha256) VALUES (?1, ?2) ON CONFLICT DO NOTHING";

/// A conflict recorded (?1 the id, ?2 the stored hash, ?3 the received one), or its count of
/// deliveries raised: returns that count.
pub(super) const CONFLICT: &str = "INSERT INTO id_conflicts (event_id, stored_sha256, received_sha256) VALUES (?1, ?2, ?3) \
     ON CONFLICT (event_id, received_sha256) DO UPDATE SET deliveries = deliveries + 1, \
     last_seen = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') RETURNING deliveries";

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
    conn: &mut SqliteConnection,
    keys: Keys,
    event_id: &str,
    received: &str,
) -> Result<Known, StoreError> {
    let sql = match keys {
        Keys::Processed => "SELECT body_sha256 FROM processed_events WHERE event_id = ?1",
        Keys::Checked => "SELECT body_sha256 FROM checked_events WHERE event_id = ?1 LIMIT 1",
        Keys::Inbox => "SELECT body_sha256 FROM webhook_inbox WHERE webhook_id = ?1",
    };
    let stored: Option<Option<String>> =
        sqlx::query_scalar(sql).bind(event_id).fetch_optional(&mut *conn).await?;
    let Some(mut conflict) = compare_bodies(event_id, stored.flatten(), received) else {
        return Ok(Known::Duplicate);
    };
    let deliveries: i64 = sqlx::query_scalar(CONFLICT)
        .bind(event_id)
        .bind(&conflict.stored_sha256)
        .bind(received)
        .fetch_one(&mut *conn)
        .await?;
    conflict.first_seen = deliveries == 1;
    Ok(Known::Conflict(conflict))
}
