//! A sharded bench on this machine: two `hookbench bench --shard I/2` processes against one
//! fleet and one database, then `hookbench merge`, which must find what an unsharded run finds.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use hdrhistogram::Histogram;
use hookbench::cli::{Cli, run};
use hookbench::history::Line;
use hookbench::matrix::Design;
use hookbench::report::Report;
use hookbench::workload::{Workload, WorkloadConfig};
use testkit::SECRET;

/// Runs `hookbench` with `args` in-process; its exit status and output.
fn hookbench(args: &[&str]) -> (u8, String) {
    let cli = Cli::try_parse_from(std::iter::once("hookbench").chain(args.iter().copied()))
        .expect("valid arguments");
    let mut out = Vec::new();
    let code = match run(cli, &mut out) {
        Ok(()) => 0,
        Err(e) => {
            // As `cli::main` ends: an error that carries no status is one of 2.
            let code = e.downcast_ref::<hookbench::cli::Exit>().map_or(2, |x| x.code());
            out.extend_from_slice(format!("error: {e:#}").as_bytes());
            code
        }
    };
    (code, String::from_utf8(out).expect("utf-8"))
}

/// Two shard processes of the default workload against two workers of `design` on one new
/// SQLite file, started together on one --start-at, each writing into `root/<design>/shard-I`
/// (atomic's as an Indexed Job's pods: `--shards 2` and JOB_COMPLETION_INDEX);
/// `merge --wait` started beside them with `root/<design>` finds both when they are done. The
/// merge's exit status and output, and the database.
fn two_shards_and_a_waiting_merge(design: Design, root: &Path) -> (u8, String, String) {
    let db_url = format!("sqlite://{}/{design}.db", root.display());
    let spec = hookbench::fleet::WorkerSpec {
        inbox_workers: 1,
        max_connections: 8,
        ..crate::bench::receiver_spec(design, &db_url)
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (fleet, targets) = crate::bench::started_by_hand(&rt, spec);
    let start_at = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(2)).to_string();
    let shards_dir = root.join(design.as_str());
    let children: Vec<_> = (1..=2)
        .map(|i| {
            let mut shard = Command::new(env!("CARGO_BIN_EXE_hookbench"));
            shard
                .args(["bench", "--no-progress", "--designs", design.as_str(), "--targets", &targets])
                .args(["--database-url", &db_url, "--secret", SECRET, "--start-at", &start_at]);
            if design == Design::Atomic {
                // As a Kubernetes Indexed Job's pods run: the same arguments, the index from 0.
                shard.args(["--shards", "2"]).env("JOB_COMPLETION_INDEX", (i - 1).to_string());
            } else {
                shard.arg("--shard").arg(format!("{i}/2"));
            }
            shard
                .arg("--out")
                .arg(shards_dir.join(format!("shard-{i}")))
                .env_remove("DATABASE_URL")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the shard starts")
        })
        .collect();
    let out = root.join(format!("{design}-merged"));
    let (code, text) = merge(&[&shards_dir], &db_url, &out, &["--wait", "120s"]);
    for (i, c) in children.into_iter().enumerate() {
        let c = c.wait_with_output().expect("the shard ends");
        let said = format!("{}{}", String::from_utf8_lossy(&c.stdout), String::from_utf8_lossy(&c.stderr));
        assert!(c.status.success(), "shard {} of {design}: {said}", i + 1);
        assert!(said.contains(&format!("shard {}/2:", i + 1)), "{said}");
    }
    rt.block_on(fleet.stop()).expect("stop");
    (code, text, out.to_string_lossy().into_owned())
}

/// Merges `dirs` into `out`; the report and what merge printed.
fn merge(dirs: &[&Path], db_url: &str, out: &Path, extra: &[&str]) -> (u8, String) {
    let mut args = vec!["merge", "--database-url", db_url, "--out", out.to_str().expect("utf-8")];
    args.extend(extra);
    args.extend(dirs.iter().map(|d| d.to_str().expect("utf-8")));
    hookbench(&args)
}

/// The latencies from the planned time in the merged history, µs, in a histogram like the
/// sender's: the raw samples of every shard together.
fn planned_latencies(dir: &Path) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
    hookbench::history::read(dir, &mut |line| {
        if let Line::Attempt(a) = line {
            let us = ((a.answered_ms - a.planned_ms) * 1e3).round().max(1.0) as u64;
            h.record(us).expect("in bounds");
        }
    })
    .expect("the merged history");
    h
}

