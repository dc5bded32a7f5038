//! A shard: a slice of the delivery plan, for a run split over N processes (`bench --shard I/N`,
//! on one machine or as the pods of a Kubernetes Indexed Job), each sending its part against the
//! same receivers and writing a partial result (`load::Partial`) that `hookbench merge` adds up.
//!
//! The plan is split by event (event index modulo N): every group of an event, its concurrent
//! copies and its later duplicates, goes to one shard. The shards' events partition the
//! workload, an event's attempt numbers (and the article's draws keyed on them) are those of an
//! unsharded run, and a concurrent group's copies still race each other from one process.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The environment variable a Kubernetes Indexed Job sets in each pod: its index, from 0.
pub const JOB_COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";

/// The most shards a run may have. Far above what a run needs (docs/scale.md: three shards send
/// 100,000 attempts/s), and low enough that a count read from a file (a shard.json someone
/// edited) never sizes a loop or an allocation past a few thousand entries.
pub const MAX_SHARDS: usize = 256;

/// What a shard says before it sends when it starts after `--start-at`: what is already due goes
/// at once, and its latencies still count from the planned times. `None` when it is on time or
/// has no `--start-at`. Bench and audit shards say the same.
pub fn late_start(shard: Shard, start_at: Option<jiff::Timestamp>) -> Option<String> {
    let late = jiff::Timestamp::now().duration_since(start_at?);
    late.is_positive().then(|| {
        format!(
            "shard {shard} starts {:.3} s after --start-at: what is due goes at once, and its latencies count from the planned times",
            late.as_secs_f64()
        )
    })
}

/// One part of a sharded run: shard `index` of `count`, numbered from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shard {
    /// This shard, 1 to `count`.
    pub index: usize,
    /// How many shards the run has.
    pub count: usize,
}

/// A shard that cannot be, named by the flag or variable that gave it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `I/N`.
    #[error("--shard takes I/N, shard I of N numbered from 1 (for example 1/2), not {0:?}")]
    Syntax(String),
    /// I outside 1..=N, or N zero.
    #[error("--shard {index}/{count}: shards are numbered from 1 to N, and N is at least 1")]
    OutOfRange {
        /// The index given.
        index: usize,
        /// The count given.
        count: usize,
    },
    /// N past [`MAX_SHARDS`].
    #[error("--shard {index}/{count}: at most {MAX_SHARDS} shards")]
    TooMany {
        /// The index given.
        index: usize,
        /// The count given.
        count: usize,
    },
    /// `--shards` without the Job's index.
    #[error(
        "--shards {0} takes the shard's index from {JOB_COMPLETION_INDEX} (set in each pod of a Kubernetes Indexed Job), which is not set; give --shard I/N instead"
    )]
    NoJobIndex(usize),
    /// The Job's index is not below N.
    #[error("{JOB_COMPLETION_INDEX}={0:?} is not an index from 0 to --shards {1} minus 1")]
    BadJobIndex(String, usize),
    /// Both ways at once.
    #[error("give --shard I/N or --shards N (with {JOB_COMPLETION_INDEX}), not both")]
    Both,
}

impl Shard {
    /// The whole plan: one shard of one.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };
    /// The most shards a run may have ([`MAX_SHARDS`], reachable where the module is not).
    pub const MAX_COUNT: usize = MAX_SHARDS;

