//! A bench's witnesses as a report keeps them (`explain` reads them from the history): each
//! anomaly's first events or accounts per cell, each with its timeline, in the history's own
//! lines (`history` writes these same types into history.jsonl).

use serde::{Deserialize, Serialize};

use super::Fate;

/// One witness as a report keeps it: what it is, what is wrong, and its timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Witness {
    /// The anomaly class, as the judge names it (`duplicate`, `lost`, `never-applied`,
    /// `stale-account`, ...).
    pub class: String,
    /// The event's id, or `account N`.
    pub id: String,
    /// What the judge found (and, for an account, which update wrote its final version).
    pub problem: String,
    /// Every attempt of the event (of each update, for an account), in the order sent.
    pub attempts: Vec<AttemptLine>,
    /// For an account: the plan changes the database's trigger recorded, in their order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_changes: Vec<ChangeLine>,
}

/// A cell's witnesses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CellWitnesses {
    /// The cell, `backend/design`.
    pub cell: String,
    /// Up to `--witnesses` per class.
    pub witnesses: Vec<Witness>,
}

/// How an attempt ended, in Jepsen's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Acknowledged with a 2xx the sender heard.
    Ok,
    /// Refused: a 4xx, or a 5xx (the receiver says it did not apply it).
    Fail,
    /// Indeterminate: a timeout, a dropped connection, or a 2xx whose ack was lost.
    Info,
}

/// One attempt of one delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AttemptLine {
    /// The cell, `backend/design`.
    pub cell: String,
    /// The event's id.
    pub event: String,
    /// `credit` or `update`.
    pub kind: String,
    /// The delivery group in the plan (a first delivery, a concurrent pair, a later duplicate).
    pub group: usize,
    /// Which copy of the group (0 unless the group is concurrent copies).
    pub copy: u8,
    /// The event's attempt number across all its deliveries (1 first).
    pub attempt: u32,
    /// When it was planned, milliseconds from the sender's start.
    pub planned_ms: f64,
    /// When it was sent.
    pub sent_ms: f64,
    /// When its answer (or the lack of one) was known.
    pub answered_ms: f64,
    /// The worker it went to (index into the cell's workers).
    pub worker: usize,
    /// The connection it went over (numbered from 1 as the sender opens them; 0: none).
    pub connection: u64,
    /// The HTTP status, when one came.
    pub status: Option<u16>,
    /// ok, fail or info.
    pub outcome: Outcome,
    /// Why it is info: `timeout`, `no-connection`, `reset`, `ack lost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl AttemptLine {
    /// How the attempt ended, as its `status` and `detail` record it.
    pub fn fate(&self) -> Fate {
        Fate::of_line(self.status, self.detail.as_deref())
    }
}

/// One change of an account's plan version, as the database's trigger recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChangeLine {
    /// The cell, `backend/design`.
    pub cell: String,
    /// The account.
    pub account: i64,
    /// Its place in the order the trigger recorded changes (the change log's row id).
    pub seq: i64,
    /// The version before.
    pub old_version: i64,
    /// The version after (lower than `old_version`: a stale write).
    pub new_version: i64,
}
