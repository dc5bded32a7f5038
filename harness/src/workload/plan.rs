//! The delivery plan: the script's `makeGroups`.

use std::fmt;

use super::rng::keyed;
use super::{Event, WorkloadConfig};

/// Why a group of copies is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupKind {
    /// The event's first delivery, one copy.
    First,
    /// The event's first delivery as two copies arriving at the same moment.
    FirstConcurrent,
    /// A later redelivery of an event.
    Duplicate,
    /// The sender's retry after a 5xx.
    RetryAfter500,
    /// The sender's retry after the response was lost (a timeout).
    RetryAfterTimeout,
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::First => "first",
            Self::FirstConcurrent => "first+concurrent",
            Self::Duplicate => "duplicate",
            Self::RetryAfter500 => "retry-after-500",
            Self::RetryAfterTimeout => "retry-after-timeout",
        })
    }
}

/// Copies of one event sent together at plan position `at`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Group {
    /// Plan position (the event index, moved by shuffles, duplicates and retries); fractional.
    pub at: f64,
    /// Index of the event.
    pub event: u32,
    /// How many copies arrive at once (1, or 2 for a concurrent pair).
    pub copies: u8,
    /// Why it is sent.
    pub kind: GroupKind,
}

/// The script's `makeGroups`: first deliveries (some shuffled, some doubled) and duplicates,
/// sorted by position, then event index. Rust's `sort_by` is stable like V8's `Array.sort`, so
/// equal keys keep the same order.
pub(super) fn make_groups(config: &WorkloadConfig, events: &[Event]) -> Vec<Group> {
    let seed = config.seed;
    let window = f64::from(config.shuffle_window);
    let mut groups = Vec::with_capacity(events.len() + events.len() / 16);
    for e in events {
        let id = e.id();
        let mut at = f64::from(e.idx);
        if keyed(seed, &[&id, &"shuffle"]) < config.p_shuffle {
            at += (keyed(seed, &[&id, &"shift"]) * 2.0 - 1.0) * window;
        }
        let concurrent = keyed(seed, &[&id, &"concurrent"]) < config.p_concurrent;
        groups.push(Group {
            at,
            event: e.idx,
            copies: if concurrent { 2 } else { 1 },
            kind: if concurrent { GroupKind::FirstConcurrent } else { GroupKind::First },
        });
        if keyed(seed, &[&id, &"dup"]) < config.p_duplicate {
            groups.push(Group {
                at: f64::from(e.idx) + 1.0 + keyed(seed, &[&id, &"dupAt"]) * 200.0,
                event: e.idx,
                copies: 1,
                kind: GroupKind::Duplicate,
            });
        }
    }
    groups.sort_by(|a, b| a.at.total_cmp(&b.at).then(a.event.cmp(&b.event)));
    groups
}
