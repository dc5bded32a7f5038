//! The SQL observer on real MariaDB (`testkit::mysql_server`: `MYSQL_URL` or a container): every
//! query shape read from tables the test fills with its own pool (ids per row and `(id, count)`,
//! update applies, states, dead letters, balance and count aggregates, a `SUM()` that is DECIMAL),
//! wrong shapes refused naming their flag, only one read-only query run (the parser's refusals,
//! and the read-only transaction's when a stored function writes behind the parser's back), the
//! statement timeout (the server stops the query, even when hookbench is gone), the row limit,
//! an unreachable server named with its password hidden, and the FILE/SUPER warning.

use std::time::{Duration, Instant};

use hookbench::judge::{Change, Ledger, Measure};
use hookbench::observe::{
    ObserveError, Observer, Observers, Queries, QueryLimits, Record, Sees, SqlObserver,
};
use provision::FreshMysqlDatabase;
use sqlx::mysql::{MySqlPool, MySqlPoolOptions};

/// Far longer than any limit under test: a look that has not ended by then hangs.
const HANG: Duration = Duration::from_secs(90);

/// Everything one look reported, in its order.
#[derive(Debug, Default)]
struct Seen {
    applied: Vec<(String, u64)>,
    update_applied: Vec<(String, u64)>,
    states: Vec<(i64, i64)>,
    dead_letters: Vec<String>,
    aggregates: Vec<(Measure, Option<(i64, i64)>)>,
}

impl Record for Seen {
    fn sees(&mut self, _observer: &str, _sees: Sees) {}
    fn applied(&mut self, _observer: &str, id: &str, times: u64) {
        self.applied.push((id.to_string(), times));
    }
    fn update_applied(&mut self, _observer: &str, id: &str, times: u64) {
        self.update_applied.push((id.to_string(), times));
    }
    fn state(&mut self, account: i64, version: i64) {
        self.states.push((account, version));
    }
    fn dead_letter(&mut self, id: &str) {
        self.dead_letters.push(id.to_string());
    }
    fn change(&mut self, _change: Change) {}
    fn ledger(&mut self, _ledger: Ledger) {}
    fn id_conflicts(&mut self, _n: u64) {}
    fn aggregate(&mut self, measure: Measure, row: Option<(i64, i64)>) {
        self.aggregates.push((measure, row));
    }
}

/// A fresh database and the test's own pool on it (never the observer's).
async fn database() -> (FreshMysqlDatabase, MySqlPool) {
    let db = testkit::fresh_mysql().await;
    let pool = MySqlPoolOptions::new().max_connections(2).connect(&db.url).await.expect("test pool");
    (db, pool)
}

