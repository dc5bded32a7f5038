//! A long audit or bench cell run without a terminal (a CI log) is never silent: besides its step
//! lines it prints its status (which check, how far the load came, the attempts and answers so
//! far) whenever it printed nothing for 9 s. The gap itself is not asserted (the machine is
//! noisy); that a load longer than two heartbeats is heard from while it runs, with figures that
//! agree with its report, is.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use hookbench::report::Report;
use receivers::design::Design;
use receivers::store::Backend;
use testkit::{Db, SECRET};

use super::audit::start;

/// Runs `cmd` (stdout discarded, stderr read line by line) and returns its exit status and the
/// lines it wrote on stderr.
fn stderr_lines(mut cmd: Command) -> (Option<i32>, Vec<String>) {
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawns");
    let lines = BufReader::new(child.stderr.take().expect("stderr")).lines().map_while(Result::ok).collect();
    (child.wait().expect("waits").code(), lines)
}

/// The number that follows `marker` in `line` (the attempts of a status line).
fn number_after(line: &str, marker: &str) -> u64 {
    line.split(marker)
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {marker:?} in {line}"))
}

#[test]
fn an_audit_without_a_terminal_says_how_far_its_load_came() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let db = rt.block_on(Db::fresh(Backend::Sqlite));
    let mut serve = Command::new(env!("CARGO_BIN_EXE_hookbench"));
    serve.args(["serve", "--design", Design::Atomic.as_str(), "--database-url", &db.url]);
    serve.args(["--listen", "127.0.0.1:0", "--secret", SECRET]);
    let receiver = start(serve);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("audit");
    let mut audit = Command::new(env!("CARGO_BIN_EXE_hookbench"));
    // 2,000 events at 100 a second: a load of about 20 s, two heartbeats and more.
    audit.args(["audit", &format!("http://{}/webhooks/acme", receiver.addr), "--secret", SECRET]);
    audit.args(["--observe-db", &db.url, "--applied-query", super::audit::APPLIED]);
    audit.args(["--checks", "parallel-load", "--events", "2000", "--rate", "100", "--quiet", "300ms"]);
    audit.arg("--out").arg(&out);
    let (code, lines) = stderr_lines(audit);
    assert_eq!(code, Some(0), "{lines:#?}");
    for step in ["hookbench audit: preflight", "hookbench audit: parallel-load"] {
        assert!(lines.iter().any(|l| l == step), "no step line {step:?}: {lines:#?}");
    }
    let status: Vec<&String> = lines.iter().filter(|l| l.contains("parallel-load: load ")).collect();
    assert!(!status.is_empty(), "no status line during the load: {lines:#?}");
    let report = Report::read_json(&out.join("report.json")).expect("report");
    let load = super::audit::load_figures(&report).expect("the load's figures");
    for line in status {
        // `hookbench audit: 9 s, parallel-load: load 936/1546 groups; 980 attempts: 979 2xx, ...`
        let figures = line.split("load ").nth(1).expect("load");
        let (done, planned) = figures.split_once(" groups").expect("groups").0.split_once('/').expect("a/b");
        let (done, planned): (u64, u64) = (done.parse().expect("done"), planned.parse().expect("planned"));
        assert!(done < planned && planned >= load.events, "{line}: {load:?}");
        let attempts = number_after(line, "groups; ");
        // The load's attempts so far, and the preflight's one.
        assert!(attempts <= load.deliveries + 1, "{line}: more than the load sent: {load:?}");
    }
    drop(receiver);
    rt.block_on(db.cleanup());
}

#[test]
fn a_bench_cell_without_a_terminal_says_how_far_it_came() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bench = Command::new(env!("CARGO_BIN_EXE_hookbench"));
    // 1,500 events at 100 a second: a cell of about 15 s.
    bench.args(["bench", "--backends", "sqlite", "--designs", "atomic", "--events", "1500", "--rate", "100"]);
    bench.arg("--out").arg(dir.path());
    let (code, lines) = stderr_lines(bench);
    assert_eq!(code, Some(0), "{lines:#?}");
    let report = Report::read_json(&dir.path().join("report.json")).expect("report");
    let cell = &report.bench_body().expect("a bench").rows[0];
    let status: Vec<&String> = lines.iter().filter(|l| l.contains(" groups, ")).collect();
    assert!(!status.is_empty(), "no status line while the cell sent: {lines:#?}");
    for line in status {
        // `hookbench: sqlite atomic: 917/1546 groups, 949 attempts, 0 5xx, 23 timeouts`
        let attempts = number_after(line, " groups, ");
        assert!(attempts <= cell.deliveries, "{line}: more than the cell's {} attempts", cell.deliveries);
    }
}
