//! hookbench as a client of what it starts and reads: a bench worker's database password never on
//! its command line, the sink's keys bounded, `--payload FILE` templates refused when a key holds a
//! placeholder or repeats.

use std::time::Duration;

use hookbench::fleet::{Fleet, WorkerSpec};
use receivers::design::Design;
use receivers::store::{Backend, Isolation};
use testkit::{Db, SECRET};

/// `url` with `password` for its user (the test server trusts local connections, so any
/// password connects).
fn with_password(url: &str, password: &str) -> String {
    url.replacen("postgres://postgres@", &format!("postgres://postgres:{password}@"), 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_database_password_is_not_on_its_command_line() {
    let db = Db::fresh(Backend::Postgres).await;
    let url = with_password(&db.url, "hunter2-not-in-argv");
    assert!(url.contains("hunter2"), "{url}");
    let spec = WorkerSpec {
        exe: env!("CARGO_BIN_EXE_hookbench").into(),
        design: Design::Atomic,
        database_url: url,
        secrets: vec![SECRET.to_string()],
        work_delay: Duration::ZERO,
        isolation: Isolation::ReadCommitted,
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