/// Runs each statement on the test's own pool.
async fn run(pool: &MySqlPool, statements: &[&str]) {
    for sql in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// The tables the shape tests read: credits (per row, amounts), update_log (VARBINARY ids),
/// accounts (versions in an unsigned column) and dead letters.
async fn fill(pool: &MySqlPool) {
    run(
        pool,
        &[
            "CREATE TABLE credits (id INT AUTO_INCREMENT PRIMARY KEY, event_id VARCHAR(64) NOT NULL, \
             account MEDIUMINT NOT NULL, amount BIGINT NOT NULL)",
            "INSERT INTO credits (event_id, account, amount) VALUES \
             ('evt-a', 1, 500), ('evt-b', 2, 700), ('evt-b', 2, 700), ('evt-c', 2, 100)",
            "CREATE TABLE update_log (update_id VARBINARY(64) NOT NULL)",
            "INSERT INTO update_log VALUES ('upd-1'), ('upd-1'), ('upd-2')",
            "CREATE TABLE accounts (id TINYINT PRIMARY KEY, version INT UNSIGNED NOT NULL)",
            "INSERT INTO accounts VALUES (1, 3), (2, 4294967295)",
            "CREATE TABLE dead (event_id VARBINARY(64) NOT NULL)",
            "INSERT INTO dead VALUES ('evt-dead')",
        ],
    )
    .await;
}

/// One look through an observer of `url` asking `queries` under `limits`.
async fn look_with(url: &str, queries: Queries, limits: QueryLimits) -> Result<Seen, ObserveError> {
    let observer = SqlObserver::connect_with_limits(url, queries, limits).await?;
    let mut seen = Seen::default();
    tokio::time::timeout(HANG, observer.look(&mut seen)).await.expect("the look ends")?;
    Ok(seen)
}

/// The same, under the default limits.
async fn look(url: &str, queries: Queries) -> Result<Seen, ObserveError> {
    look_with(url, queries, QueryLimits::default()).await
}

fn applied(sql: &str) -> Queries {
    Queries { applied: Some(sql.to_string()), ..Queries::default() }
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

#[tokio::test]
async fn mysql_applied_rows_are_read_per_row_and_per_count() {
    let (db, pool) = database().await;
    fill(&pool).await;
    let per_row = look(&db.url, applied("SELECT event_id FROM credits")).await.expect("per row");
    let ones = |ids: &[&str]| ids.iter().map(|id| (id.to_string(), 1)).collect::<Vec<_>>();
    assert_eq!(sorted(per_row.applied), ones(&["evt-a", "evt-b", "evt-b", "evt-c"]));
    let counted = Queries {
        applied: Some("SELECT event_id, COUNT(*) FROM credits GROUP BY event_id".into()),
        update_applied: Some(
            "SELECT update_id, CAST(COUNT(*) AS UNSIGNED) FROM update_log GROUP BY update_id".into(),
        ),
        ..Queries::default()
    };
    let seen = look(&db.url, counted).await.expect("counted");
    let pairs = |v: &[(&str, u64)]| v.iter().map(|(id, n)| (id.to_string(), *n)).collect::<Vec<_>>();
    assert_eq!(sorted(seen.applied), pairs(&[("evt-a", 1), ("evt-b", 2), ("evt-c", 1)]));
    assert_eq!(sorted(seen.update_applied), pairs(&[("upd-1", 2), ("upd-2", 1)]));
    // The mariadb:// scheme reaches the same server.
    let mariadb = db.url.replacen("mysql://", "mariadb://", 1);
    let seen =
        look(&mariadb, applied("SELECT event_id FROM credits WHERE account = 1")).await.expect("mariadb://");
    assert_eq!(seen.applied, ones(&["evt-a"]));
    db.drop_database().await.expect("drop");
}

#[tokio::test]
async fn mysql_states_dead_letters_and_aggregates_are_read() {
    let (db, pool) = database().await;
    fill(&pool).await;
    let queries = Queries {
        state: Some("SELECT id, version FROM accounts".into()),
        dead_letters: Some("SELECT event_id FROM dead".into()),
        // SUM() of a BIGINT is DECIMAL: read as an integer, since it has no fraction.
        balance: Some("SELECT account, SUM(amount) FROM credits GROUP BY account".into()),
        count: Some("SELECT account, CAST(COUNT(*) AS CHAR) FROM credits GROUP BY account".into()),
        ..Queries::default()
    };
    let seen = look(&db.url, queries).await.expect("a look");
    assert_eq!(sorted(seen.states), [(1, 3), (2, 4_294_967_295)]);
    assert_eq!(seen.dead_letters, ["evt-dead"]);
    let of = |m: Measure| sorted(seen.aggregates.iter().filter(|(x, _)| *x == m).map(|(_, r)| *r).collect());
    assert_eq!(of(Measure::Balance), [None, Some((1, 500)), Some((2, 1500))]);
    assert_eq!(of(Measure::Rows), [None, Some((1, 1)), Some((2, 3))]);
    db.drop_database().await.expect("drop");
}

#[tokio::test]
async fn mysql_wrong_shapes_are_refused_naming_their_flag() {
    let (db, pool) = database().await;
    fill(&pool).await;
    let refused = [
        (
            Queries { state: Some("SELECT id, version, 1 FROM accounts".into()), ..Queries::default() },
            "--state-query",
            "3 columns",
        ),
        (
            Queries {
                state: Some("SELECT id, CAST(version AS DOUBLE) FROM accounts".into()),
                ..Queries::default()
            },
            "--state-query",
            "column 2 of type DOUBLE",
        ),
        (applied("SELECT event_id, NOW() FROM credits"), "--applied-query", "column 2 of type DATETIME"),
        (
            Queries { dead_letters: Some("SELECT event_id, 1 FROM dead".into()), ..Queries::default() },
            "--dead-letter-query",
            "2 columns",
        ),
        // DECIMAL passes the check; a value with a fraction is refused when it is read.
        (
            Queries {
                balance: Some("SELECT account, SUM(amount) / 3 FROM credits GROUP BY account".into()),
                ..Queries::default()
            },
            "--balance-query",
            "a value of 166.6667",
        ),
        (
            Queries { count: Some("SELECT account FROM credits".into()), ..Queries::default() },
            "--count-query",
            "1 columns",
        ),
        (applied("SELECT nothing FROM nowhere"), "--applied-query", "nowhere"),
    ];
    for (queries, flag, what) in refused {
        let said = look(&db.url, queries).await.expect_err(what).to_string();
        assert!(said.contains(flag) && said.contains(what), "{flag} {what}: {said}");
    }
    db.drop_database().await.expect("drop");
}

#[tokio::test]
async fn mysql_only_one_read_only_query_is_run() {
    let (db, pool) = database().await;
    fill(&pool).await;
    let refused = [
        ("SELECT event_id FROM credits INTO OUTFILE '/tmp/hookbench-observed'", "INTO OUTFILE"),
        ("SELECT event_id FROM credits INTO DUMPFILE '/tmp/hookbench-observed'", "INTO DUMPFILE"),
        ("SELECT event_id FROM credits INTO @x", "INTO @x"),
        ("SELECT LOAD_FILE('/etc/passwd')", "load_file()"),
        ("SELECT event_id FROM credits WHERE SLEEP(5) = 0", "sleep()"),
        ("SELECT GET_LOCK('hookbench', 10)", "get_lock()"),
        ("SELECT event_id FROM credits FOR UPDATE", "FOR UPDATE"),
        ("SELECT event_id FROM credits LOCK IN SHARE MODE", "LOCK IN SHARE MODE"),
        ("DELETE FROM credits", "DELETE"),
        ("SELECT 1; DELETE FROM credits", "2 statements"),
        ("SELECT /*M! 1, */ event_id FROM credits", "/*M!"),
        // Skipped by MariaDB 10.11 (a version above its own), read as SQL by sqlparser: before
        // executable comments were refused, the first slept and the second deleted.
        ("SELECT event_id FROM credits WHERE SLEEP /*!99999 .x */ (5) = 0", "/*!"),
        ("/*!99999 SELECT '/*' */ = ' */ DELETE FROM credits RETURNING event_id -- '", "/*!"),
    ];
    for (sql, what) in refused {
        let said = look(&db.url, applied(sql)).await.expect_err(sql).to_string();
        assert!(
            said.contains("--applied-query") && said.contains(what) && said.contains("SELECT"),
            "{sql}: {said}"
        );
    }
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM credits").fetch_one(&pool).await.expect("count");
    assert_eq!(rows, 4, "nothing was deleted");
    db.drop_database().await.expect("drop");
}

#[tokio::test]
async fn mysql_a_write_the_parser_lets_through_is_refused_by_the_read_only_transaction() {
    let (db, pool) = database().await;
    run(
        &pool,
        &[
            "CREATE TABLE written (n INT)",
            "CREATE FUNCTION bump() RETURNS INT MODIFIES SQL DATA \
             BEGIN INSERT INTO written VALUES (1); RETURN 1; END",
        ],
    )
    .await;
    // The function writes on a session of the test's own.
    let bumped: i32 = sqlx::query_scalar("SELECT bump()").fetch_one(&pool).await.expect("bump");
    assert_eq!(bumped, 1);
    // `SELECT bump()` is one read-only SELECT to the parser; the server refuses its write.
    let said = look(&db.url, applied("SELECT CAST(bump() AS CHAR)")).await.expect_err("refused").to_string();
    assert!(said.contains("--applied-query") && said.contains("READ ONLY"), "{said}");
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM written").fetch_one(&pool).await.expect("count");
    assert_eq!(rows, 1, "only the test's own call wrote");
    db.drop_database().await.expect("drop");
}

/// A query that runs for hours unless stopped (2.7e10 rows joined), marked so its session can be
/// found in the process list: the parser refuses `SLEEP()`, not this.
fn endless(marker: &str) -> String {
    format!(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000) \
         SELECT CONCAT('{marker}', COUNT(*)) FROM c a, c b, c d"
    )
}

/// Sessions still running a query holding `marker`, other than this one (a prepared statement's
/// command is `Execute`, a plain one's `Query`).
async fn running(pool: &MySqlPool, marker: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Query', 'Execute') \
         AND INFO LIKE CONCAT('%', ?, '%') AND ID <> CONNECTION_ID()",
    )
    .bind(marker)
    .fetch_one(pool)
    .await
    .expect("processlist")
}

