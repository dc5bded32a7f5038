//! A worker that knows its database (issue 10, findings 4 and 6): a SQLite file deleted,
//! replaced or made read-only under a running worker, and a Postgres database out of reach or
//! read-only. In each the worker stops acknowledging (a 5xx, and `/healthz` says why), writes
//! nothing anywhere else, and recovers on its own when the database is back. Every wait is
//! bounded.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::proxy::{Proxy, upstream_of};
use common::worker::Worker;
use common::{Db, Server, Signed, credit, state};
use receivers::design::Design;
use receivers::store::{Store, StoreOptions};

/// Posts `event` until it is acknowledged, for at most `within`; the last answer.
async fn post_until_acknowledged(
    client: &reqwest::Client,
    url: &str,
    id: &str,
    within: Duration,
) -> (u16, String) {
    let start = Instant::now();
    loop {
        let answer = match Signed::new(&credit(id, 100)).request(client, url).send().await {
            Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
            Err(e) => (0, e.to_string()),
        };
        if answer.0 == 200 || start.elapsed() > within {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn health(client: &reqwest::Client, url: &str) -> (u16, String) {
    common::answer(client.get(url)).await
}

/// Ledger rows per event in the SQLite file at `path`, read with a connection of its own.
async fn ledger_of(path: &Path) -> Vec<(String, i64)> {
    let url = format!("sqlite://{}?mode=ro", path.display());
    let pool = sqlx::SqlitePool::connect(&url).await.expect("open the file");
    let rows =
        sqlx::query_as("SELECT event_id, count(*) FROM credit_ledger GROUP BY event_id ORDER BY event_id")
            .fetch_all(&pool)
            .await
            .expect("ledger");
    pool.close().await;
    rows
}

/// Events `ids` are each answered 503, and `/healthz` is a 503 that names the file.
async fn refuses_every_delivery(
    client: &reqwest::Client,
    worker: &Worker,
    ids: std::ops::RangeInclusive<u32>,
    case: &str,
) {
    for i in ids {
        let (status, body) =
            Signed::new(&credit(&format!("evt_{i:06}"), 100)).post(client, &worker.url()).await;
        assert_eq!(status, 503, "{case}: acknowledged: {body}");
    }
    let (status, body) = health(client, &worker.health_url()).await;
    assert_eq!(status, 503, "{case}: {body}");
    assert!(body.contains("receiver.db"), "{case}: the health answer names the file: {body}");
}

/// A directory with a fresh SQLite file, readable and writable by `uid` when given.
struct SqliteDir {
    dir: tempfile::TempDir,
}

impl SqliteDir {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("receiver.db")
    }

    fn url(&self) -> String {
        format!("sqlite://{}", self.path().display())
    }

    fn give_to(&self, uid: u32) {
        std::os::unix::fs::chown(self.dir.path(), Some(uid), Some(uid)).expect("chown dir");
        for entry in std::fs::read_dir(self.dir.path()).expect("read dir") {
            std::os::unix::fs::chown(entry.expect("entry").path(), Some(uid), Some(uid)).expect("chown file");
        }
    }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_sqlite_file_stops_acknowledgements_until_it_is_restored() {
    for design in [Design::Atomic, Design::Inbox] {
        let dir = SqliteDir::new();
        let worker = Worker::spawn(&["--design", design.as_str(), "--database-url", &dir.url()]);
        let client = reqwest::Client::new();
        let (status, body) = Signed::new(&credit("evt_000001", 100)).post(&client, &worker.url()).await;
        assert_eq!(status, 200, "{design}: {body}");
        tokio::time::sleep(Duration::from_millis(300)).await; // the inbox applies it
        let backup = dir.dir.path().join("backup.db");
        let pool = sqlx::SqlitePool::connect(&dir.url()).await.expect("open");
        sqlx::query(sqlx::AssertSqlSafe(format!("VACUUM INTO '{}'", backup.display())))
            .execute(&pool)
            .await
            .expect("backup");
        pool.close().await;

        std::fs::remove_file(dir.path()).expect("delete the database file");
        refuses_every_delivery(&client, &worker, 2..=21, &format!("{design}, file deleted")).await;
        assert!(!dir.path().exists(), "{design}: a new file appeared at the path");

        std::fs::copy(&backup, dir.path()).expect("restore");
        let (status, body) =
            post_until_acknowledged(&client, &worker.url(), "evt_000002", Duration::from_secs(10)).await;
        assert_eq!(status, 200, "{design}: not recovered: {body}");
        assert_eq!(health(&client, &worker.health_url()).await.0, 200, "{design}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        drop(worker);
        assert_eq!(
            ledger_of(&dir.path()).await,
            [("evt_000001".to_string(), 1), ("evt_000002".to_string(), 1)],
            "{design}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_sqlite_file_stops_acknowledgements_until_the_original_is_back() {
    let dir = SqliteDir::new();
    let worker = Worker::spawn(&["--design", "atomic", "--database-url", &dir.url()]);
    let client = reqwest::Client::new();
    assert_eq!(Signed::new(&credit("evt_000001", 100)).post(&client, &worker.url()).await.0, 200);
    let aside = dir.dir.path().join("aside.db");
    std::fs::rename(dir.path(), &aside).expect("move aside");
    std::fs::write(dir.path(), b"").expect("an empty file in its place");
    refuses_every_delivery(&client, &worker, 2..=11, "file replaced").await;
    assert_eq!(std::fs::metadata(dir.path()).expect("stat").len(), 0, "the replacement was written to");
    std::fs::rename(&aside, dir.path()).expect("put the original back");
    let (status, body) =
        post_until_acknowledged(&client, &worker.url(), "evt_000002", Duration::from_secs(10)).await;
    assert_eq!(status, 200, "not recovered: {body}");
    drop(worker);
    assert_eq!(ledger_of(&dir.path()).await, [("evt_000001".to_string(), 1), ("evt_000002".to_string(), 1)]);
}

/// The file is made read-only while the worker runs and opens new connections (a burst grows
/// its pool), then writable again: every acknowledged event is in the file, and within a bounded
/// time every delivery is acknowledged again. Root ignores file modes, so as root the worker runs
/// as `nobody`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_made_read_only_then_writable_recovers_on_its_own() {
    const NOBODY: u32 = 65_534;
    let dir = SqliteDir::new();
    let root = nix::unistd::Uid::effective().is_root();
    // The worker creates the file; as root it runs as nobody in a directory nobody owns.
    if root {
        dir.give_to(NOBODY);
    }
    let args = ["--design", "atomic", "--database-url", &dir.url(), "--max-connections", "8"];
    let worker = if root { Worker::spawn_as(NOBODY, dir.dir.path(), &args) } else { Worker::spawn(&args) };
    let client = reqwest::Client::new();
    assert_eq!(Signed::new(&credit("evt_000001", 100)).post(&client, &worker.url()).await.0, 200);

    chmod(&dir.path(), 0o444);
    let mut acknowledged = vec!["evt_000001".to_string()];
    let burst = (0..60).map(|i| {
        let (client, url) = (client.clone(), worker.url());
        async move {
            let id = format!("evt_r{i:05}");
            let (status, _) = Signed::new(&credit(&id, 100)).post(&client, &url).await;
            (id, status)
        }
    });
    let mut refused_while_read_only = 0;
    for (id, status) in futures_util::future::join_all(burst).await {
        assert!(status == 200 || status >= 500, "{id}: {status}");
        if status == 200 {
            acknowledged.push(id);
        } else {
            refused_while_read_only += 1;
        }
    }
    eprintln!("while read-only: {} acknowledged, {refused_while_read_only} refused", acknowledged.len() - 1);
    assert!(
        refused_while_read_only > 0,
        "the file's read-only mode never reached the worker's new connections"
    );
    chmod(&dir.path(), 0o644);

    // Within 10 s of the file being writable, 60 deliveries in a row are all acknowledged.
    let start = Instant::now();
    let mut refused = Vec::new();
    loop {
        refused.clear();
        for i in 0..60 {
            let id = format!("evt_w{i:05}");
            let (status, body) = Signed::new(&credit(&id, 100)).post(&client, &worker.url()).await;
            if status == 200 {
                acknowledged.push(id);
            } else {
                refused.push(format!("{id}: {status} {body}"));
            }
        }
        if refused.is_empty() || start.elapsed() > Duration::from_secs(10) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(refused.is_empty(), "still refusing 10 s after the file became writable: {refused:?}");
    assert_eq!(health(&client, &worker.health_url()).await.0, 200);
    drop(worker);
    let ledger = ledger_of(&dir.path()).await;
    acknowledged.sort();
    acknowledged.dedup();
    let applied: Vec<String> = ledger.iter().map(|(id, _)| id.clone()).collect();
    for id in &acknowledged {
        assert!(applied.contains(id), "{id} was acknowledged and is not in the file");
    }
    assert!(ledger.iter().all(|(_, n)| *n == 1), "{ledger:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_out_of_reach_answers_503_within_the_pool_timeout_and_recovers() {
    let db = Db::fresh(receivers::store::Backend::Postgres).await;
    let proxy = Proxy::start(upstream_of(&db.url)).await;
    let store = Store::connect(&proxy.url_through(&db.url), &StoreOptions::default()).await.expect("connect");
    let timeout = StoreOptions::default().acquire_timeout;
    assert!(timeout <= Duration::from_secs(3), "the default pool timeout is {timeout:?}");
    let server = Server::start_state(state(Design::Atomic, store, Duration::ZERO)).await;
    let client = reqwest::Client::new();
    assert_eq!(Signed::new(&credit("evt_000001", 100)).post(&client, &server.url()).await.0, 200);

    proxy.cut();
    let bound = timeout + Duration::from_secs(3);
    let started = Instant::now();
    let (status, body) = Signed::new(&credit("evt_000002", 100)).post(&client, &server.url()).await;
    let took = started.elapsed();
    assert_eq!(status, 503, "{body}");
    assert!(took < bound, "the 503 took {took:?}");
    let started = Instant::now();
    let (status, body) = health(&client, &format!("http://{}/healthz", server.addr)).await;
    assert_eq!(status, 503, "{body}");
    assert!(started.elapsed() < bound, "/healthz took {:?}", started.elapsed());

    proxy.restore().await;
    let (status, body) =
        post_until_acknowledged(&client, &server.url(), "evt_000002", Duration::from_secs(15)).await;
    assert_eq!(status, 200, "not recovered: {body}");
    assert_eq!(health(&client, &format!("http://{}/healthz", server.addr)).await.0, 200);
    server.stop().await;
    assert_eq!(db.applies().await, [("evt_000001".to_string(), 1), ("evt_000002".to_string(), 1)]);
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_postgres_database_is_unhealthy_and_refused_then_recovers() {
    let db = Db::fresh(receivers::store::Backend::Postgres).await;
    let server = Server::start(Design::Atomic, &db, Duration::ZERO).await;
    let client = reqwest::Client::new();
    let health_url = format!("http://{}/healthz", server.addr);
    assert_eq!(Signed::new(&credit("evt_000001", 100)).post(&client, &server.url()).await.0, 200);
    let name = db.url.rsplit('/').next().expect("database name").to_string();
    let admin = sqlx::PgPool::connect(common::pg_server().admin_url()).await.expect("admin");
    let set_read_only = async |on: bool| {
        let sql = if on {
            format!("ALTER DATABASE \"{name}\" SET default_transaction_read_only = on")
        } else {
            format!("ALTER DATABASE \"{name}\" RESET default_transaction_read_only")
        };
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&admin).await.expect("alter database");
        // Sessions pick the setting up when they start: end the ones open now.
        sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()")
            .bind(&name)
            .execute(&admin)
            .await
            .expect("terminate");
    };
    set_read_only(true).await;
    let (status, body) = health(&client, &health_url).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("read-only"), "{body}");
    for i in 2..=6 {
        let (status, body) =
            Signed::new(&credit(&format!("evt_{i:06}"), 100)).post(&client, &server.url()).await;
        assert_eq!(status, 503, "{body}");
    }
    set_read_only(false).await;
    let (status, body) =
        post_until_acknowledged(&client, &server.url(), "evt_000002", Duration::from_secs(10)).await;
    assert_eq!(status, 200, "not recovered: {body}");
    assert_eq!(health(&client, &health_url).await.0, 200);
    assert_eq!(db.applies().await, [("evt_000001".to_string(), 1), ("evt_000002".to_string(), 1)]);
    server.stop().await;
    db.cleanup().await;
}
