//! A sharded audit: the parallel load (check 8) split over processes or pods (`audit URL --shard
//! I/N`), each sending its events and writing a partial result; `hookbench merge` then asks the
//! observers once, when every shard is done, and judges the whole load (`merge::audit`). Only the
//! load is sharded: the probes are single deliveries, and the checks that disturb the receiver
//! (kills, outages) cannot be split; run them in an audit of their own.

use std::sync::Arc;

use tokio::time::Instant;

use super::accounts::Accounts;
use super::checks::Plan;
use super::ctx::Ctx;
use super::{
    Audit, AuditError, aggregate_range, book_of, by, connect_observers, id_space, load_span, preflight,
    probe, read_baseline,
};
use crate::load::partial::{AuditRun, AuditShard, Partial, Target};
use crate::report::Check;
use crate::sender::{self, Progress, SenderConfig};
use crate::wire::Wire;
use crate::workload::{Shard, Workload};

/// Sends shard `shard`'s part of the parallel load to the receiver; its partial result (not yet
/// written), named `run_id`.
pub async fn run_shard(
    audit: &Audit,
    shard: Shard,
    run_id: String,
    step: &(dyn Fn(&str) + Sync),
) -> Result<Partial, AuditError> {
    audit.validate()?;
    let config = &audit.config;
    let (t, w) = (&config.target, &config.watch);
    let observe_db = w.observe_db.as_deref().ok_or_else(|| {
        AuditError::Config("a sharded audit is judged by `hookbench merge` through --observe-db".into())
    })?;
    let start = Instant::now();
    let deadline = (start + config.deadline, config.deadline);
    let probe = probe::Probe::new(&t.url, config.load.timeout, start, config.pulse.clone())?;
    probe
        .reachable()
        .await
        .map_err(|e| AuditError::Unreachable { url: t.url.clone(), reason: e.to_string() })?;
    let ids = id_space(config);
    let signer = t.signer()?;
    let wire = Arc::new(Wire {
        signer,
        payload: t.payload.clone(),
        ids: ids.clone(),
        poison: Default::default(),
        credit_base: None,
    });
    // Every shard's preflight credit has an id and an account of its own, after the load's
    // accounts, so that no shard reads another's as its own or as an account not fresh.
    let mut observers = by(deadline, connect_observers(audit, &ids)).await?;
    let sender = SenderConfig { shard, start_at: config.start_at, ..config.load_sender(Check::SHARDED) };
    let plan = Plan::credits(shard.count, preflight::TRIES).and(
        Plan::load(&config.load_workload(), config.layout, sender.retry.max_attempts)
            .map(|p| Plan { accounts: 0, ..p })?,
    );
    let range = aggregate_range(config, ids.account_base, &plan);
    let preflights = ids.account_base + load_span(config);
    observers = observers.only_accounts(range.clone());
    let before = (shard.index - 1) as i64;
    // Its own credits' accounts, and its preflight's: credit i's is the load's accounts' and i.
    let (first, events) =
        (ids.account_base + i64::from(config.load.workload.accounts), config.load.workload.events as i64);
    let own = |a: i64| {
        let i = a - first;
        a == preflights + before
            || ((0..events).contains(&i) && (i as usize) % shard.count == shard.index - 1)
    };
    by(deadline, read_baseline(&mut observers, config.layout, range, &own)).await?;
    let ctx = Ctx::new(
        probe,
        wire.clone(),
        Accounts::new(config.layout, ids.account_base, load_span(config) + before),
    );
    let mut workload = Workload::generate(&config.load_workload())?;
    ctx.accounts.lay_out(&mut workload, sender.retry.max_attempts)?;
    let workload = Arc::new(workload);
    step("preflight");
    let preflight = async {
        let sent = match preflight::preflight(&ctx, &t.url, shard.index - 1, preflight::AMOUNT).await? {
            Ok(sent) => sent,
            Err(fix) => return Err(AuditError::Preflight(fix)),
        };
        let book = book_of(&sent, &[], &[]);
        let settle = (w.quiet, w.settle_max);
        preflight::confirm(&observers, &sent, &book, settle, t).await?.map_err(AuditError::Preflight)
    };
    by(deadline, preflight).await?;
    step(&format!("parallel-load, shard {shard}"));
    let progress = Arc::new(Progress::default());
    config.pulse.load_started(progress.clone(), workload.groups.len() as u64);
    let sent =
        by(deadline, sender::run(workload.clone(), vec![t.url.clone()], wire, sender, progress)).await?;
    let run = AuditRun {
        url: t.url.clone(),
        signing: t.signing.as_str().to_string(),
        provider: t.provider,
        payload: t.payload.name(),
        id_prefix: ids.prefix,
        account_base: ids.account_base,
        observe_db: provision::hide_password(observe_db),
        applied_query: w.queries.applied.clone(),
        update_applied_query: w.queries.update_applied.clone(),
        state_query: w.queries.state.clone(),
        dead_letter_query: w.queries.dead_letters.clone(),
        balance_query: w.queries.balance.clone(),
        count_query: w.queries.count.clone(),
        parameters: config.parameters(),
    };
    let target = Target::Audit(Box::new(AuditShard { run, attempts: sent.attempts.clone() }));
    Ok(Partial::new((run_id, shard, target), &workload, config.start_at, &sent))
}
