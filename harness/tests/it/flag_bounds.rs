//! Every numeric and duration flag of bench, merge, the experiments, serve and sign held to its bound,
//! through the real binary: a value out of range exits 2 naming the flag and the bound, before
//! anything runs (a flag accepted would start a bench, a worker or a sleep of years, which the
//! time limit here turns into a failure). Files given as flags are read within a limit.

use std::time::Duration;

use testkit::SECRET;
use testkit::measure::{Measured, peak_rss};

/// Far longer than refusing a flag takes.
const LIMIT: Duration = Duration::from_secs(60);

fn hookbench(args: &[&str]) -> Measured {
    peak_rss(env!("CARGO_BIN_EXE_hookbench"), args, LIMIT)
}

/// `hookbench args` exits 2 saying `flag` and every one of `said`.
fn refused(args: &[&str], flag: &str, said: &[&str]) {
    let run = hookbench(args);
    let stderr = run.stderr();
    assert_eq!(run.code, Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(flag), "{args:?} does not name {flag}: {stderr}");
    for s in said {
        assert!(stderr.contains(s), "{args:?} does not say {s}: {stderr}");
    }
}

/// A tiny bench that would run, if its flags were accepted.
fn bench_with<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let base = ["bench", "--backends", "sqlite", "--designs", "naive", "--events", "20", "--no-progress"];
    [&base[..], &["--out", out], extra].concat()
}

#[test]
fn bench_rates_outside_the_bound_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run");
    let out = out.to_str().expect("utf-8");
    for rate in ["-1", "NaN", "1e-300", "inf", "2e6"] {
        refused(&bench_with(out, &["--rate", rate]), "--rate", &["0.01", "1000000"]);
    }
}

#[test]
fn bench_durations_and_chances_outside_their_bounds_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run");
    let out = out.to_str().expect("utf-8");
    let cases: [(&str, &str, &str); 11] = [
        ("--work-delay", "500000y", "1m"),
        ("--timeout", "500000y", "1h"),
        ("--timeout", "0s", "1ms"),
        ("--retry-cap", "500000y", "1h"),
        ("--quiet-timeout", "500000y", "1h"),
        ("--poison", "2", "1"),
        ("--poison", "NaN", "1"),
        ("--p-duplicate", "-0.5", "1"),
        ("--shuffle-window", "4000000000", "10000"),
        ("--inbox-workers", "65", "64"),
        ("--witnesses", "100000000", "1000"),
    ];
    for (flag, value, bound) in cases {
        refused(&bench_with(out, &[flag, value]), flag, &[bound]);
    }
}

#[test]
fn a_fail_on_file_that_is_a_device_or_too_large_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run");
    let out = out.to_str().expect("utf-8");
    refused(&bench_with(out, &["--fail-on-file", "/dev/zero"]), "--fail-on-file", &["not a regular file"]);
    let big = dir.path().join("big.txt");
    std::fs::write(&big, "lost>0\n".repeat(200_000)).expect("written");
    let run = hookbench(&bench_with(out, &["--fail-on-file", big.to_str().expect("utf-8")]));
    assert_eq!(run.code, Some(2), "{}", run.stderr());
    assert!(run.stderr().contains("--fail-on-file") && run.stderr().contains("1048576"), "{}", run.stderr());
    assert!(run.peak_rss_mib() < 200.0, "{} MiB", run.peak_rss_mib());
}

#[test]
fn serve_jitter_and_sign_flags_outside_their_bounds_are_refused() {
    let serve = ["serve", "--design", "naive", "--database-url", "sqlite::memory:", "--secret", SECRET];
    for (flag, value, bound) in [
        ("--work-delay", "500000y", "1m"),
        ("--effect-delay", "500000y", "1m"),
        ("--header-timeout", "0s", "1ms"),
        ("--body-timeout", "500000y", "1h"),
        ("--pool-timeout", "500000y", "1h"),
        ("--max-clients", "0", "100000"),
        ("--max-body", "0", "1073741824"),
    ] {
        refused(&[&serve[..], &[flag, value]].concat(), flag, &[bound]);
    }
    for (flag, value) in [("--time-scale", "1e-300"), ("--time-scale", "NaN"), ("--recover-s", "1e300")] {
        refused(&["jitter", flag, value], flag, &[]);
    }
    refused(
        &["sign", "--secret", SECRET, "--id", "evt_1", "/dev/zero"],
        "/dev/zero",
        &["not a regular file"],
    );
}

#[test]
fn merge_and_shard_flags_outside_their_bounds_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shards = dir.path().to_str().expect("utf-8");
    let cases: [(&str, &str, &str); 7] = [
        ("--wait", "500000y", "1day"),
        ("--quiet-timeout", "500000y", "1h"),
        ("--quiet", "0s", "10ms"),
        ("--settle-max", "500000y", "1day"),
        ("--witnesses", "1000000", "1000"),
        ("--query-timeout", "500000y", "1h"),
        ("--max-rows", "0", "10000000000"),
    ];
    for (flag, value, bound) in cases {
        refused(&["merge", shards, flag, value], flag, &[bound]);
    }
    refused(&["audit", "http://127.0.0.1:1/", "--shards", "257"], "--shards", &["256"]);
    refused(&["bench", "--targets", "http://127.0.0.1:1/", "--shards", "257"], "--shards", &["256"]);
}
