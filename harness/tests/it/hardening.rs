//! hookbench as a client of what it starts and reads: a bench worker's database password never on
//! its command line, the sink's keys bounded, `--payload FILE` templates refused when a key holds a
//! placeholder or repeats.

use std::time::Duration;

use hookbench::fleet::{Fleet, WorkerSpec};
use hookbench::matrix::Design;
use hookbench::observe::{Sink, SinkLimits};
use receivers::store::Backend;
use testkit::{Db, SECRET};

/// `url` with `password` for its user (the test server trusts local connections, so any
/// password connects).
/// `url` as the role `ROLE`, whose password is `PASSWORD`, whatever user and password it had (a
/// container's URL carries one; a local server's may not).
fn as_role(url: &str) -> String {
    let (_, at) = url.split_once('@').expect("a URL with a host");
    format!("postgres://{ROLE}:{PASSWORD}@{at}")
}

const ROLE: &str = "hookbench_argv_test";
const PASSWORD: &str = "hunter2-not-in-argv";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_database_password_is_not_on_its_command_line() {
    let db = Db::fresh(Backend::Postgres).await;
    db.execute(
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'hookbench_argv_test') THEN \
         CREATE ROLE hookbench_argv_test LOGIN SUPERUSER PASSWORD 'hunter2-not-in-argv'; END IF; END $$",
    )
    .await;
    let url = as_role(&db.url);
    assert!(url.contains(PASSWORD), "{url}");
    let spec = WorkerSpec {
        exe: env!("CARGO_BIN_EXE_hookbench").into(),
        design: Design::Atomic,
        database_url: url,
        secrets: vec![SECRET.to_string()],
        work_delay: Duration::ZERO,
        isolation: None,
        inbox_workers: 2,
        max_connections: 2,
        log: None,
        inject_faults: false,
        pool_timeout: hookbench::fleet::WORKER_POOL_TIMEOUT,
    };
    let fleet = Fleet::start(spec, 1).await.expect("the worker starts and answers");
    let pid = fleet.workers()[0].pid;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(cmdline.contains("serve"), "{cmdline}");
    assert!(!cmdline.contains("hunter2") && !cmdline.contains("postgres://"), "{cmdline}");
    fleet.stop().await.expect("stops");
    db.cleanup().await;
}

/// Posts `body` (with `key` as its Idempotency-Key header, if given) to the sink; the status.
async fn call(client: &reqwest::Client, sink: &Sink, key: Option<&str>, body: String) -> u16 {
    let mut request = client.post(format!("http://{}/effect", sink.addr)).body(body);
    if let Some(k) = key {
        request = request.header("Idempotency-Key", k);
    }
    request.send().await.expect("the sink answers").status().as_u16()
}

#[tokio::test]
async fn the_sink_refuses_long_keys_and_keys_past_its_count() {
    let sink =
        Sink::start_with_limits("127.0.0.1:0", "event_id", SinkLimits { max_key_bytes: 64, max_keys: 10 })
            .await
            .expect("listens");
    let client = reqwest::Client::new();
    let long = "k".repeat(65);
    assert_eq!(call(&client, &sink, None, format!(r#"{{"event_id":"{long}"}}"#)).await, 400);
    assert_eq!(call(&client, &sink, Some(&long), String::new()).await, 400);
    for k in 0..10 {
        assert_eq!(call(&client, &sink, Some(&format!("evt_{k}")), String::new()).await, 200);
    }
    assert_eq!(call(&client, &sink, Some("evt_past_the_count"), String::new()).await, 507);
    // A key already kept is still counted.
    assert_eq!(call(&client, &sink, Some("evt_3"), String::new()).await, 200);
    let applies = sink.applies();
    assert_eq!(applies.len(), 10);
    assert_eq!(applies.get("evt_3"), Some(&2));
    assert_eq!(sink.refused(), 3, "the refused calls are counted for the report");
}

#[tokio::test]
async fn the_sinks_default_bounds_keep_huge_keys_out_of_memory() {
    let sink = Sink::start("127.0.0.1:0", "event_id").await.expect("listens");
    let client = reqwest::Client::new();
    let huge = "k".repeat(1_900_000);
    for n in 0..20 {
        let body = format!(r#"{{"event_id":"{n}{huge}"}}"#);
        assert_eq!(call(&client, &sink, None, body).await, 400);
    }
    assert!(sink.applies().is_empty());
    assert_eq!(sink.refused(), 20);
    let short = format!("evt_{}", "x".repeat(SinkLimits::default().max_key_bytes - 4));
    assert_eq!(call(&client, &sink, Some(&short), String::new()).await, 200);
}

#[tokio::test]
async fn a_runs_sink_keeps_only_the_runs_own_keys() {
    let limits = SinkLimits { max_key_bytes: 64, max_keys: 10 };
    let sink = Sink::start_for_run("127.0.0.1:0", "event_id", limits, "run7_").await.expect("listens");
    let client = reqwest::Client::new();
    // Past max_keys of other keys: answered, never kept, so they cannot crowd out the run's.
    for k in 0..50 {
        assert_eq!(call(&client, &sink, Some(&format!("other_{k}")), String::new()).await, 200);
    }
    assert_eq!(call(&client, &sink, Some("run7_evt_1"), String::new()).await, 200);
    assert_eq!(call(&client, &sink, None, r#"{"event_id":"run7_evt_1"}"#.into()).await, 200);
    let applies = sink.applies();
    assert_eq!(applies.len(), 1, "{applies:?}");
    assert_eq!(applies.get("run7_evt_1"), Some(&2));
    assert_eq!(sink.refused(), 0);
}
