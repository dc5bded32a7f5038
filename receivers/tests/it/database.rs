//! A worker that knows its database (issue 10, findings 4 and 6), in process: a Postgres
//! database out of reach behind a proxy that is cut, and one made read-only. In each the worker
//! stops acknowledging (a 503, and `/healthz` says why) and recovers on its own when the database
//! is back. Every wait is bounded. And a SQLite write that cannot begin within the busy timeout,
//! refused and never written. (The SQLite file's faults need a worker process of their own:
//! `hookbench`'s `worker_process` tests.)

use std::time::{Duration, Instant};

use receivers::design::Design;
use receivers::store::{Applied, Backend, Guard, Store, StoreError, StoreOptions};
use testkit::proxy::{Proxy, upstream_of};
use testkit::{Db, Server, Signed, credit, health, post_until_acknowledged, state};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_out_of_reach_answers_503_within_the_pool_timeout_and_recovers() {
    let db = Db::fresh(Backend::Postgres).await;
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
    let db = Db::fresh(Backend::Postgres).await;
    let server = Server::start(Design::Atomic, &db, Duration::ZERO).await;
    let client = reqwest::Client::new();
    let health_url = format!("http://{}/healthz", server.addr);
    assert_eq!(Signed::new(&credit("evt_000001", 100)).post(&client, &server.url()).await.0, 200);
    let name = db.url.rsplit('/').next().expect("database name").to_string();
    let admin = sqlx::PgPool::connect(testkit::pg_server().admin_url()).await.expect("admin");
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

/// A SQLite write that cannot begin within the busy timeout, the file's writers' lock held by
/// another process all along, is answered busy and is not written when the lock frees later:
/// nobody would be told it was stored, and its retry would apply it a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_write_not_begun_within_the_busy_timeout_is_refused_and_never_written() {
    let db = Db::fresh(Backend::Sqlite).await;
    let file = db.url.strip_prefix("sqlite://").expect("a sqlite:// URL");
    let options = StoreOptions { busy_timeout: Duration::from_millis(200), ..StoreOptions::default() };
    let store = Store::connect(&db.url, &options).await.expect("a store with a short busy timeout");
    // Another process's turn: the writers' lock file, locked by a descriptor of the test's own.
    let lock = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(format!("{file}-writer.lock"))
        .expect("the writers' lock file");
    lock.lock().expect("flock");
    let event = credit("evt_late", 5);
    let (refused, ()) = tokio::join!(store.apply_once(&event, "body", Guard::None, None), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        lock.unlock().expect("unlock");
    });
    assert!(matches!(refused, Err(StoreError::Busy(_))), "{refused:?}");
    assert_eq!(db.scalar("SELECT count(*) FROM processed_events").await, 0);
    assert!(db.applies().await.is_empty(), "{:?}", db.applies().await);
    // With the lock free, the same write goes through, once: a busy file detached the store, so
    // its first tries may find it still reopening the file (unavailable, a 503 to a sender).
    let give_up = Instant::now() + Duration::from_secs(10);
    let applied = loop {
        match store.apply_once(&event, "body", Guard::None, None).await {
            Err(e) if e.is_unavailable() && Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            done => break done.expect("written with the turn free"),
        }
    };
    assert_eq!(applied, Applied::Applied);
    assert_eq!(db.applies().await, [("evt_late".to_string(), 1)]);
    store.close().await;
    db.cleanup().await;
}
