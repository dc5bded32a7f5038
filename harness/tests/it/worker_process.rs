//! `hookbench serve` as a real process, where only a process will do: a worker whose SQLite file
//! is deleted, replaced or made read-only under it (as another user, when the tests run as
//! root), and a worker's resident memory after abusive clients leave (issue 10, findings 3 and 4).
//! Every wait is bounded.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use receivers::design::Design;
use receivers::store::Backend;
use testkit::worker::Worker;
use testkit::{Db, Signed, credit, health, post_until_acknowledged, send, signed_looking_head};
use tokio::io::AsyncWriteExt;

const HOOKBENCH: &str = env!("CARGO_BIN_EXE_hookbench");

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
        let worker = Worker::spawn(HOOKBENCH, &["--design", design.as_str(), "--database-url", &dir.url()]);
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
    let worker = Worker::spawn(HOOKBENCH, &["--design", "atomic", "--database-url", &dir.url()]);
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
    let worker = if root {
        Worker::spawn_as(HOOKBENCH, NOBODY, dir.dir.path(), &args)
    } else {
        Worker::spawn(HOOKBENCH, &args)
    };
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

/// 150 clients each hold a 1,048,000-byte body half sent, then leave: the worker's resident
/// memory, which grew while it held them, is back near where it started. A generous bound:
/// this is about memory kept for good, not about a figure (that is what `just perf` is for).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_workers_memory_returns_to_its_baseline_after_abusive_clients_leave() {
    const BODY: usize = 1_048_000;
    for backend in Backend::ALL {
        let db = Db::fresh(backend).await;
        let worker = Worker::spawn(HOOKBENCH, &["--design", "atomic", "--database-url", &db.url]);
        let client = reqwest::Client::new();
        for i in 0..200 {
            let (status, body) =
                Signed::new(&credit(&format!("evt_{i:06}"), 100)).post(&client, &worker.url()).await;
            assert_eq!(status, 200, "{backend}: {body}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let baseline = worker.rss_kib();

        let head = signed_looking_head(&format!("content-length: {BODY}\r\n"));
        let filler = vec![b'x'; BODY - 10];
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..150 {
            let (addr, head, filler) = (worker.addr, head.clone(), filler.clone());
            tasks.spawn(async move {
                let mut s = send(addr, head.as_bytes()).await;
                let _ = s.write_all(&filler).await;
                s
            });
        }
        let mut abusers = Vec::new();
        while let Some(s) = tasks.join_next().await {
            abusers.push(s.expect("abuser"));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let held = worker.rss_kib();
        drop(abusers);
        tokio::time::sleep(Duration::from_secs(3)).await;
        let after = worker.rss_kib();
        eprintln!("{backend}: resident KiB baseline {baseline}, holding {held}, after {after}");
        assert!(
            held > baseline + 50 * 1024,
            "{backend}: the abuse did not reach the worker ({baseline} -> {held} KiB)"
        );
        assert!(
            after < baseline + 10 * 1024,
            "{backend}: resident {after} KiB after the clients left, baseline {baseline} KiB (held {held})"
        );
        // Still serving.
        let (status, body) = Signed::new(&credit("evt_999999", 100)).post(&client, &worker.url()).await;
        assert_eq!(status, 200, "{backend}: {body}");
        drop(worker);
        db.cleanup().await;
    }
}
