//! Provisioning: every run gets a fresh database that no other run sees, dropped afterwards.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use provision::{PostgresMode, PostgresServer, PostgresSettings, ProvisionError, SqliteFile};
use receivers::store::{Store, StoreOptions};

/// Accounts in the database at `url`, read with a connection of the test's own.
async fn accounts(url: &str) -> i64 {
    let sql = "SELECT count(*) FROM accounts";
    if url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("connect");
        sqlx::query_scalar(sql).fetch_one(&pool).await.expect("count")
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("connect");
        sqlx::query_scalar(sql).fetch_one(&pool).await.expect("count")
    }
}

async fn insert_account(url: &str) {
    let sql = "INSERT INTO accounts (id) VALUES (1)";
    if url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("connect");
        sqlx::query(sql).execute(&pool).await.expect("insert");
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("connect");
        sqlx::query(sql).execute(&pool).await.expect("insert");
    }
}

#[tokio::test]
async fn postgres_runs_get_separate_databases_that_are_dropped() {
    let server = testkit::pg_server();
    let (a, b) = (server.fresh_database().await.expect("a"), server.fresh_database().await.expect("b"));
    assert_ne!(a.name, b.name);
    let (sa, sb) = (
        Store::connect(&a.url, &StoreOptions::default()).await.expect("connect a"),
        Store::connect(&b.url, &StoreOptions::default()).await.expect("connect b"),
    );
    insert_account(&a.url).await;
    assert_eq!((accounts(&a.url).await, accounts(&b.url).await), (1, 0));
    sa.close().await;
    sb.close().await;
    a.drop_database().await.expect("drop a");
    b.drop_database().await.expect("drop b");
    let gone = Store::connect(&a.url, &StoreOptions::default()).await.expect_err("dropped");
    assert!(gone.to_string().contains("does not exist"), "{gone}");
}

#[tokio::test]
async fn sqlite_runs_get_separate_files() {
    let (a, b) = (SqliteFile::create(None).expect("a"), SqliteFile::create(None).expect("b"));
    assert_ne!(a.path(), b.path());
    let (sa, sb) = (
        Store::connect(&a.url(), &StoreOptions::default()).await.expect("a"),
        Store::connect(&b.url(), &StoreOptions::default()).await.expect("b"),
    );
    insert_account(&a.url()).await;
    assert_eq!((accounts(&a.url()).await, accounts(&b.url()).await), (1, 0));
    sa.close().await;
    sb.close().await;
    let dir = a.path().parent().expect("dir").to_path_buf();
    drop(a);
    assert!(!dir.exists(), "the temporary directory goes with the file");
}

#[tokio::test]
async fn url_mode_without_a_url_says_so() {
    let settings = PostgresSettings { url: None, ..PostgresSettings::from_env(PostgresMode::Url) };
    let err = PostgresServer::start(&settings).await.expect_err("no url");
    assert!(matches!(err, ProvisionError::MissingUrl), "{err}");
    assert!(err.to_string().contains("--database-url or DATABASE_URL"));
}

#[test]
fn hookbench_db_prints_a_fresh_database_and_drops_it_on_sigterm() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookbench"));
    cmd.args(["db", "--backend", "postgres"]).stdout(Stdio::piped());
    if let Some(url) = std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()) {
        cmd.args(["--postgres", "url", "--database-url", &url]);
    } else {
        cmd.args(["--postgres", "docker"]);
    }
    let mut child = cmd.spawn().expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
    let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    let url = v["url"].as_str().expect("url").to_string();
    assert!(url.starts_with("postgres://") && url.contains("/hookbench_"), "{line}");
    assert!(v["version"].as_str().is_some_and(|s| !s.is_empty()), "{line}");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let store = Store::connect(&url, &StoreOptions::default()).await.expect("the database is there");
        store.close().await;
        assert_eq!(accounts(&url).await, 0);
    });
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("SIGTERM");
    assert!(child.wait().expect("wait").success());
}

#[test]
fn hookbench_db_refuses_an_unknown_postgres_mode() {
    let out = Command::new(env!("CARGO_BIN_EXE_hookbench"))
        .args(["db", "--backend", "postgres", "--postgres", "cloud"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'cloud'") && err.contains("--postgres") && err.contains("auto, docker, url"),
        "{err}"
    );
}
