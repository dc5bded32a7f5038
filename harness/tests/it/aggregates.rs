//! Apps audited as they are written: the balances example (examples/receivers/balances) credits a
//! balance and inserts a credit row keyed by its own ids, its dedupe table the only one holding
//! event ids. On SQLite and Postgres, through the real command line: judged by `--balance-query`
//! and by `--count-query` (each credit on an account of its own), its racy mode fails with exactly
//! the duplicates its own log records and its safe mode passes every check; the same with the
//! config `hookbench discover` writes, which names the dedupe table bookkeeping. Then what the
//! preflight confirms (a GitHub receiver routing only GitHub's types), discover refusing a database
//! another writer changes, a sharded audit merged, and the scarce layout (`--accounts`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use hookbench::audit::{Check, Status};
use hookbench::cli::{Cli, Exit, run};
use hookbench::report::Report;

use super::audit::{Receiver, SECRET_2, audit, audit_shards, merge, start, status, verdicts};
use testkit::SECRET;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/balances");
const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/balances/template.json");
const BALANCE: &str = "SELECT id, balance FROM customers";
const COUNT: &str = "SELECT customer, count(*) FROM credits GROUP BY customer";
const STATE: &str = "SELECT customer, version FROM subscriptions";

/// A database of the example's own: a Postgres database (no hookbench tables in it) or a SQLite
/// file.
struct ExampleDb {
    url: String,
    pg: Option<provision::FreshDatabase>,
    dir: tempfile::TempDir,
    /// Where the receiver writes its log.
    log: PathBuf,
}

impl ExampleDb {
    fn fresh(postgres: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("app.log");
        if postgres {
            let rt = tokio::runtime::Runtime::new().expect("runtime");
            let db = rt.block_on(testkit::pg_server().fresh_database()).expect("a fresh Postgres database");
            return Self { url: db.url.clone(), pg: Some(db), dir, log };
        }
        let url = format!("sqlite://{}", dir.path().join("app.db").display());
        Self { url, pg: None, dir, log }
    }

    /// The receiver on this database in `mode`, with `extra` flags.
    fn receiver(&self, mode: &str, extra: &[&str]) -> Receiver {
        let venv = format!("{EXAMPLE}/.venv/bin/python");
        let python = if self.pg.is_some() {
            assert!(
                Path::new(&venv).exists(),
                "psycopg2 is not installed: run examples/receivers/balances/install.sh ({venv} is missing)"
            );
            venv
        } else {
            "python3".to_string()
        };
        let mut cmd = Command::new(python);
        cmd.arg(format!("{EXAMPLE}/receiver.py"))
            .args([
                "--db", &self.url, "--mode", mode, "--port", "0", "--secret", SECRET, "--secret", SECRET_2,
            ])
            .arg("--log")
            .arg(&self.log)
            .args(extra);
        start(cmd)
    }

    /// Of the events whose ids contain `tag`, how many the receiver's log says it applied more
    /// than once (its own record of every credit applied).
    fn doubled_in_log(&self, tag: &str) -> usize {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let mut times: BTreeMap<&str, usize> = BTreeMap::new();
        for id in text.lines().filter_map(|l| l.split_whitespace().nth(1)).filter(|id| id.contains(tag)) {
            *times.entry(id).or_default() += 1;
        }
        times.values().filter(|&&n| n > 1).count()
    }
}

impl Drop for ExampleDb {
    fn drop(&mut self) {
        if let Some(db) = self.pg.take() {
            let rt = tokio::runtime::Runtime::new().expect("runtime");
            let _ = rt.block_on(db.drop_database());
        }
    }
}

/// The example on a fresh database in `mode` with `extra` flags, and its webhook URL.
fn running(postgres: bool, mode: &str, extra: &[&str]) -> (ExampleDb, Receiver, String) {
    let db = ExampleDb::fresh(postgres);
    let receiver = db.receiver(mode, extra);
    let url = format!("http://{}/webhooks", receiver.addr);
    (db, receiver, url)
}

/// `hookbench audit` of the example at `url` through `db` with the template, and `args`.
fn audit_example(url: &str, db: &ExampleDb, args: &[&str]) -> (u8, Report) {
    let base = [url, "--payload", TEMPLATE, "--observe-db", &db.url];
    let (code, report) = audit(&[&base[..], args].concat());
    (code, report.expect("a report"))
}

/// A check's result.
fn result(report: &Report, check: Check) -> &hookbench::report::CheckResult {
    let a = report.audit_section().expect("an audit");
    a.checks.iter().find(|c| c.check == check).unwrap_or_else(|| panic!("{check:?} in {:?}", a.checks))
}