/// Waits until no session runs a query holding `marker`; panics after 30 s.
async fn until_stopped(pool: &MySqlPool, marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while running(pool, marker).await > 0 {
        assert!(Instant::now() < deadline, "the server still runs {marker}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn mysql_a_query_is_stopped_at_the_timeout_and_so_is_it_on_the_server() {
    let (db, pool) = database().await;
    let marker = format!("timeout-{}", db.name);
    let limits = QueryLimits { timeout: Duration::from_secs(2), ..QueryLimits::default() };
    let started = Instant::now();
    let while_it_runs = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        running(&pool, &marker).await
    };
    let (looked, ran) = tokio::join!(look_with(&db.url, applied(&endless(&marker)), limits), while_it_runs);
    assert_eq!(ran, 1, "the query ran on the server");
    let e = looked.expect_err("timed out");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    let said = e.to_string();
    assert!(
        said.contains("--applied-query") && said.contains("--query-timeout") && said.contains("2s"),
        "{said}"
    );
    until_stopped(&pool, &marker).await;
    db.drop_database().await.expect("drop");
}

#[tokio::test]
async fn mysql_a_query_stops_at_the_servers_timeout_even_when_hookbench_is_gone() {
    let (db, pool) = database().await;
    let marker = format!("gone-{}", db.name);
    let limits = QueryLimits { timeout: Duration::from_secs(3), ..QueryLimits::default() };
    let observer = SqlObserver::connect_with_limits(&db.url, applied(&endless(&marker)), limits)
        .await
        .expect("connects");
    let observers = Observers::new(vec![Box::new(observer)]);
    // The look abandoned mid-query with its connection left open, as when hookbench hangs or is
    // cut off: only the session's own statement timeout stops the query.
    let mut snapshot = Box::pin(observers.snapshot());
    let _ = tokio::time::timeout(Duration::from_millis(1000), &mut snapshot).await;
    std::mem::forget(snapshot);
    std::mem::forget(observers);
    assert!(running(&pool, &marker).await > 0, "the query was running when hookbench left");
    until_stopped(&pool, &marker).await;
    db.drop_database().await.expect("drop");
}

#[tokio::test]
async fn mysql_millions_of_rows_are_refused_past_the_row_limit_while_streaming() {
    let db = testkit::fresh_mysql().await;
    // MariaDB stops a recursion after 1000 iterations (max_recursive_iterations): rows come from
    // a join of 1000 with `n` thousands.
    let rows = |n: u64| {
        format!(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) \
             SELECT CONCAT(a.x, '-', b.x) FROM c a, c b WHERE b.x <= {n} ORDER BY b.x, a.x"
        )
    };
    let limits = QueryLimits { max_rows: 1000, ..QueryLimits::default() };
    let said = look_with(&db.url, applied(&rows(1000)), limits).await.expect_err("too many rows").to_string();
    assert!(
        said.contains("--applied-query") && said.contains("--max-rows") && said.contains("1000"),
        "{said}"
    );
    // Within the limit, every row is read.
    let limits = QueryLimits { max_rows: 3000, ..QueryLimits::default() };
    let seen = look_with(&db.url, applied(&rows(3)), limits).await.expect("3000 rows are read");
    assert_eq!(seen.applied.len(), 3000);
    assert_eq!(seen.applied.last(), Some(&("1000-3".to_string(), 1)));
    db.drop_database().await.expect("drop");
}

