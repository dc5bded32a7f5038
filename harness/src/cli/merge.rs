//! `hookbench merge`: shards' partial results into one run's report, held to `--fail-on`.

use std::io::Write;

use anyhow::Context;

use super::{MergeArgs, breached, hold_to, run_dir, runtime};
use crate::report::{BENCH_FIGURES, bench_scopes, render_metrics, render_table};
use crate::shard::{MergeConfig, merge};
use crate::threshold;

/// Merges, writes the reports, prints the table; exits 3 when a threshold is breached.
pub(super) fn run(args: &MergeArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let thresholds = args.thresholds.resolve(&bench_scopes(), BENCH_FIGURES)?;
    let (run_id, dir) = run_dir(args.out.as_deref(), "merge-");
    let config = MergeConfig {
        dirs: args.dirs.clone(),
        wait: args.wait,
        database_url: args.database_url.clone(),
        out: dir.clone(),
        run_id,
        quiet_timeout: args.quiet_timeout,
        witnesses: args.witnesses,
    };
    let mut report = runtime()?.block_on(merge(&config))?;
    hold_to(&mut report, &thresholds);
    let path = report.write_all(&dir).with_context(|| format!("writing {}", dir.display()))?;
    if let Some(file) = &args.metrics {
        let text = render_metrics(&report).context("encoding the metrics")?;
        std::fs::write(file, text).with_context(|| format!("writing --metrics {}", file.display()))?;
    }
    if let Some(m) = &report.shards {
        writeln!(out, "merged {} shards:", m.count)?;
        for s in &m.shards {
            writeln!(
                out,
                "  shard {}: {} groups, {} attempts, {:.1} s, started {:.3} s late",
                s.shard, s.groups, s.deliveries, s.elapsed_s, s.late_by_s
            )?;
        }
    }
    write!(out, "{}", render_table(&report))?;
    write!(out, "{}", threshold::render(&report.thresholds))?;
    writeln!(out, "\nreport: {}", path.display())?;
    breached(&report).map_or(Ok(()), |exit| Err(exit.into()))
}