/// The number of events a check found duplicated.
fn duplicated(report: &Report, check: Check) -> usize {
    let e = &result(report, check).evidence;
    let words: Vec<&str> = e.split(", ").collect();
    words
        .iter()
        .find_map(|w| w.split_once(" duplicate").and_then(|(n, _)| n.rsplit(' ').next()?.parse().ok()))
        .unwrap_or_else(|| panic!("no duplicate count in {e}"))
}

/// Racy: concurrent copies and the load fail with exactly the duplicates the receiver's log
/// records, through `query` alone.
fn racy_fails_as_its_log_says(postgres: bool, flag: &str, query: &str) {
    let (db, receiver, url) = running(postgres, "racy", &[]);
    let (code, report) = audit_example(
        &url,
        &db,
        &[flag, query, "--checks", "concurrent-copies,parallel-load", "--trials", "10"],
    );
    drop(receiver);
    let context = format!("{postgres} {flag}: {:?}", verdicts(&report));
    assert_eq!(code, 1, "{context}");
    assert_eq!(status(&report, Check::ConcurrentCopies), Status::Fail, "{context}");
    let cc = result(&report, Check::ConcurrentCopies);
    let observer = if flag == "--balance-query" { "balance" } else { "count" };
    assert!(
        cc.witnesses[0].observed.contains(&format!("{observer}: applied 2 times")),
        "{:?}",
        cc.witnesses[0]
    );
    assert_eq!(duplicated(&report, Check::ConcurrentCopies), db.doubled_in_log("_cc_"), "{context}");
    assert!(db.doubled_in_log("_cc_") > 0, "the copies raced: {context}");
    assert_eq!(duplicated(&report, Check::ParallelLoad), db.doubled_in_log("_evt_"), "{context}");
}

/// Safe: every check passes, by balances and counts together (the disturbing checks and the race
/// window need flags of their own; the template carries no object, so no semantic duplicate).
fn safe_passes_every_check(postgres: bool) {
    let (db, receiver, url) = running(postgres, "safe", &[]);
    let (code, report) = audit_example(
        &url,
        &db,
        &["--balance-query", BALANCE, "--count-query", COUNT, "--state-query", STATE, "--stall-wait", "6s"],
    );
    drop(receiver);
    let v = verdicts(&report);
    assert_eq!(code, 0, "{v:?}");
    let skipped = [
        Check::SemanticDuplicate,
        Check::RaceWindow,
        Check::Crash,
        Check::Poison,
        Check::Capacity,
        Check::RetryStorm,
    ];
    for (check, s) in &v {
        let expected = if skipped.contains(check) { Status::Skipped } else { Status::Pass };
        assert_eq!(*s, expected, "{check:?} in {v:?}");
    }
    let load = &result(&report, Check::ParallelLoad).evidence;
    assert!(load.contains("0 unexplained-change") && load.contains("0 duplicate"), "{load}");
    assert_eq!(db.doubled_in_log(""), 0, "nothing applied twice");
}

/// `hookbench discover` of the example: its config on stdout, its words on stderr (not kept).
fn discover(url: &str, db: &ExampleDb, extra: &[&str]) -> Result<String, (u8, String)> {
    let args = ["hookbench", "discover", url, "--no-progress", "--secret", SECRET, "--payload", TEMPLATE];
    let args: Vec<&str> =
        args.iter().copied().chain(["--observe-db", &db.url]).chain(extra.iter().copied()).collect();
    let cli = Cli::try_parse_from(args).expect("arguments parse");
    let mut out = Vec::new();
    match run(cli, &mut out) {
        Ok(()) => Ok(String::from_utf8(out).expect("utf-8")),
        Err(e) => {
            let exit = e.downcast_ref::<Exit>().unwrap_or_else(|| panic!("not an exit status: {e:#}"));
            Err((exit.code(), exit.message.clone()))
        }
    }
}

/// `hookbench audit --config FILE` with the tests' secrets, a small load and `extra`, read as the
/// binary reads its arguments: its exit status and its report.
fn audit_config(file: &str, extra: &[&str]) -> (u8, Option<Report>) {
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("audit");
    let common =
        ["--secret", SECRET, "--secret", SECRET_2, "--events", "200", "--rate", "400", "--quiet", "300ms"];
    let base =
        ["hookbench", "audit", "--config", file, "--no-progress", "--out", dir.to_str().expect("utf-8")];
    let argv: Vec<&str> = base.iter().chain(&common).chain(extra).copied().collect();
    let Ok(hookbench::cli::Invocation::Run(cli)) = hookbench::cli::parse_from(argv) else { panic!("parses") };
    let code = match run(*cli, &mut Vec::new()) {
        Ok(()) => 0,
        Err(e) => e.downcast_ref::<Exit>().unwrap_or_else(|| panic!("not an exit status: {e:#}")).code(),
    };
    (code, Report::read_json(&dir.join("report.json")).ok())
}

