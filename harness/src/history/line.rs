//! The lines of history.jsonl: one per attempt, then one per event, then (for receivers whose
//! database keeps a change log, as hookbench's own do) one per plan change, in the order it was
//! recorded. A cell's change lines always follow its event lines. Their JSON Schema is
//! committed as `reports/history.schema.json` (`hookbench report history-schema`).

use serde::{Deserialize, Serialize};

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

impl Outcome {
    /// As the history writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Fail => "fail",
            Self::Info => "info",
        }
    }
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
    /// Why it is info: `timeout`, `no-connection`, `ack lost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What became of one event, as the checker found it in the database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventLine {
    /// The cell, `backend/design`.
    pub cell: String,
    /// The event's id.
    pub event: String,
    /// `credit` or `update`.
    pub kind: String,
    /// Its account.
    pub account: u32,
    /// A credit: how many ledger rows it has (times applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<u32>,
    /// An update: the plan version it carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// An update: its creation time (the provider's `created`, whole seconds in the workload's
    /// clock), which the created-at guards compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<u64>,
    /// An update: its account's plan version at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_version: Option<i64>,
    /// An update: its account's latest plan version in the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<u32>,
    /// A poison event (a credit the side effect refuses).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub poisoned: bool,
}

impl EventLine {
    /// The fate of event `i` of `workload` in `cell`, sent as `id` for `account`: for a credit,
    /// the times it was `applied`; for an update, its version and creation time, its account's
    /// `final_version` and its latest version in the workload. Only the kind's figure is asked.
    pub fn fate(
        workload: &crate::workload::Workload,
        i: usize,
        (cell, id, account): (&str, String, u32),
        applied: impl FnOnce() -> Option<u32>,
        final_version: impl FnOnce() -> Option<i64>,
    ) -> Self {
        let e = &workload.events[i];
        let mut line = Self {
            cell: cell.to_string(),
            event: id,
            kind: String::new(),
            account,
            applied: None,
            version: None,
            created: None,
            final_version: None,
            latest_version: None,
            poisoned: workload.is_poisoned(i),
        };
        match e.kind {
            crate::workload::EventKind::Credit { .. } => {
                line.kind = "credit".into();
                line.applied = applied();
            }
            crate::workload::EventKind::Plan { version, .. } => {
                line.kind = "update".into();
                line.version = Some(version);
                line.created = Some(e.created);
                line.final_version = final_version();
                line.latest_version = workload.latest_plan.get(e.account as usize).copied();
            }
        }
        line
    }
}

/// One change of an account's plan version, as the database's trigger recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChangeLine {
    /// The cell, `backend/design`.
    pub cell: String,
    /// The account.
    pub account: u32,
    /// Its place in the order the trigger recorded changes (the change log's row id).
    pub seq: i64,
    /// The version before.
    pub old_version: i64,
    /// The version after (lower than `old_version`: a stale write).
    pub new_version: i64,
}

/// A line of history.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Line {
    /// An attempt.
    Attempt(AttemptLine),
    /// An event's fate.
    Event(EventLine),
    /// A plan change the database recorded.
    Change(ChangeLine),
}

impl Line {
    /// The JSON Schema of a line (committed as `reports/history.schema.json`).
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Line)).unwrap_or_default()
    }

    /// The event the line is about (none for a plan change: it is about an account).
    pub fn event(&self) -> &str {
        match self {
            Self::Attempt(a) => &a.event,
            Self::Event(e) => &e.event,
            Self::Change(_) => "",
        }
    }

    /// Its cell.
    pub fn cell(&self) -> &str {
        match self {
            Self::Attempt(a) => &a.cell,
            Self::Event(e) => &e.cell,
            Self::Change(c) => &c.cell,
        }
    }
}
