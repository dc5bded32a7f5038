//! The order in which a claim applies its batch of inbox rows: the malformed ones first, then
//! account by account in ascending order, each account's rows in the inbox's order.
//!
//! Why not the inbox's order: on Postgres a batch holds the lock of every account row it has
//! written until it commits, and two batches that meet accounts 5 and 9 in opposite orders wait
//! for each other until Postgres ends one of them (`deadlock detected`, after a second). Taken in
//! the inbox's order, 32 rows at a time, four claim loops deadlocked 483 times in one bench cell
//! and left 6,525 rows pending (2026-12-02, reports/performance-history.md). When every transaction that
//! writes several accounts takes their locks in one order, none can wait on another in a cycle.
//! An account's own rows keep the inbox's order, which is all the version guard and the credits
//! of one account need; rows of different accounts touch nothing in common.

use super::parse_inbox_payload;
use crate::event::{Event, EventError};

/// An inbox row a claim holds: its id, its webhook id, and its payload parsed (or why it cannot be).
#[derive(Debug)]
pub(super) struct Claimed {
    pub(super) row: i64,
    pub(super) webhook_id: String,
    pub(super) event: Result<Event, EventError>,
}

/// The rows `(id, webhook id, payload)` of a batch, parsed, in the order they are to be applied.
pub(super) fn in_account_order(rows: Vec<(i64, String, String)>) -> Vec<Claimed> {
    let mut claimed: Vec<Claimed> = rows
        .into_iter()
        .map(|(row, webhook_id, payload)| Claimed { row, webhook_id, event: parse_inbox_payload(&payload) })
        .collect();
    claimed.sort_by_key(|c| (c.event.as_ref().ok().map(Event::account), c.row));
    claimed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credit_row(row: i64, account: i64) -> (i64, String, String) {
        let id = format!("evt_{row}");
        let body = format!(
            r#"{{"type":"credit.added","id":"{id}","account":{account},"amount":1,"created":1790000000}}"#
        );
        (row, id, body)
    }

    #[test]
    fn malformed_rows_come_first_then_accounts_ascending_each_in_the_inbox_order() {
        let rows = vec![
            credit_row(1, 9),
            credit_row(2, 5),
            (3, "evt_3".into(), "{not json".into()),
            credit_row(4, 9),
            credit_row(5, 5),
        ];
        let order: Vec<i64> = in_account_order(rows).iter().map(|c| c.row).collect();
        assert_eq!(order, [3, 2, 5, 1, 4]);
    }

    #[test]
    fn an_empty_batch_stays_empty() {
        assert!(in_account_order(Vec::new()).is_empty());
    }
}