/// Discover proposes the effect tables and names the dedupe table bookkeeping, in either mode; the
/// audit of its config fails racy with the log's duplicates and passes safe.
fn discovered_config_judges_both_modes(postgres: bool) {
    for mode in ["racy", "safe"] {
        let (db, receiver, url) = running(postgres, mode, &[]);
        let config = discover(&url, &db, &[]).unwrap_or_else(|e| panic!("{mode}: {e:?}"));
        let balance = if postgres { "SELECT id, CAST(balance AS bigint) FROM customers" } else { BALANCE };
        assert!(
            config.contains(&format!("balance-query = \"{balance}\""))
                && config.contains(&format!("count-query = \"{COUNT}\"")),
            "{mode}: {config}"
        );
        assert!(
            config.contains("processed_events: 1 row inserted")
                && config.contains("bookkeeping (a dedupe table)")
                && !config.contains("applied-query"),
            "{mode}: the dedupe table is named bookkeeping, never proposed: {config}"
        );
        let file = db.dir.path().join("hookbench.toml");
        std::fs::write(&file, &config).expect("the config");
        let file = file.to_str().expect("utf-8");
        let (code, report) = audit_config(
            file,
            &["--checks", "sequential-duplicate,concurrent-copies,parallel-load", "--trials", "10"],
        );
        drop(receiver);
        let report = report.expect("a report");
        let context = format!("{postgres} {mode}: {:?}", verdicts(&report));
        if mode == "racy" {
            assert_eq!(code, 1, "{context}");
            assert_eq!(duplicated(&report, Check::ConcurrentCopies), db.doubled_in_log("_cc_"), "{context}");
            assert_eq!(duplicated(&report, Check::ParallelLoad), db.doubled_in_log("_evt_"), "{context}");
        } else {
            assert_eq!(code, 0, "{context}");
        }
    }
}

#[test]
fn the_example_on_sqlite_is_judged_by_its_balances_and_its_rows() {
    racy_fails_as_its_log_says(false, "--balance-query", BALANCE);
    racy_fails_as_its_log_says(false, "--count-query", COUNT);
    safe_passes_every_check(false);
}

#[test]
fn the_example_on_postgres_is_judged_by_its_balances_and_its_rows() {
    racy_fails_as_its_log_says(true, "--balance-query", BALANCE);
    racy_fails_as_its_log_says(true, "--count-query", COUNT);
    safe_passes_every_check(true);
}

#[test]
fn a_config_discover_wrote_judges_the_example_on_sqlite() {
    discovered_config_judges_both_modes(false);
}

#[test]
fn a_config_discover_wrote_judges_the_example_on_postgres() {
    discovered_config_judges_both_modes(true);
}

#[test]
fn discover_refuses_a_database_another_writer_changes_naming_it() {
    let (db, _receiver, url) = running(false, "safe", &["--heartbeat", "0.2"]);
    // The writer is running before discover looks: its table is there (a table it created after
    // discover's first look would show only as a commit, not by its name).
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        use sqlx::Connection;
        let options = <sqlx::sqlite::SqliteConnectOptions as std::str::FromStr>::from_str(&db.url)
            .expect("a SQLite URL")
            .read_only(true);
        for _ in 0..300 {
            if let Ok(mut conn) = sqlx::sqlite::SqliteConnection::connect_with(&options).await {
                let there: Result<i64, _> =
                    sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE name = 'job_runs'")
                        .fetch_one(&mut conn)
                        .await;
                if there.is_ok_and(|n| n > 0) {
                    return;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("the heartbeat's table job_runs was not created within 30 s");
    });
    let (code, said) = discover(&url, &db, &[]).expect_err("not quiet");
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("the database is not quiet") && said.contains("job_runs"), "{said}");
}

#[test]
fn a_read_modify_write_handler_shows_one_apply_in_its_balance_and_two_in_its_rows() {
    let (db, _receiver, url) = running(false, "read-modify-write", &[]);
    let (code, report) = audit_example(
        &url,
        &db,
        &[
            "--balance-query",
            BALANCE,
            "--count-query",
            COUNT,
            "--checks",
            "concurrent-copies",
            "--trials",
            "5",
        ],
    );
    assert_eq!(code, 1, "{:?}", verdicts(&report));
    let w = &result(&report, Check::ConcurrentCopies).witnesses[0];
    assert!(w.observed.contains("balance: applied 1 times, count: applied 2 times"), "{w:?}");
}

