//! A sharded audit: the parallel load (check 8) split over processes or pods (`audit URL --shard
//! I/N`), each sending its events and writing a partial result; `hookbench merge` then asks the
//! observers once, when every shard is done, and judges the whole load. Only the load is sharded:
//! the probes are single deliveries, and the checks that disturb the receiver (kills, outages)
//! cannot be split; run them in an audit of their own.

use std::sync::Arc;

use tokio::time::Instant;

use super::load::{self, Load, Rules};
use super::observe::{ObserveError, Observers, Queries, SqlObserver};
use super::verdict::{AuditSection, Check};
use super::{AuditConfig, AuditError, id_space, probe};
use crate::history::Tap;
use crate::sender::{SendReport, SenderConfig};
use crate::shard::{AuditRun, AuditShard, Partial, Shard, Target};
use crate::wire::{IdSpace, Payload, Poison, Scheme, Signer, Wire};
use crate::workload::Workload;

/// Sends shard `shard`'s part of the parallel load to the receiver; its partial result (not yet
/// written), named `run_id`.
pub async fn run_shard(
    config: &AuditConfig,
    shard: Shard,
    run_id: String,
    step: &(dyn Fn(&str) + Sync),
) -> Result<Partial, AuditError> {
    config.validate()?;
    let observe_db = config.observe_db.as_deref().ok_or_else(|| {
        AuditError::Config("a sharded audit is judged by `hookbench merge` through --observe-db".into())
    })?;
    let probe = probe::Probe::new(&config.url, config.timeout, Instant::now())?;
    probe
        .reachable()
        .await
        .map_err(|e| AuditError::Unreachable { url: config.url.clone(), reason: e.to_string() })?;
    let ids = id_space(config);
    let signer = Signer::new(config.signing, &config.secrets)?;
    let poison = config.poison.clone().unwrap_or_default();
    let wire = Arc::new(Wire { signer, payload: config.payload.clone(), ids: ids.clone(), poison });
    let workload = Workload::generate(&config.workload)?;
    step(&format!("parallel-load, shard {shard}"));
    let sender = SenderConfig { shard, start_at: config.start_at, ..config.load_sender(Check::ParallelLoad) };
    let load = load::send(&config.url, workload, wire, sender, 0.0).await?;
    let sent = &load.sent;
    let run = AuditRun {
        url: config.url.clone(),
        signing: config.signing.as_str().to_string(),
        payload: config.payload.name(),
        id_prefix: ids.prefix,
        account_base: ids.account_base,
        observe_db: provision::hide_password(observe_db),
        applied_query: config.applied_query.clone(),
        state_query: config.state_query.clone(),
        dead_letter_query: config.dead_letter_query.clone(),
    };
    let target = Target::Audit(Box::new(AuditShard {
        run,
        acked: indices(&sent.acked),
        refused: indices(&sent.refused),
        attempts: sent.attempts.clone(),
    }));
    let parameters = crate::report::audit_parameters(config);
    Ok(Partial::new((run_id, shard, target), parameters, &load.workload, config.start_at, sent))
}

/// The indices of the events whose flag is set.
fn indices(flags: &[bool]) -> Vec<usize> {
    flags.iter().enumerate().filter(|(_, f)| **f).map(|(i, _)| i).collect()
}

/// The whole load of audit `run` judged from its shards: their acknowledgements and attempts
/// (moved, not copied: an audit shard's attempts are every one it made) put together with `sent`
/// (the shards' counters and histograms, added up), the observers asked once they have settled
/// (`settle`: how long they must be quiet, and the longest wait) through the receiver's database
/// at `url`, each event's fate into `tap`.
pub async fn judge_shards(
    run: &AuditRun,
    shards: Vec<AuditShard>,
    url: &str,
    workload: Workload,
    mut sent: SendReport,
    tap: Tap,
    settle: (std::time::Duration, std::time::Duration),
) -> Result<AuditSection, ObserveError> {
    let n = workload.events.len();
    sent.acked = vec![false; n];
    sent.refused = vec![false; n];
    for s in shards {
        s.acked.iter().filter(|&&i| i < n).for_each(|&i| sent.acked[i] = true);
        s.refused.iter().filter(|&&i| i < n).for_each(|&i| sent.refused[i] = true);
        sent.attempts.extend(s.attempts);
    }
    sent.attempts.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
    let queries = Queries {
        applied: run.applied_query.clone(),
        state: run.state_query.clone(),
        dead_letters: run.dead_letter_query.clone(),
    };
    let observers = Observers { sql: Some(SqlObserver::connect(url, queries).await?), sink: None };
    let seen = observers.settled(settle.0, settle.1).await?;
    let ids = IdSpace { prefix: run.id_prefix.clone(), account_base: run.account_base };
    // The merge sends nothing: its wire only names the events and their accounts as the shards
    // did (ids and accounts come from the id space alone), so it signs with no scheme.
    let wire = Wire {
        signer: Signer::from_key(Scheme::None, Vec::new()),
        payload: Payload::Hookbench,
        ids,
        poison: Poison::default(),
    };
    let wall_s = sent.elapsed.as_secs_f64();
    let load =
        Load { workload: Arc::new(workload), wire: Arc::new(wire), sent, offset_ms: 0.0, history: Some(tap) };
    let rules = Rules { check: Check::ParallelLoad, latest_state: true, every_event: false };
    let (result, figures) = load::judge(&load, &seen, rules, &[]);
    Ok(AuditSection {
        url: run.url.clone(),
        signing: run.signing.clone(),
        payload: run.payload.clone(),
        observers: observers.names(),
        id_prefix: run.id_prefix.clone(),
        account_base: run.account_base,
        checks: vec![result],
        load: Some(figures),
        crash: None,
        poison: None,
        capacity: None,
        storm: None,
        wall_s,
    })
}
