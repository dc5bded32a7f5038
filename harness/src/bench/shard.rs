//! One shard of a sharded bench (`bench --shard I/N`): its part of the plan sent to the
//! `--targets`, its history, and its partial result, with no settle and no checker (the other
//! shards may still be sending; `merge` checks once they are all done).

use std::sync::Arc;

use super::{BenchConfig, ConfigError, parameters};
use crate::history::{COMPRESS_PAST_ATTEMPTS, History};
use crate::load::partial::{Partial, PartialError, Target};
use crate::progress::Bars;
use crate::sender::{self, Progress, SendError, SenderConfig};
use crate::wire::Wire;
use crate::workload::Shard;
use crate::workload::Workload;

/// Why a shard could not run.
#[derive(Debug, thiserror::Error)]
pub enum ShardRunError {
    /// The settings cannot run.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The sender could not send.
    #[error("sender")]
    Sender(#[from] SendError),
    /// The partial result could not be written.
    #[error(transparent)]
    Partial(#[from] PartialError),
}

/// Sends shard `shard`'s part of the plan and writes its partial result into `config.out`.
pub async fn run_shard(config: &BenchConfig, shard: Shard) -> Result<Partial, ShardRunError> {
    config.validate()?;
    let targets = config.targets.as_ref().ok_or(ConfigError::ShardWithoutTargets)?;
    let (backend, design) = (config.backends[0], config.designs[0]);
    let mut workload = Workload::generate(&config.workload).map_err(ConfigError::from)?;
    workload.poison(config.poison);
    let workload = Arc::new(workload);
    let groups = workload.groups.iter().filter(|g| shard.holds(g.event));
    let (groups, planned) = groups.fold((0u64, 0u64), |(n, c), g| (n + 1, c + u64::from(g.copies)));
    let compress = config.history_compress || planned > COMPRESS_PAST_ATTEMPTS;
    let history = History::create(&config.out, compress).map_err(ConfigError::History)?;
    let tap = history.tap(format!("{backend}/{design}"));
    let bars = Bars::new(config.progress);
    let progress = Arc::new(Progress::default());
    let bar = bars.cell(format!("shard {shard} {backend} {design}"), groups, progress.clone());
    if let Some(line) = crate::workload::late_start(shard, config.sender.start_at) {
        bars.say(&line);
    }
    let sender = SenderConfig { history: Some(tap), shard, ..config.sender.clone() };
    let sent = sender::run(
        workload.clone(),
        targets.urls.clone(),
        Arc::new(Wire::hookbench(targets.secret.as_str()).map_err(ConfigError::Secret)?),
        sender,
        progress,
    )
    .await;
    let (_, lines) = history.finish().map_err(ConfigError::History)?;
    let sent = sent?;
    bar.finished(&format!("{} attempts, {lines} history lines", sent.counters.deliveries));
    let database = provision::hide_password(&targets.database_url);
    let target = Target::Bench { backend, design, database, parameters: Box::new(parameters(config)) };
    let partial =
        Partial::new((config.run_id.clone(), shard, target), &workload, config.sender.start_at, &sent);
    partial.write(&config.out)?;
    Ok(partial)
}
