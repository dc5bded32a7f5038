//! The SQL observer attacked with the user's own queries, on real Postgres and real SQLite: a query
//! that never ends is stopped at the statement timeout (and on Postgres the backend stops too),
//! a query of millions of rows is refused once past the row limit while it streams, and only one
//! read-only SELECT/WITH query is run (`COPY ... TO PROGRAM`, `VACUUM INTO` refused).

use std::time::{Duration, Instant};

use hookbench::observe::{ObserveError, Observers, Queries, QueryLimits, SqlObserver};
use receivers::store::Backend;
use testkit::Db;

/// Far longer than any limit under test: a look that has not ended by then hangs.
const HANG: Duration = Duration::from_secs(90);

fn applied(sql: &str) -> Queries {
    Queries { applied: Some(sql.to_string()), ..Queries::default() }
}

/// One look through an observer of `url` asking `sql`, under `limits`; what it said.
async fn look(url: &str, sql: &str, limits: QueryLimits) -> Result<(), ObserveError> {
    let observer = SqlObserver::connect_with_limits(url, applied(sql), limits).await?;
    let observers = Observers::new(vec![Box::new(observer)]);
    let looked = tokio::time::timeout(HANG, observers.snapshot()).await.expect("the look ends");
    looked.map(|_| ())
}

/// Backends of `db`'s database still running `pg_sleep` (active: an idle connection shows its
/// last query, which may be this count itself, from another connection of the pool).
async fn sleeping_backends(db: &Db) -> i64 {
    db.scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND state = 'active' AND query LIKE '%pg_sleep(3600)%' AND pid <> pg_backend_pid()",
    )
    .await
}

#[tokio::test]
async fn a_postgres_query_is_stopped_at_the_timeout_and_so_is_its_backend() {
    let db = Db::fresh(Backend::Postgres).await;
    let limits = QueryLimits { timeout: Duration::from_secs(2), ..QueryLimits::default() };
    let started = Instant::now();
    let e = look(&db.url, "SELECT pg_sleep(3600)::text", limits).await.expect_err("timed out");
    assert!(started.elapsed() < HANG);
    let said = e.to_string();
    assert!(
        said.contains("--applied-query") && said.contains("--query-timeout") && said.contains("2s"),
        "{said}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while sleeping_backends(&db).await > 0 {
        assert!(Instant::now() < deadline, "the backend still runs pg_sleep");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    db.cleanup().await;
}

#[tokio::test]
async fn a_postgres_backend_stops_even_when_hookbench_is_gone() {
    let db = Db::fresh(Backend::Postgres).await;
    let limits = QueryLimits { timeout: Duration::from_secs(3), ..QueryLimits::default() };
    let observer = SqlObserver::connect_with_limits(&db.url, applied("SELECT pg_sleep(3600)::text"), limits)
        .await
        .expect("connects");
    let observers = Observers::new(vec![Box::new(observer)]);
    // The look abandoned mid-query, as when hookbench is killed: the session's own
    // statement_timeout stops the backend.
    let _ = tokio::time::timeout(Duration::from_millis(500), observers.snapshot()).await;
    std::mem::forget(observers);
    assert!(sleeping_backends(&db).await > 0, "the query was running when hookbench left");
    let deadline = Instant::now() + Duration::from_secs(30);
    while sleeping_backends(&db).await > 0 {
        assert!(Instant::now() < deadline, "the backend still runs pg_sleep");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_recursive_sqlite_query_is_interrupted_at_the_timeout() {
    let db = Db::fresh(Backend::Sqlite).await;
    let limits = QueryLimits { timeout: Duration::from_secs(2), ..QueryLimits::default() };
    let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c";
    let e = look(&db.url, endless, limits).await.expect_err("interrupted");
    let said = e.to_string();
    assert!(said.contains("--applied-query") && said.contains("--query-timeout"), "{said}");
    db.cleanup().await;
}

#[tokio::test]
async fn millions_of_rows_are_refused_past_the_row_limit_while_streaming() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let db = Db::fresh(backend).await;
        let sql = match backend {
            Backend::Postgres => "SELECT g::text FROM generate_series(1, 5000000) g",
            Backend::Sqlite => {
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000) SELECT x FROM c"
            }
            Backend::Mysql => unreachable!("MySQL's limits are tested in observe_mysql.rs"),
        };
        let limits = QueryLimits { max_rows: 1000, ..QueryLimits::default() };
        let e = look(&db.url, sql, limits).await.expect_err("too many rows");
        let said = e.to_string();
        assert!(
            said.contains("--applied-query") && said.contains("--max-rows") && said.contains("1000"),
            "{said}"
        );
        // Within the limit, the same observer reads every row.
        let limits = QueryLimits { max_rows: 5_000_000, ..QueryLimits::default() };
        let small = sql.replace("5000000", "3000");
        look(&db.url, &small, limits).await.expect("3000 rows are read");
        db.cleanup().await;
    }
}

#[tokio::test]
async fn only_one_read_only_query_is_run() {
    let pg = Db::fresh(Backend::Postgres).await;
    let sqlite = Db::fresh(Backend::Sqlite).await;
    let marker = tempfile::tempdir().expect("tempdir");
    let written = marker.path().join("written");
    let copy = format!("COPY (SELECT 1) TO PROGRAM 'touch {}'", written.display());
    let vacuum = format!("VACUUM INTO '{}'", written.display());
    let refused: [(&str, &str); 7] = [
        (&pg.url, &copy),
        (&pg.url, "SELECT 1; SELECT 2"),
        (&pg.url, "WITH d AS (DELETE FROM pg_class RETURNING relname) SELECT relname FROM d"),
        (&pg.url, "SELECT lo_export(1, '/tmp/x')::text"),
        (&pg.url, "SELECT 1 INTO TABLE copied"),
        (&sqlite.url, &vacuum),
        (&sqlite.url, "ATTACH DATABASE 'other.db' AS other"),
    ];
    for (url, sql) in refused {
        let e = look(url, sql, QueryLimits::default()).await.expect_err(sql);
        let said = e.to_string();
        assert!(said.contains("--applied-query") && said.contains("SELECT"), "{sql}: {said}");
        assert!(!written.exists(), "{sql} wrote {}", written.display());
    }
    look(&pg.url, "WITH t AS (SELECT 'a' AS id) SELECT id FROM t", QueryLimits::default())
        .await
        .expect("a WITH query");
    pg.cleanup().await;
    sqlite.cleanup().await;
}

#[tokio::test]
async fn a_superuser_role_is_warned_about() {
    let db = Db::fresh(Backend::Postgres).await;
    let observer = SqlObserver::connect(&db.url, applied("SELECT 'a'")).await.expect("connects");
    let notes = observer.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("superuser") && notes[0].contains("read-only role"), "{notes:?}");
    let sqlite = Db::fresh(Backend::Sqlite).await;
    let observer = SqlObserver::connect(&sqlite.url, applied("SELECT 'a'")).await.expect("connects");
    assert!(observer.notes().is_empty());
    db.cleanup().await;
    sqlite.cleanup().await;
}
