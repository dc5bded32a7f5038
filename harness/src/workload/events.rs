//! Logical events: the script's `makeEvents`.

use std::fmt;

use super::WorkloadConfig;
use super::rng::Mulberry32;

/// The synthetic epoch second the first event is created in.
const START_SECOND: u64 = 1_790_000_000;

/// An event's id as it travels: `evt_` and its index padded to six digits (`evt_000132`).
///
/// Formatted on demand, so a million events need no million strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(pub u32);

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "evt_{:06}", self.0)
    }
}

/// What an event asks the receiver to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// Add `amount` credits to the account.
    Credit {
        /// Credits to add (always 100 in the article).
        amount: i64,
    },
    /// Set the account's plan to `plan_v{version}`.
    Plan {
        /// The account's plan version this update carries, 1, 2, 3... per account.
        version: u32,
        /// Whether this is the second update of a same-second pair.
        tie: bool,
    },
}

/// One logical event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Position in creation order.
    pub idx: u32,
    /// The account it applies to.
    pub account: u32,
    /// Creation time in whole seconds (ties share a second).
    pub created: u64,
    /// Credit or plan update.
    pub kind: EventKind,
}

impl Event {
    /// Its wire id.
    pub fn id(&self) -> EventId {
        EventId(self.idx)
    }

    /// Whether it adds credits.
    pub fn is_credit(&self) -> bool {
        matches!(self.kind, EventKind::Credit { .. })
    }

    /// Whether it is the second update of a same-second pair.
    pub fn is_tie(&self) -> bool {
        matches!(self.kind, EventKind::Plan { tie: true, .. })
    }
}

/// The script's `makeEvents`: events and the latest plan version of each account.
pub(super) fn make_events(config: &WorkloadConfig) -> (Vec<Event>, Vec<u32>) {
    let mut rnd = Mulberry32::new(config.seed);
    let mut events = Vec::with_capacity(config.events);
    let mut plan_version = vec![0u32; config.accounts as usize];
    let mut t = START_SECOND;
    let accounts = f64::from(config.accounts);
    let push = |events: &mut Vec<Event>, account: u32, created: u64, kind: EventKind| {
        let idx = u32::try_from(events.len()).expect("event count fits in u32");
        events.push(Event { idx, account, created, kind });
    };
    while events.len() < config.events {
        if rnd.next() < 0.5 {
            t += 1;
        }
        // `Math.floor(rnd() * N_ACCOUNTS)`: the product is below N_ACCOUNTS, so it fits.
        let account = (rnd.next() * accounts).floor() as u32;
        if rnd.next() < config.p_credit {
            push(&mut events, account, t, EventKind::Credit { amount: 100 });
        } else {
            let version = &mut plan_version[account as usize];
            *version += 1;
            push(&mut events, account, t, EventKind::Plan { version: *version, tie: false });
            // The script draws before it checks the count, so the draw always happens.
            if rnd.next() < config.p_tie && events.len() < config.events {
                *version += 1;
                push(&mut events, account, t, EventKind::Plan { version: *version, tie: true });
            }
        }
    }
    (events, plan_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_padded_to_six_digits() {
        assert_eq!(EventId(132).to_string(), "evt_000132");
        assert_eq!(EventId(1_234_567).to_string(), "evt_1234567");
    }

    #[test]
    fn versions_count_up_per_account_and_ties_share_a_second() {
        let (events, latest) = make_events(&WorkloadConfig::default());
        let mut seen = vec![0u32; latest.len()];
        for e in &events {
            if let EventKind::Plan { version, tie } = e.kind {
                let a = e.account as usize;
                assert_eq!(version, seen[a] + 1);
                seen[a] = version;
                if tie {
                    let prev = &events[e.idx as usize - 1];
                    assert_eq!((prev.account, prev.created), (e.account, e.created));
                }
            }
        }
        assert_eq!(seen, latest);
        assert!(events.windows(2).all(|p| p[1].created - p[0].created <= 1));
    }
}
