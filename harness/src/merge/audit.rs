//! A sharded audit's shards judged as one parallel load: the observers asked once every shard is
//! done, through the receiver's database, and the load held to the rules an unsharded parallel
//! load is (`load::parallel_rules`).

use std::sync::Arc;
use std::time::Duration;

use crate::history::Tap;
use crate::judge::CreditBook;
use crate::load::partial::{AuditRun, AuditShard};
use crate::load::{Load, judge_load, parallel_rules};
use crate::observe::{ObserveError, Observers, Queries, QueryLimits, SqlObserver};
use crate::report::{AuditSection, Check, CheckFigures, ReproInputs};
use crate::sender::SendReport;
use crate::wire::{IdSpace, Payload, Poison, Scheme, Signer, Wire};
use crate::workload::Workload;

/// The whole load of audit `run` judged from its shards: `sent` (the shards' counters and
/// histograms added up, and each event's answers read from their histories) with their attempts
/// (moved, not copied) for the witnesses, the observers asked once they have settled (`settle`:
/// how long they must be quiet, and the longest wait) through the receiver's database at `url`
/// with `queries` (merge's own, which the shards' were checked to be), the verdict into `tap`.
pub async fn judge_shards(
    (run, (queries, limits)): (&AuditRun, (Queries, QueryLimits)),
    shards: Vec<AuditShard>,
    url: &str,
    workload: Workload,
    mut sent: SendReport,
    (tap, settle): (Tap, (Duration, Duration)),
) -> Result<AuditSection, ObserveError> {
    for s in shards {
        sent.attempts.extend(s.attempts);
    }
    sent.attempts.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
    // In the own layout (laid out as the shards did, `shards_workload`) each credit's account held
    // nothing before the run, so no baseline is read.
    let observer = SqlObserver::connect_with_limits(url, queries, limits).await?;
    let span = i64::try_from(Workload::own_account_span(&workload.config)).unwrap_or(i64::MAX);
    let observers = Observers::new(vec![Box::new(observer)])
        .only_ids(&run.id_prefix)
        .only_accounts(run.account_base..run.account_base.saturating_add(span));
    let seen = observers.settled(settle.0, settle.1).await?;
    let ids = IdSpace { prefix: run.id_prefix.clone(), account_base: run.account_base };
    // The merge sends nothing: its wire only names the events and their accounts as the shards
    // did (ids and accounts come from the id space alone), so it signs with no scheme.
    let wire = Wire {
        signer: Signer::from_key(Scheme::None, Vec::new()),
        payload: Payload::Hookbench,
        ids,
        poison: Poison::default(),
        credit_base: None,
    };
    let wall_s = sent.elapsed.as_secs_f64();
    let load =
        Load { workload: Arc::new(workload), wire: Arc::new(wire), sent, offset_ms: 0.0, history: Some(tap) };
    let mut book = CreditBook::default();
    load.book(&mut book);
    let seen = seen.resolve(&book);
    let (mut result, figures, _) = judge_load(&load, &seen, Check::SHARDED, &parallel_rules(), &[]);
    result.figures = Some(CheckFigures::Load(Box::new(figures)));
    Ok(AuditSection {
        url: run.url.clone(),
        signing: run.signing.clone(),
        provider: run.provider,
        payload: run.payload.clone(),
        observers: observers.names(),
        id_prefix: run.id_prefix.clone(),
        account_base: run.account_base,
        parameters: run.parameters.clone(),
        checks: vec![result],
        wall_s,
        stopped: None,
        repro: ReproInputs::default(),
    })
}
