//! `hookbench serve` as a process: its listening line, a clean stop on SIGTERM, and clear
//! errors for bad arguments.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn hookbench() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookbench"));
    cmd.env_remove("DATABASE_URL").env_remove("HOOKBENCH_SECRET");
    cmd
}

#[test]
fn prints_where_it_listens_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/fresh.db", dir.path().display());
    let mut child = hookbench()
        .args([
            "serve",
            "--design",
            "inbox",
            "--listen",
            "127.0.0.1:0",
            "--secret",
            SECRET,
            "--database-url",
            &url,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
    let v: serde_json::Value = serde_json::from_str(&line).expect("one JSON line");
    assert!(v["listening"].as_str().expect("address").starts_with("127.0.0.1:"), "{line}");
    assert_ne!(v["listening"], "127.0.0.1:0");
    assert_eq!((v["design"].as_str(), v["backend"].as_str()), (Some("inbox"), Some("sqlite")));
    assert_eq!(v["pid"].as_u64(), Some(u64::from(child.id())));
    // The SQLite file was created and migrated by serve itself.
    assert!(dir.path().join("fresh.db").exists());
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("SIGTERM");
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
}

#[test]
fn an_unknown_design_is_refused_with_the_list() {
    let out = hookbench()
        .args(["serve", "--design", "optimistic", "--secret", SECRET, "--database-url", "sqlite:///tmp/x.db"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'optimistic'") && err.contains("--design") && err.contains("version-guard"),
        "{err}"
    );
}

#[test]
fn a_switch_given_twice_is_accepted() {
    // Scripts pass `--no-progress` and so may their callers (scripts/nightly.sh did).
    let out = hookbench().args(["bench", "--no-progress", "--no-progress", "--help"]).output().expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_backend_that_contradicts_the_url_is_refused() {
    let out = hookbench()
        .args(["serve", "--design", "atomic", "--backend", "postgres", "--secret", SECRET])
        .args(["--database-url", "sqlite:///tmp/never-created.db"])
        .output()
        .expect("run");
    // A worker that cannot start as asked: the run could not be done (2), not a failed verdict (1).
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--backend postgres does not match the database URL, which names sqlite"), "{err}");
}

#[test]
fn an_unsupported_database_is_a_clear_error() {
    let out = hookbench()
        .args(["serve", "--design", "atomic", "--secret", SECRET])
        .args(["--database-url", "oracle://localhost/db"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unsupported database URL") && err.contains("mysql://"), "{err}");
}

#[test]
fn an_unreachable_mysql_server_is_a_clear_error_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let out = hookbench()
        .args(["serve", "--design", "atomic", "--secret", SECRET])
        .args(["--database-url", &format!("mysql://root:sekrit@127.0.0.1:{port}/db")])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused") && !err.contains("sekrit"), "{err}");
}

#[test]
fn a_bad_secret_is_refused() {
    let out = hookbench()
        .args(["serve", "--design", "atomic", "--secret", "hunter2", "--database-url", "sqlite:///tmp/x.db"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("whsec_"));
}

#[test]
fn a_limit_of_zero_is_refused_naming_its_flag() {
    // Refused by the flags' parsers: exit 2, naming the flag and its lower bound.
    for (flag, value, bound) in
        [("--max-clients", "0", "1"), ("--header-timeout", "0s", "1ms"), ("--pool-timeout", "0s", "1ms")]
    {
        let out = hookbench()
            .args(["serve", "--design", "atomic", "--secret", SECRET, "--database-url", "sqlite:///tmp/x.db"])
            .args([flag, value])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag) && err.contains(bound), "{flag}: {err}");
    }
}
