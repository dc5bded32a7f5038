//! The article's failure experiments against real receivers: crash and retention (jitter, which
//! runs on a scaled wall clock, has a test binary of its own so nothing else loads the machine
//! while it runs).

use clap::Parser;
use hookbench::cli::{Cli, run};

fn run_json(args: &[&str]) -> serde_json::Value {
    let cli = Cli::try_parse_from(args).expect("valid arguments");
    let mut out = Vec::new();
    run(cli, &mut out).expect("the experiment runs");
    serde_json::from_slice(&out).expect("JSON")
}

#[test]
fn a_crash_after_the_key_loses_the_event_only_when_the_key_committed_alone() {
    // The first 500 of the article's crash events: the model crashes 5 of them.
    let rows = run_json(&[
        "hookbench",
        "crash",
        "--events",
        "500",
        "--json",
        "--worker-exe",
        env!("CARGO_BIN_EXE_hookbench"),
    ]);
    let rows = rows.as_array().expect("rows");
    assert_eq!(rows.len(), 6, "3 designs x 2 backends: {rows:?}");
    let n = |r: &serde_json::Value, k: &str| r[k].as_i64().unwrap_or_else(|| panic!("{k} in {r}"));
    for r in rows {
        let design = r["design"].as_str().expect("design");
        // Crashes are real SIGABRT exits, as many as the article's draws say reach the point.
        assert!(n(r, "crashes") > 0 && n(r, "other_exits") == 0, "{r}");
        assert_eq!(n(r, "keys"), 500, "{r}");
        match design {
            "split" => {
                assert_eq!(n(r, "lost"), n(r, "crashes"), "every crash loses its event: {r}");
                assert_eq!(n(r, "crashes"), n(&r["model"], "crashes"), "{r}");
                assert_eq!(n(r, "lost"), n(&r["model"], "lost"), "{r}");
                assert_eq!(n(r, "ledger"), n(&r["model"], "ledger"), "{r}");
            }
            "atomic" | "inbox" => {
                assert_eq!((n(r, "lost"), n(r, "applied")), (0, 500), "{r}");
                assert_eq!(n(r, "ledger"), n(r, "expected"), "{r}");
                if design == "atomic" {
                    assert_eq!(n(r, "crashes"), n(&r["model"], "crashes"), "{r}");
                }
            }
            other => panic!("unexpected design {other}"),
        }
    }
}

#[test]
fn an_expiring_dedupe_store_lets_through_exactly_the_models_duplicates() {
    let runs = run_json(&["hookbench", "retention", "--events", "400", "--json"]);
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 2, "both backends: {runs:?}");
    for run in runs {
        let rows = run["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), 12, "3 schedules x 4 lifetimes");
        for r in rows {
            assert_eq!(r["duplicate_applies"], r["model"], "{} {}: {run}", r["schedule"], r["ttl"]);
        }
        // The 5-minute store lets retries through; 30 days stops them all.
        assert!(rows[0]["duplicate_applies"].as_u64() > Some(0), "{run}");
        assert_eq!(rows[3]["duplicate_applies"], 0, "{run}");
        // Keys really expired and were really deleted.
        assert!(run["keys_purged"].as_u64() > Some(0) && run["purges"].as_u64() > Some(1), "{run}");
        assert_eq!(run["keys_left"], 0, "{run}");
    }
}
