//! A worker that knows its database (issue 10, findings 4 and 6), in process: a Postgres
//! database out of reach behind a proxy that is cut, and one made read-only. In each the worker
//! stops acknowledging (a 503, and `/healthz` says why) and recovers on its own when the database
//! is back. Every wait is bounded. (The SQLite file's faults need a worker process of their own:
//! `hookbench`'s `worker_process` tests.)

use std::time::{Duration, Instant};

use receivers::design::Design;
use receivers::store::{Store, StoreOptions};
use testkit::proxy::{Proxy, upstream_of};
use testkit::{Db, Server, Signed, credit, health, post_until_acknowledged, state};

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
