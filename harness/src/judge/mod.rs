//! The judge: from what was sent and answered ([`History`]) and what the observers found
//! ([`Evidence`]), under a check's [`Rules`], one [`Verdict`]: every anomaly found, by class, in
//! every event and account, the figures, the first witnesses of each class, and whether the check
//! passed.
//!
//! Pure: no I/O, no clock, and nothing of the receivers it judges. Every bench cell, audit check
//! and merged run is judged here, and `explain` reads the verdicts this wrote into the history
//! instead of classifying again. The anomaly classes are defined once, in [`class`]; each is a
//! pure function of one event, one account or the run.
//!
//! No vacuous pass: a verdict passes only when something was sent, no anomaly of a failing class
//! was found, and the evidence the rules require was observed. An event expected applied that was
//! never acknowledged and never applied is an anomaly (never-applied), so a receiver that refuses
//! or fails every delivery fails (a pair that restates one change is lost when neither of its
//! events was applied); an empty state observation is "0 accounts observed", which
//! leaves every acknowledged update's account stale. A per-account aggregate ([`aggregate`]) is
//! evidence once decoded into each credit's apply count; a change it cannot decode is an anomaly
//! of its own, and a credit it cannot count is not observed.

pub mod aggregate;
pub mod class;
pub mod evidence;
pub mod figures;
pub mod history;
pub mod rate;
mod verdict;

#[cfg(test)]
pub(crate) mod notation;
#[cfg(test)]
mod tests;

pub use aggregate::{CreditBook, Credited, Measure, Resolved, Undecoded, Unexplained};
pub use class::{Class, ClassSet, Needs, Of};
pub use evidence::{Applies, Change, Evidence, Ledger};
pub use figures::Figures;
pub use history::{Answers, Expect, History, Ids, Kind, Sent, Twin};
pub use verdict::{AccountVerdict, Finding, Outcome, Rules, Subject, Tally, Verdict, judge};
