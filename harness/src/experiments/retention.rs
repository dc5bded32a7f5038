//! `hookbench retention`: the article's retention test against a real dedupe store whose keys
//! expire.
//!
//! Each of the article's three retry schedules is replayed for every one of its four key
//! lifetimes: every attempt that reaches the receiver (drawn exactly as the model draws it,
//! [`crate::model::retention::visits`]) becomes a call of [`Store::apply_once_until`], which
//! inserts the event's key with `expires_at = now + ttl` and applies the credit in the same
//! transaction, or finds the key still alive and does nothing. Time is a virtual clock: the
//! attempts are sorted by their time in the schedule and run in that order (those due at the same
//! second concurrently), so 45 days pass in seconds. A purge job deletes expired keys
//! (`DELETE ... WHERE expires_at <= now`) every virtual hour, as a nightly job would; a key past
//! its time counts as gone even before the purge reaches it. Duplicate applies are then counted
//! from the credit ledger, beside the model's.

use std::sync::Arc;
use std::time::Instant;

use crate::matrix::Backend;
use receivers::event::Event;
use receivers::store::{Store, StoreOptions};

use crate::observe::{Observers, Snapshot, Tables};

use super::ExperimentError;
use crate::model::retention::{self, TTLS, schedules, visits};
/// The report's types: a run on one backend and its rows.
pub use crate::report::model::{RetentionRow, RetentionRun};

/// Attempts in flight at once by default (those due at the same virtual second).
pub const CONCURRENCY: usize = 8;

/// How often the purge job runs, in virtual seconds.
pub const PURGE_EVERY_S: f64 = 3600.0;

/// One attempt reaching the store: when, which schedule, which lifetime, which event.
#[derive(Debug, Clone, Copy)]
struct Visit {
    t: f64,
    schedule: usize,
    ttl: usize,
    event: usize,
}

fn key(v: &Visit) -> String {
    format!("ret{}_{}_{:06}", v.schedule, v.ttl, v.event)
}

/// (schedule, ttl) of a key written by [`key`].
fn parse_key(key: &str) -> Option<(usize, usize)> {
    let mut parts = key.strip_prefix("ret")?.split('_');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Replays the retention test for `events` events per schedule on the (fresh) database at `url`,
/// with up to `concurrency` attempts in flight.
pub async fn run(
    seed: u32,
    events: usize,
    concurrency: usize,
    backend: Backend,
    url: &str,
) -> Result<RetentionRun, ExperimentError> {
    let options = StoreOptions {
        max_connections: u32::try_from(concurrency.clamp(1, 64)).unwrap_or(8),
        application_name: "hookbench-retention".into(),
        // The experiment drives the store itself, as hard as it can: it waits for a connection.
        acquire_timeout: std::time::Duration::from_secs(30),
        ..StoreOptions::default()
    };
    let store = Store::connect(url, &options).await?;
    let tables = Tables::connect(url).await?;
    let started = Instant::now();
    let scheds = schedules();
    let mut all = Vec::new();
    for (s, schedule) in scheds.iter().enumerate() {
        for event in 0..events {
            for (t, _) in visits(seed, schedule, event) {
                all.extend((0..TTLS.len()).map(|ttl| Visit { t, schedule: s, ttl, event }));
            }
        }
    }
    all.sort_by(|a, b| a.t.total_cmp(&b.t));
    let (mut purges, mut keys_purged, mut peak_keys) = (0u64, 0u64, 0u64);
    let mut next_purge = PURGE_EVERY_S;
    let mut rest = &all[..];
    while let Some(first) = rest.first() {
        let now = first.t;
        if now >= next_purge {
            peak_keys = peak_keys.max(tables.expiring_keys().await?);
            keys_purged += store.purge_expired(now).await?;
            purges += 1;
            next_purge = ((now / PURGE_EVERY_S).floor() + 1.0) * PURGE_EVERY_S;
        }
        let due = rest.iter().take_while(|v| v.t == now).count();
        let (batch, later) = rest.split_at(due);
        rest = later;
        run_batch(&store, batch, concurrency.max(1)).await?;
    }
    peak_keys = peak_keys.max(tables.expiring_keys().await?);
    let last = all.last().map_or(0.0, |v| v.t);
    keys_purged += store.purge_expired(last + 31.0 * 86_400.0).await?;
    purges += 1;
    let keys_left = tables.expiring_keys().await?;
    let wall_s = started.elapsed().as_secs_f64();

    let mut applies = vec![vec![0u64; TTLS.len()]; scheds.len()];
    let mut unknown = 0u64;
    let mut seen = Snapshot::default();
    Observers::new(vec![Box::new(tables.clone())]).look(&mut seen).await?;
    for (id, &n) in seen.applied.iter().flat_map(|(_, counts)| counts) {
        match parse_key(id) {
            Some((s, t)) if s < scheds.len() && t < TTLS.len() => applies[s][t] += n,
            _ => unknown += 1,
        }
    }
    store.close().await;
    tables.close().await;
    if unknown > 0 {
        return Err(ExperimentError::Run(format!("{unknown} ledger rows name no retention key")));
    }
    let model = retention::run(seed, events);
    let mut rows = Vec::new();
    for (s, (schedule, model_rows)) in model.iter().enumerate() {
        for (t, m) in model_rows.iter().enumerate() {
            rows.push(RetentionRow {
                schedule: schedule.name.to_string(),
                ttl: m.ttl.to_string(),
                duplicate_applies: applies[s][t].saturating_sub(events as u64),
                model: m.duplicate_applies,
            });
        }
    }
    Ok(RetentionRun {
        backend,
        events: events as u64,
        rows,
        visits: all.len() as u64,
        purges,
        keys_purged,
        peak_keys,
        keys_left,
        wall_s,
    })
}

/// Delivers the attempts due at one instant, `concurrency` at a time (their keys differ).
async fn run_batch(store: &Store, batch: &[Visit], concurrency: usize) -> Result<(), ExperimentError> {
    let batch: Arc<[Visit]> = batch.into();
    let mut tasks = tokio::task::JoinSet::new();
    for lane in 0..concurrency.min(batch.len()) {
        let (store, batch) = (store.clone(), batch.clone());
        tasks.spawn(async move {
            for v in batch.iter().skip(lane).step_by(concurrency) {
                let event =
                    Event::Credit { id: key(v), account: (v.event % 500) as i64, amount: 100, created: 0 };
                store.apply_once_until(&event, v.t, TTLS[v.ttl].1).await?;
            }
            Ok::<_, receivers::store::StoreError>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| ExperimentError::Run(format!("a replay task failed: {e}")))??;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_schedule_and_lifetime() {
        let v = Visit { t: 0.0, schedule: 2, ttl: 3, event: 41 };
        assert_eq!(key(&v), "ret2_3_000041");
        assert_eq!(parse_key(&key(&v)), Some((2, 3)));
        assert_eq!(parse_key("evt_000001"), None);
    }
}