#[tokio::test]
async fn mysql_an_unreachable_server_is_named_with_its_password_hidden() {
    for url in ["mysql://observer:s3cret-pw@127.0.0.1:1/app", "mariadb://observer:s3cret-pw@127.0.0.1:1/app"]
    {
        let said = look(url, applied("SELECT 'a'")).await.expect_err(url).to_string();
        assert!(said.contains("--observe-db") && said.contains("observer:***@127.0.0.1:1"), "{said}");
        assert!(!said.contains("s3cret-pw"), "{said}");
    }
    let said =
        look("mssql://observer:s3cret-pw@127.0.0.1:1/app", applied("SELECT 'a'")).await.expect_err("mssql");
    let said = said.to_string();
    assert!(said.contains("mysql://") && !said.contains("s3cret-pw"), "{said}");
}

#[tokio::test]
async fn mysql_a_user_with_file_or_super_is_warned_about_and_a_read_only_user_is_not() {
    let (db, pool) = database().await;
    fill(&pool).await;
    let reader = db.name.replacen("hookbench_", "r_", 1);
    let filer = db.name.replacen("hookbench_", "f_", 1);
    run(
        &pool,
        &[
            &format!("CREATE USER '{reader}'@'%' IDENTIFIED BY 'pw'"),
            &format!("GRANT SELECT ON `{}`.* TO '{reader}'@'%'", db.name),
            &format!("CREATE USER '{filer}'@'%' IDENTIFIED BY 'pw'"),
            &format!("GRANT SELECT ON `{}`.* TO '{filer}'@'%'", db.name),
            &format!("GRANT FILE ON *.* TO '{filer}'@'%'"),
        ],
    )
    .await;
    let url_of = |user: &str| {
        let mut url = url::Url::parse(&db.url).expect("url");
        url.set_username(user).expect("user");
        url.set_password(Some("pw")).expect("password");
        url.to_string()
    };
    let query = applied("SELECT event_id FROM credits");
    let root = SqlObserver::connect(&db.url, query.clone()).await.expect("root connects");
    let notes = root.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("FILE/SUPER") && notes[0].contains("read-only user"), "{notes:?}");
    let file = SqlObserver::connect(&url_of(&filer), query.clone()).await.expect("filer connects");
    assert_eq!(file.notes().len(), 1, "{:?}", file.notes());
    assert!(file.notes()[0].contains(&filer) && file.notes()[0].contains("(FILE)"), "{:?}", file.notes());
    let read = SqlObserver::connect(&url_of(&reader), query).await.expect("reader connects");
    assert!(read.notes().is_empty(), "{:?}", read.notes());
    let mut seen = Seen::default();
    read.look(&mut seen).await.expect("the reader reads");
    assert_eq!(seen.applied.len(), 4);
    run(&pool, &[&format!("DROP USER '{reader}'@'%'"), &format!("DROP USER '{filer}'@'%'")]).await;
    db.drop_database().await.expect("drop");
}
