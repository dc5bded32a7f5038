//! The article's retention test: dedupe keys with a TTL against a provider's retry schedule.

use serde::Serialize;

use crate::workload::rng::keyed;

const H: f64 = 3600.0;
const D: f64 = 86_400.0;

/// Chance an attempt's response is lost after processing.
pub const P_LOST: f64 = 0.05;
/// Chance a later attempt never reaches the receiver.
pub const P_UNREACHABLE: f64 = 0.5;
/// Chance of a manual resend 1 to 15 days later (schedules with manual resends only).
pub const P_MANUAL: f64 = 0.005;

/// A provider's retry schedule: attempt times in seconds after the first.
#[derive(Debug, Clone, Serialize)]
pub struct Schedule {
    /// The name the article prints.
    pub name: &'static str,
    /// Attempt offsets in seconds, the first at 0.
    pub offsets: Vec<f64>,
    /// Whether events may also be resent by hand days later.
    pub manual_resends: bool,
}

fn cumulative(delays: &[f64]) -> Vec<f64> {
    let mut t = 0.0;
    delays
        .iter()
        .map(|d| {
            t += d;
            t
        })
        .collect()
}

/// The article's three schedules.
pub fn schedules() -> Vec<Schedule> {
    vec![
        Schedule {
            name: "Svix published schedule",
            offsets: cumulative(&[0.0, 5.0, 300.0, 1800.0, 2.0 * H, 5.0 * H, 10.0 * H, 10.0 * H]),
            manual_resends: false,
        },
        Schedule {
            name: "Standard Webhooks example",
            offsets: cumulative(&[
                0.0,
                5.0,
                300.0,
                1800.0,
                2.0 * H,
                5.0 * H,
                10.0 * H,
                14.0 * H,
                20.0 * H,
                24.0 * H,
            ]),
            manual_resends: false,
        },
        Schedule {
            name: "3-day window, illustrative intervals",
            offsets: vec![
                0.0, 60.0, 360.0, 2160.0, 5760.0, 12960.0, 27360.0, 56160.0, 113_760.0, 172_800.0, 259_200.0,
            ],
            manual_resends: true,
        },
    ]
}

/// The article's four key lifetimes, with their labels.
pub const TTLS: [(&str, f64); 4] =
    [("5 min", 300.0), ("24 h", D), ("7 days", 7.0 * D), ("30 days", 30.0 * D)];

/// One row: duplicate applies that got past a store keeping keys for `ttl` seconds.
#[derive(Debug, Clone, Serialize)]
pub struct RetentionRow {
    /// The schedule's name.
    pub schedule: &'static str,
    /// The key lifetime's label.
    pub ttl: &'static str,
    /// Key lifetime in seconds.
    pub ttl_s: f64,
    /// Applies beyond one per event.
    pub duplicate_applies: u64,
}

/// Every attempt of one event that reaches the receiver, as (time in seconds, whether the 2xx
/// reached the sender), in order. The draws are keyed as the script keys them; a real store
/// replays the same visits.
pub fn visits(seed: u32, schedule: &Schedule, event: usize) -> Vec<(f64, bool)> {
    let name = schedule.name;
    let delivered = |n: &dyn std::fmt::Display| keyed(seed, &[&"ret", &name, &event, n, &"lost"]) >= P_LOST;
    let mut out = Vec::new();
    for (n, &t) in schedule.offsets.iter().enumerate() {
        if n > 0 && keyed(seed, &[&"ret", &name, &event, &n, &"down"]) < P_UNREACHABLE {
            continue; // never reached us
        }
        let ok = delivered(&n);
        out.push((t, ok));
        if ok {
            break;
        }
    }
    if schedule.manual_resends && keyed(seed, &[&"ret", &name, &event, &"manual"]) < P_MANUAL {
        let t = D + keyed(seed, &[&"ret", &name, &event, &"manualAt"]) * 14.0 * D;
        out.push((t, delivered(&"manual")));
    }
    out
}

/// The script's `retention()` for `events` events per schedule. Each event's visits are drawn once
/// and counted against every key lifetime, so memory stays flat whatever the event count.
pub fn run(seed: u32, events: usize) -> Vec<(Schedule, Vec<RetentionRow>)> {
    schedules()
        .into_iter()
        .map(|schedule| {
            let mut applies = [0u64; TTLS.len()];
            for i in 0..events {
                let visits = visits(seed, &schedule, i);
                for (count, &(_, ttl)) in applies.iter_mut().zip(&TTLS) {
                    let mut expires = -1.0;
                    for &(t, _) in &visits {
                        if t >= expires {
                            *count += 1;
                            expires = t + ttl;
                        }
                    }
                }
            }
            let rows = TTLS
                .iter()
                .zip(applies)
                .map(|(&(label, ttl), applies)| RetentionRow {
                    schedule: schedule.name,
                    ttl: label,
                    ttl_s: ttl,
                    duplicate_applies: applies - events as u64,
                })
                .collect();
            (schedule, rows)
        })
        .collect()
}

/// `h:mm:ss`, as the script's `fmt` prints the last retry.
pub fn hms(seconds: f64) -> String {
    let sec = seconds as u64;
    format!("{}:{:02}:{:02}", sec / 3600, (sec % 3600) / 60, sec % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_retries_are_the_articles() {
        let last: Vec<String> =
            schedules().iter().map(|s| hms(*s.offsets.last().expect("non-empty"))).collect();
        assert_eq!(last, ["27:35:05", "75:35:05", "72:00:00"]);
    }

    #[test]
    fn every_event_is_applied_at_least_once() {
        for (_, rows) in run(1, 300) {
            // A 30-day store only lets manual resends past it when they come after 30 days,
            // and they never do (1 to 15 days).
            assert_eq!(rows[3].duplicate_applies, 0);
            assert!(rows[0].duplicate_applies >= rows[1].duplicate_applies);
        }
    }
}
