//! `hookbench merge`: shards' partial results into one run's report, held to `--fail-on`.

use std::io::Write;

use anyhow::Context;

use super::{Exit, MergeArgs, breached, hold_to, run_dir, runtime};
use crate::report::{
    AUDIT_FIGURES, BENCH_FIGURES, Report, audit_scopes, bench_scopes, render_audit_table, render_metrics,
    render_table,
};
use crate::shard::{MergeConfig, merge};
use crate::threshold;

/// Merges, writes the reports, prints the table. Exits 1 when a merged audit's load failed, 3
/// when a threshold is breached.
pub(super) fn run(args: &MergeArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    // Refused here, before anything is merged, when they would fit neither a bench nor an audit;
    // held to the kind of run the shards turn out to be below.
    let bench = args.thresholds.resolve(&bench_scopes(), BENCH_FIGURES);
    let audit = args.thresholds.resolve(&audit_scopes(), AUDIT_FIGURES);
    if let (Err(e), Err(_)) = (&bench, &audit) {
        anyhow::bail!("{e:#}");
    }
    let (run_id, dir) = run_dir(args.out.as_deref(), "merge-");
    let config = MergeConfig {
        dirs: args.dirs.clone(),
        wait: args.wait,
        database_url: args.database_url.clone(),
        out: dir.clone(),
        run_id,
        quiet_timeout: args.quiet_timeout,
        observe_db: args.observe_db.clone(),
        quiet: args.quiet,
        settle_max: args.settle_max,
        witnesses: args.witnesses,
    };
    let mut report = runtime()?.block_on(merge(&config))?;
    let thresholds = if report.audit.is_some() { audit } else { bench }?;
    hold_to(&mut report, &thresholds);
    let path = report.write_all(&dir).with_context(|| format!("writing {}", dir.display()))?;
    if let Some(file) = &args.metrics {
        let text = render_metrics(&report).context("encoding the metrics")?;
        std::fs::write(file, text).with_context(|| format!("writing --metrics {}", file.display()))?;
    }
    print_shards(&report, out)?;
    let table = if report.audit.is_some() { render_audit_table(&report) } else { render_table(&report) };
    write!(out, "{table}")?;
    write!(out, "{}", threshold::render(&report.thresholds))?;
    writeln!(out, "\nreport: {}", path.display())?;
    match &report.audit {
        Some(a) if a.failed() => {
            Err(Exit { code: 1, message: "the receiver failed: parallel-load".to_string() }.into())
        }
        _ => breached(&report).map_or(Ok(()), |exit| Err(exit.into())),
    }
}

/// One line per merged shard.
fn print_shards(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(m) = &report.shards else { return Ok(()) };
    writeln!(out, "merged {} shards:", m.count)?;
    for s in &m.shards {
        writeln!(
            out,
            "  shard {}: {} groups, {} attempts, {:.1} s, started {:.3} s late",
            s.shard, s.groups, s.deliveries, s.elapsed_s, s.late_by_s
        )?;
    }
    Ok(())
}