#[test]
fn accounts_that_already_hold_something_stop_the_audit_naming_the_account_base() {
    let (db, _receiver, url) = running(false, "safe", &[]);
    let args = ["--balance-query", BALANCE, "--checks", "sequential-duplicate", "--account-base", "5000"];
    assert_eq!(audit_example(&url, &db, &args).0, 0, "the first audit of these accounts");
    let (code, said, _) = super::audit::run_audit(
        &[&[url.as_str(), "--secret", SECRET, "--payload", TEMPLATE, "--observe-db", &db.url][..], &args]
            .concat(),
    );
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("must hold nothing") && said.contains("--account-base"), "{said}");
}

#[test]
fn scarce_accounts_carry_place_values_and_judge_both_modes() {
    let args = [
        "--balance-query",
        BALANCE,
        "--accounts",
        "3",
        "--max-amount",
        "1000000000000",
        "--checks",
        "sequential-duplicate,concurrent-copies,parallel-load",
        "--trials",
        "4",
        "--probe-events",
        "2",
        "--events",
        "20",
        "--max-attempts",
        "2",
    ];
    for (mode, expected) in [("safe", 0), ("racy", 1)] {
        let (db, _receiver, url) = running(false, mode, &[]);
        let base = [url.as_str(), "--secret", SECRET, "--payload", TEMPLATE, "--observe-db", &db.url];
        let (code, said, report) = super::audit::run_audit(&[&base[..], &args].concat());
        let report = report.unwrap_or_else(|| panic!("{mode}: {said}"));
        let context = format!("{mode}: {said} {:?}", verdicts(&report));
        assert_eq!(code, expected, "{context}");
        let layout = &report.audit_section().expect("an audit").parameters.layout;
        assert!(matches!(layout, hookbench::workload::Layout::Scarce { accounts: 3, .. }), "{layout:?}");
        if mode == "racy" {
            assert_eq!(duplicated(&report, Check::ConcurrentCopies), db.doubled_in_log("_cc_"), "{context}");
        }
    }
    // A plan that cannot fit is refused before anything is sent, naming the flag.
    let (db, _receiver, url) = running(false, "safe", &[]);
    let (code, said, _) = super::audit::run_audit(&[
        url.as_str(),
        "--secret",
        SECRET,
        "--payload",
        TEMPLATE,
        "--observe-db",
        &db.url,
        "--balance-query",
        BALANCE,
        "--accounts",
        "2",
        "--max-amount",
        "100000",
    ]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("--max-amount 100,000") && said.contains("--accounts 2"), "{said}");
}

#[test]
fn a_sharded_audit_by_balances_merges_into_one_verdict() {
    let (db, receiver, url) = running(false, "racy", &[]);
    let shards = tempfile::tempdir().expect("tempdir");
    let flags = [
        "--payload",
        TEMPLATE,
        "--observe-db",
        &db.url,
        "--balance-query",
        BALANCE,
        "--checks",
        "parallel-load",
        "--events",
        "200",
        "--rate",
        "200",
    ];
    audit_shards(&url, &flags, shards.path());
    let merged = shards.path().join("merged");
    let (result, said) = merge(shards.path(), &merged, &["--balance-query", BALANCE]);
    drop(receiver);
    let report =
        Report::read_json(&merged.join("report.json")).unwrap_or_else(|e| panic!("{e}: {said} {result:?}"));
    let load = &report.audit_section().expect("an audit").checks[0];
    assert!(load.evidence.contains("200 events"), "{}", load.evidence);
    assert_eq!(duplicated(&report, Check::ParallelLoad), db.doubled_in_log("_evt_"), "{}", load.evidence);
    assert!(
        load.evidence.contains("0 lost") && load.evidence.contains("0 unexplained-change"),
        "{}",
        load.evidence
    );
    // The same queries or none: a merge without the balance query judges nothing by it.
    let (refused, _) = merge(shards.path(), &shards.path().join("again"), &[]);
    assert!(refused.is_err(), "a merge with other queries than the shards'");
}

#[test]
fn a_fee_stops_the_audit_at_the_preflight_quoting_the_numbers() {
    let (db, _receiver, url) = running(false, "safe", &["--fee", "30"]);
    let base = [url.as_str(), "--secret", SECRET, "--payload", TEMPLATE, "--observe-db", &db.url];
    let (code, said, _) =
        super::audit::run_audit(&[&base[..], &["--balance-query", BALANCE, "--quiet", "300ms"]].concat());
    assert_eq!(code, 2, "{said}");
    assert!(
        said.contains(
            "the balance moved by +70 for a credit of 100: not a whole number of its amount (--balance-query)"
        ) && said.contains("a fee, rounding or a currency conversion?"),
        "{said}"
    );
    // Its rows are still one per credit: a count judges it.
    let (code, said, _) = super::audit::run_audit(
        &[&base[..], &["--count-query", COUNT, "--quiet", "300ms", "--checks", "sequential-duplicate"]]
            .concat(),
    );
    assert_eq!(code, 0, "{said}");
}