#[test]
fn two_shards_merged_find_what_an_unsharded_run_finds() {
    let root = tempfile::tempdir().expect("tempdir");
    for (design, dup_events, extra_applies) in [(Design::Naive, 354, 368), (Design::Atomic, 0, 0)] {
        let (code, text, out) = two_shards_and_a_waiting_merge(design, root.path());
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("merged 2 shards"), "{text}");
        let out = PathBuf::from(out);
        let report = Report::read_json(&out.join("report.json")).expect("report.json");
        let r = &report.rows()[0];
        // The default seed's figures, as the unsharded bench and the article's model give them.
        assert_eq!(
            (r.figures.dup_events, r.figures.extra_applies, r.figures.lost),
            (dup_events, extra_applies, 0),
            "{text}"
        );
        let model = r.model.as_ref().expect("model figures");
        assert_eq!((model.figures.dup_events, model.figures.extra_applies), (dup_events, extra_applies));
        assert_eq!(
            r.figures.expected, model.figures.expected,
            "every event of the default workload, in one shard"
        );
        // The witnesses come from the merged history, as a bench's do.
        let duplicates = report
            .bench_body()
            .expect("a bench")
            .witnesses
            .iter()
            .flat_map(|c| &c.witnesses)
            .filter(|w| w.class == "duplicate");
        assert_eq!(
            duplicates.count() > 0,
            dup_events > 0,
            "{:?}",
            report.bench_body().expect("a bench").witnesses
        );
        let shards = report.header.shards.as_ref().expect("the shards");
        let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
        assert!(md.contains("Merged from 2 shards") && md.contains("| 2/2 |"), "{md}");
        assert_eq!(shards.shards.iter().map(|s| s.deliveries).sum::<u64>(), r.deliveries);
        let plan = Workload::generate(&WorkloadConfig::default()).expect("the default workload");
        let groups = shards.shards.iter().map(|s| s.groups).sum::<usize>();
        assert_eq!(groups, plan.groups.len(), "the plan's groups, each sent by one shard");
        // The merged percentiles are those of every shard's samples together, read back from
        // the history (to the histogram's resolution: the history keeps milliseconds as floats).
        let raw = planned_latencies(&out);
        assert_eq!(raw.len(), r.latency_us.count);
        for (q, merged) in [(0.5, r.latency_us.p50), (0.99, r.latency_us.p99)] {
            let direct = raw.value_at_quantile(q);
            assert!(merged.abs_diff(direct) <= 2 + direct / 500, "p{q}: merged {merged}, samples {direct}");
        }
    }
    // A shard missing, a shard given twice, and shards of two runs are refused.
    let naive = |i: usize| root.path().join(format!("naive/shard-{i}"));
    let atomic2 = root.path().join("atomic/shard-2");
    let db = format!("sqlite://{}/naive.db", root.path().display());
    let refused = root.path().join("refused");
    let waited = std::time::Instant::now();
    let (code, text) = merge(&[&naive(1)], &db, &refused, &["--wait", "1500ms"]);
    assert!(code != 0 && text.contains("missing shard(s) 2/2"), "{text}");
    assert!(
        waited.elapsed() >= std::time::Duration::from_millis(1500),
        "--wait waited for the missing shard"
    );
    let (code, text) = merge(&[&naive(1), &naive(1)], &db, &refused, &[]);
    assert!(code != 0 && text.contains("shard 1/2 is given twice"), "{text}");
    let (code, text) = merge(&[&naive(1), &atomic2], &db, &refused, &[]);
    assert!(
        code != 0
            && text.contains("its kind of run differs (bench sqlite/atomic against bench sqlite/naive)"),
        "{text}"
    );
    assert!(!refused.join("report.json").exists(), "nothing written for refused shards");
}

#[test]
fn a_shard_needs_receivers_to_share_and_a_whole_number() {
    let alone = Cli::try_parse_from(["hookbench", "bench", "--shard", "1/2", "--designs", "atomic"]);
    assert!(alone.expect_err("no --targets").to_string().contains("--targets"));
    let t = [
        "--targets",
        "http://127.0.0.1:9/webhooks/x",
        "--secret",
        SECRET,
        "--database-url",
        "sqlite:///tmp/x.db",
    ];
    let cli = Cli::try_parse_from(["hookbench", "bench", "--shard", "3/2"].iter().chain(&t));
    assert!(cli.expect_err("3/2 refused").to_string().contains("numbered from 1 to N"));
    let mut args = vec!["bench", "--designs", "atomic", "--start-at", "2026-12-01T10:00:00Z"];
    args.extend(t);
    let (code, text) = hookbench(&args);
    assert!(code != 0 && text.contains("--start-at aligns the shards"), "{text}");
}
