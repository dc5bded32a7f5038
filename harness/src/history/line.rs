//! The lines of history.jsonl: one per attempt, then what the judge found: one per event, one per
//! account, (for receivers whose database keeps a change log, as hookbench's own do) one per plan
//! change in the order it was recorded, and last the cell's verdict. A cell's event, account and
//! change lines always follow its attempt lines. `explain` reads the anomalies here instead of
//! classifying again. Their JSON Schema is committed as `reports/history.schema.json`
//! (`hookbench report history-schema`).

use serde::{Deserialize, Serialize};

use crate::judge::Class;

/// The report's types: a witness's timeline in a report is these lines, as the history keeps them.
pub use crate::report::model::Fate;
pub use crate::report::model::witnesses::{AttemptLine, ChangeLine, Outcome};

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

/// What became of one event, as the judge found it: what the observers saw, and the anomalies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventLine {
    /// The cell, `backend/design` (`audit/<check>` in an audit).
    pub cell: String,
    /// The event's id.
    pub event: String,
    /// `credit` or `update`.
    pub kind: String,
    /// Its account.
    pub account: i64,
    /// A credit: the most times an observer saw it applied. An update: the most times an
    /// observer saw its handler apply it, where update applies are observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<u32>,
    /// An update: the plan version it carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// An update: its creation time (the provider's `created`, whole seconds in the workload's
    /// clock), which the created-at guards compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<u64>,
    /// An update: its account's plan version at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_version: Option<i64>,
    /// An update: its account's latest plan version in the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<i64>,
    /// A poison event (a credit the side effect refuses).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub poisoned: bool,
    /// The anomalies the judge found in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<Class>,
}

/// What became of one account, as the judge found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccountLine {
    /// The cell.
    pub cell: String,
    /// The account.
    pub account: i64,
    /// The highest version the receiver acknowledged for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_acked: Option<i64>,
    /// Its final version, as observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_version: Option<i64>,
    /// The anomalies the judge found in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<Class>,
}

/// A cell's (or an audit check's) verdict: the last line of its part of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerdictLine {
    /// The cell.
    pub cell: String,
    /// `pass`, `fail`, `unjudged` or `nothing-sent`.
    pub outcome: String,
    /// The verdict's evidence in one line.
    pub summary: String,
    /// Events (accounts, runs) found with each class.
    pub found: std::collections::BTreeMap<Class, u64>,
    /// The anomalies found in the run as a whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<Class>,
}

/// A line of history.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Line {
    /// An attempt.
    Attempt(AttemptLine),
    /// An event's fate.
    Event(EventLine),
    /// An account's fate.
    Account(AccountLine),
    /// A plan change the database recorded.
    Change(ChangeLine),
    /// A cell's verdict.
    Verdict(VerdictLine),
}

impl Line {
    /// The JSON Schema of a line (committed as `reports/history.schema.json`).
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Line)).unwrap_or_default()
    }

    /// The event the line is about (none for an account's, a change's or a verdict's).
    pub fn event(&self) -> &str {
        match self {
            Self::Attempt(a) => &a.event,
            Self::Event(e) => &e.event,
            Self::Account(_) | Self::Change(_) | Self::Verdict(_) => "",
        }
    }

    /// Its cell.
    pub fn cell(&self) -> &str {
        match self {
            Self::Attempt(a) => &a.cell,
            Self::Event(e) => &e.cell,
            Self::Account(a) => &a.cell,
            Self::Change(c) => &c.cell,
            Self::Verdict(v) => &v.cell,
        }
    }
}