    /// Shard `index` of `count`, refused unless `1 <= index <= count <= MAX_SHARDS`.
    pub fn new(index: usize, count: usize) -> Result<Self, ShardError> {
        if count > MAX_SHARDS {
            return Err(ShardError::TooMany { index, count });
        }
        if count == 0 || index == 0 || index > count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Self { index, count })
    }

    /// The shard `--shard` or `--shards` with `JOB_COMPLETION_INDEX` (`job_index`) names, if any.
    pub fn from_flags(
        shard: Option<Shard>,
        shards: Option<usize>,
        job_index: Option<&str>,
    ) -> Result<Option<Self>, ShardError> {
        match (shard, shards) {
            (Some(_), Some(_)) => Err(ShardError::Both),
            (Some(s), None) => Ok(Some(s)),
            (None, None) => Ok(None),
            (None, Some(count)) => {
                let text = job_index.ok_or(ShardError::NoJobIndex(count))?;
                let index: usize =
                    text.trim().parse().map_err(|_| ShardError::BadJobIndex(text.to_string(), count))?;
                if index >= count {
                    return Err(ShardError::BadJobIndex(text.to_string(), count));
                }
                Self::new(index + 1, count).map(Some)
            }
        }
    }

    /// The shard `--shard` or `--shards` names, the latter's index from this process's
    /// `JOB_COMPLETION_INDEX`.
    pub fn from_flags_and_env(
        shard: Option<Shard>,
        shards: Option<usize>,
    ) -> Result<Option<Self>, ShardError> {
        Self::from_flags(shard, shards, std::env::var(JOB_COMPLETION_INDEX).ok().as_deref())
    }

    /// Whether the event at `event` (its index in the workload) is this shard's to send.
    pub fn holds(&self, event: u32) -> bool {
        event as usize % self.count == self.index - 1
    }

    /// Whether this is the whole plan.
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }
}

impl Default for Shard {
    fn default() -> Self {
        Self::WHOLE
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, ShardError> {
        let syntax = || ShardError::Syntax(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(syntax)?;
        let index = i.trim().parse().map_err(|_| syntax())?;
        let count = n.trim().parse().map_err(|_| syntax())?;
        Self::new(index, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_events_exactly() {
        for count in 1..=7 {
            let shards: Vec<Shard> = (1..=count).map(|i| Shard::new(i, count).expect("valid")).collect();
            for event in 0..1000 {
                assert_eq!(shards.iter().filter(|s| s.holds(event)).count(), 1, "event {event} of {count}");
            }
        }
    }

    #[test]
    fn shards_are_read_from_i_of_n_or_from_the_jobs_index() {
        assert_eq!("2/3".parse(), Ok(Shard { index: 2, count: 3 }));
        assert_eq!("0/3".parse::<Shard>(), Err(ShardError::OutOfRange { index: 0, count: 3 }));
        assert_eq!("4/3".parse::<Shard>(), Err(ShardError::OutOfRange { index: 4, count: 3 }));
        assert_eq!("2".parse::<Shard>(), Err(ShardError::Syntax("2".into())));
        assert_eq!(Shard::from_flags(None, Some(3), Some("0")), Ok(Some(Shard { index: 1, count: 3 })));
        assert_eq!(Shard::from_flags(None, Some(3), Some("3")), Err(ShardError::BadJobIndex("3".into(), 3)));
        assert_eq!(Shard::from_flags(None, Some(3), None), Err(ShardError::NoJobIndex(3)));
        let one = Some(Shard::WHOLE);
        assert_eq!(Shard::from_flags(one, Some(3), Some("0")), Err(ShardError::Both));
        assert!(ShardError::NoJobIndex(3).to_string().contains("--shard I/N"));
        let huge = "1/18446744073709551615".parse::<Shard>().expect_err("past the bound");
        assert_eq!(huge.to_string(), "--shard 1/18446744073709551615: at most 256 shards");
        assert!(Shard::new(256, 256).is_ok());
        assert!(matches!(Shard::from_flags(None, Some(257), Some("0")), Err(ShardError::TooMany { .. })));
    }

    #[test]
    fn a_shard_says_when_it_starts_after_start_at() {
        let now = jiff::Timestamp::now();
        let shard = Shard { index: 2, count: 3 };
        let line = late_start(shard, Some(now - jiff::SignedDuration::from_secs(5))).expect("late");
        assert!(line.starts_with("shard 2/3 starts 5."), "{line}");
        assert!(line.contains("after --start-at"), "{line}");
        assert_eq!(late_start(shard, Some(now + jiff::SignedDuration::from_secs(60))), None);
        assert_eq!(late_start(shard, None), None);
    }
}
