//! Every design on real Postgres, real SQLite and real MariaDB, served on 127.0.0.1:0 in this
//! process.

use std::time::Duration;

use receivers::design::Design;
use receivers::store::{Applied, Backend, Store};
use testkit::{Db, Server, credit, plan, post};

async fn each_design(check: impl AsyncFn(Backend, Design)) {
    for backend in Backend::ALL {
        for design in Design::KNOWN {
            check(backend, design).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_delivery_applies_once() {
    each_design(async |backend, design| {
        let db = Db::fresh(backend).await;
        let server = Server::start(design, &db, Duration::ZERO).await;
        let client = reqwest::Client::new();
        let (status, body) = post(&client, &server.url(), &credit("evt_000001", 100)).await;
        assert_eq!(status, 200, "{backend} {design}: {body}");
        if design == Design::Inbox {
            db.drain_inbox().await;
        }
        assert_eq!(db.applies().await, [("evt_000001".to_string(), 1)], "{backend} {design}");
        assert_eq!(db.scalar("SELECT credits FROM accounts WHERE id = 7").await, 100, "{backend} {design}");
        server.stop().await;
        db.cleanup().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_redelivery_applies_again_only_for_naive() {
    each_design(async |backend, design| {
        let db = Db::fresh(backend).await;
        let server = Server::start(design, &db, Duration::ZERO).await;
        let client = reqwest::Client::new();
        let event = credit("evt_000002", 100);
        for _ in 0..2 {
            let (status, body) = post(&client, &server.url(), &event).await;
            assert_eq!(status, 200, "{backend} {design}: {body}");
            if design == Design::Inbox {
                db.drain_inbox().await;
            }
        }
        let expected = if design == Design::Naive { 2 } else { 1 };
        assert_eq!(db.applies().await, [("evt_000002".to_string(), expected)], "{backend} {design}");
        assert_eq!(db.scalar("SELECT credits FROM accounts WHERE id = 7").await, 100 * expected);
        server.stop().await;
        db.cleanup().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_plan_update_is_refused_by_version_guard_and_inbox() {
    each_design(async |backend, design| {
        let db = Db::fresh(backend).await;
        let server = Server::start(design, &db, Duration::ZERO).await;
        let client = reqwest::Client::new();
        // v2 arrives first, then v1, both created in the same second (the article's tie).
        for event in [plan("evt_000091", 2, 1_790_000_039), plan("evt_000090", 1, 1_790_000_039)] {
            let (status, body) = post(&client, &server.url(), &event).await;
            assert_eq!(status, 200, "{backend} {design}: {body}");
            if design == Design::Inbox {
                db.drain_inbox().await;
            }
        }
        let version = db.plan_version(7).await;
        let stale_writes =
            db.scalar("SELECT count(*) FROM plan_changes WHERE new_version < old_version").await;
        match design {
            // The guards keep v2; so does created-gt, because the newer update came first.
            Design::VersionGuard | Design::Inbox | Design::CreatedGt => {
                assert_eq!((version, stale_writes), (2, 0), "{backend} {design}");
            }
            // Without a guard, or with created >=, the older update overwrites the newer one.
            _ => assert_eq!((version, stale_writes), (1, 1), "{backend} {design}"),
        }
        server.stop().await;
        db.cleanup().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_drains_and_a_row_that_always_fails_ends_as_a_dead_letter() {
    for backend in Backend::ALL {
        let db = Db::fresh(backend).await;
        // A stored row whose payload can never apply (it passed no verification: it was written
        // straight into the table, as a bug or a schema change would leave it).
        db.execute(
            "INSERT INTO webhook_inbox (source, webhook_id, payload) VALUES ('acme', 'evt_poison', '{\"id\":\"evt_poison\",\"type\":\"credit.added\"}')",
        )
        .await;
        let server = Server::start(Design::Inbox, &db, Duration::ZERO).await;
        let client = reqwest::Client::new();
        for i in 0..20 {
            let (status, body) = post(&client, &server.url(), &credit(&format!("evt_{i:06}"), 100)).await;
            assert_eq!(status, 200, "{backend}: {body}");
        }
        db.drain_inbox().await;
        assert_eq!(db.scalar("SELECT count(*) FROM webhook_inbox WHERE processed_at IS NOT NULL").await, 20);
        assert_eq!(db.scalar("SELECT count(DISTINCT event_id) FROM credit_ledger").await, 20, "{backend}");
        let dead = db
            .pairs(
                "SELECT last_error, attempts FROM webhook_inbox WHERE processed_at IS NULL AND webhook_id = 'evt_poison'",
            )
            .await;
        assert_eq!(dead.len(), 1, "{backend}");
        assert_eq!(dead[0].1, 5, "{backend}: attempts");
        assert!(dead[0].0.contains("malformed event"), "{backend}: last_error {:?}", dead[0].0);
        server.stop().await;
        db.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_goes_away_answers_5xx_and_writes_nothing_half() {
    let db = Db::fresh(Backend::Postgres).await;
    let server = Server::start(Design::Atomic, &db, Duration::ZERO).await;
    let client = reqwest::Client::new();
    let (status, _) = post(&client, &server.url(), &credit("evt_000001", 100)).await;
    assert_eq!(status, 200);
    // The database disappears under the receiver (sessions ended, database dropped).
    let name = db.url.rsplit('/').next().expect("database name").to_string();
    assert!(name.starts_with("hookbench_") && !name.contains('?'), "{name}");
    let admin = sqlx::PgPool::connect(testkit::pg_server().admin_url()).await.expect("admin");
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE \"{name}\" WITH (FORCE)")))
        .execute(&admin)
        .await
        .expect("drop");
    let (status, body) = post(&client, &server.url(), &credit("evt_000002", 100)).await;
    assert!(status == 500 || status == 503, "{status} {body}");
    assert!(body.contains("database"), "{body}");
    let health = client.get(format!("http://{}/healthz", server.addr)).send().await.expect("healthz");
    assert_eq!(health.status().as_u16(), 503);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_not_started_for_fault_injection_ignores_the_crash_header() {
    // Were the header honoured, this test process would abort at the injected point.
    each_design(async |backend, design| {
        let db = Db::fresh(backend).await;
        let server = Server::start(design, &db, Duration::ZERO).await;
        let event = credit("evt_000003", 100);
        let body = serde_json::to_vec(&event).expect("json");
        let ts = jiff::Timestamp::now().as_second();
        let response = reqwest::Client::new()
            .post(server.url())
            .header(receivers::signature::HEADER_ID, event.id())
            .header(receivers::signature::HEADER_TIMESTAMP, ts.to_string())
            .header(receivers::signature::HEADER_SIGNATURE, testkit::secret().sign(event.id(), ts, &body))
            .header(receivers::fault::HEADER_FAULT, receivers::fault::Fault::CrashAfterKey.as_str())
            .body(body)
            .send()
            .await
            .expect("an answer");
        assert_eq!(response.status().as_u16(), 200, "{backend} {design}");
        if design == Design::Inbox {
            db.drain_inbox().await;
        }
        assert_eq!(db.applies().await, [("evt_000003".to_string(), 1)], "{backend} {design}");
        server.stop().await;
        db.cleanup().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_credit_is_refused_every_time_and_never_applied() {
    each_design(async |backend, design| {
        let db = Db::fresh(backend).await;
        let server = Server::start(design, &db, Duration::ZERO).await;
        let client = reqwest::Client::new();
        let poison = credit("evt_000004", -100);
        let (status, body) = post(&client, &server.url(), &poison).await;
        if design == Design::Inbox {
            // Stored and acknowledged; the worker fails it 5 times and leaves it as a dead letter.
            assert_eq!(status, 200, "{backend}: {body}");
            db.drain_inbox().await;
            let dead =
                db.pairs("SELECT last_error, attempts FROM webhook_inbox WHERE processed_at IS NULL").await;
            assert_eq!(dead.len(), 1, "{backend}");
            assert_eq!(dead[0].1, 5, "{backend}");
            assert!(dead[0].0.contains("a credit must be positive"), "{backend}: {:?}", dead[0].0);
        } else {
            assert_eq!(status, 500, "{backend} {design}: {body}");
            assert!(body.contains("a credit must be positive"), "{backend} {design}: {body}");
            let (again, body) = post(&client, &server.url(), &poison).await;
            if design == Design::Split {
                // Its key committed before the credit failed: the retry is taken for a duplicate
                // and acknowledged, and the event is silently dropped.
                assert_eq!(again, 200, "{backend}: {body}");
            } else {
                // Still refused: no key was kept (the atomic designs' rolled back with the credit).
                assert_eq!(again, 500, "{backend} {design}: {body}");
            }
        }
        assert!(db.applies().await.is_empty(), "{backend} {design}");
        server.stop().await;
        db.cleanup().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_inbox_row_is_attempted_exactly_five_times_however_many_workers_compete() {
    for backend in Backend::ALL {
        let db = Db::fresh(backend).await;
        for i in 0..40 {
            let id = format!("evt_p{i:02}");
            let poison = serde_json::to_string(&credit(&id, -100)).expect("json");
            assert!(
                db.store.inbox_store("acme", &id, "", &poison).await.expect("stored").is_none(),
                "{backend}"
            );
        }
        // Three receivers of two claim loops each, all after the same failing rows.
        let mut servers = Vec::new();
        for _ in 0..3 {
            servers.push(Server::start(Design::Inbox, &db, Duration::ZERO).await);
        }
        db.drain_inbox().await;
        let attempts = db.pairs("SELECT webhook_id, attempts FROM webhook_inbox ORDER BY id").await;
        assert_eq!(attempts.len(), 40, "{backend}");
        for (id, n) in &attempts {
            assert_eq!(*n, 5, "{backend}: {id} was attempted {n} times");
        }
        for s in servers {
            s.stop().await;
        }
        db.cleanup().await;
    }
}

/// A statement that fails in the middle of a claim's batch undoes the whole batch: the rows
/// before it are not applied twice when they are taken again, the failing row's own credit is not
/// left half-applied, and its attempts are counted one at a time until it is a dead letter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_failing_inside_an_inbox_batch_undoes_it_and_every_row_applies_once() {
    for backend in Backend::ALL {
        let db = Db::fresh(backend).await;
        // The ledger refuses one event's row: its credit has been written by then, in the
        // same transaction, and only undoing the transaction takes it back.
        match backend {
            Backend::Postgres => {
                db.execute(
                    "CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                     IF NEW.event_id = 'evt_bad' THEN RAISE EXCEPTION 'evt_bad refused by a trigger'; END IF; \
                     RETURN NEW; END $$",
                )
                .await;
                db.execute(
                    "CREATE TRIGGER refuse_bad BEFORE INSERT ON credit_ledger FOR EACH ROW EXECUTE FUNCTION refuse_bad()",
                )
                .await;
            }
            Backend::Sqlite => {
                db.execute(
                    "CREATE TRIGGER refuse_bad BEFORE INSERT ON credit_ledger WHEN NEW.event_id = 'evt_bad' \
                     BEGIN SELECT RAISE(ABORT, 'evt_bad refused by a trigger'); END",
                )
                .await;
            }
            Backend::Mysql => {
                db.execute(
                    "CREATE TRIGGER refuse_bad BEFORE INSERT ON credit_ledger FOR EACH ROW                      IF NEW.event_id = 'evt_bad' THEN                      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'evt_bad refused by a trigger'; END IF",
                )
                .await;
            }
        }
        let ids: Vec<String> =
            (0..20).map(|i| format!("evt_{i:02}")).chain(["evt_bad".to_string()]).collect();
        // The failing row in the middle of the first batch, 10 rows before it and 10 after.
        let (before, after) = ids[..20].split_at(10);
        for id in before.iter().chain(&ids[20..]).chain(after) {
            let body = serde_json::to_string(&credit(id, 100)).expect("json");
            assert!(
                db.store.inbox_store("acme", id, "", &body).await.expect("stored").is_none(),
                "{backend}"
            );
        }
        let server = Server::start(Design::Inbox, &db, Duration::ZERO).await;
        db.drain_inbox().await;
        let good: Vec<(String, i64)> = ids[..20].iter().map(|id| (id.clone(), 1)).collect();
        assert_eq!(
            db.applies().await,
            good,
            "{backend}: one ledger row for each good event, none for evt_bad"
        );
        assert_eq!(db.scalar("SELECT credits FROM accounts WHERE id = 7").await, 2000, "{backend}");
        let bad = db.pairs("SELECT last_error, attempts FROM webhook_inbox WHERE processed_at IS NULL").await;
        assert_eq!(bad.len(), 1, "{backend}: only evt_bad is left, as a dead letter");
        assert_eq!(bad[0].1, 5, "{backend}: attempts");
        assert!(bad[0].0.contains("evt_bad refused by a trigger"), "{backend}: last_error {:?}", bad[0].0);
        server.stop().await;
        db.cleanup().await;
    }
}

/// `GET /stats` counts where a worker's time went, per stage: a SQLite write's wait for its turn
/// and its time holding it, a Postgres write's wait for a pooled connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_each_stage_a_delivery_went_through() {
    // check-then-insert writes twice: the apply (a transaction) and the key (one statement).
    for (backend, stages, writes_timed) in
        [(Backend::Sqlite, &["turn", "held"][..], 2), (Backend::Postgres, &["pool"][..], 1)]
    {
        let db = Db::fresh(backend).await;
        let server = Server::start(Design::CheckThenInsert, &db, Duration::ZERO).await;
        let client = reqwest::Client::new();
        let stats = async || -> serde_json::Value {
            let url = format!("http://{}/stats", server.addr);
            client.get(url).send().await.expect("GET /stats").json().await.expect("JSON")
        };
        let count = |s: &serde_json::Value, stage: &str| s["stages"][stage]["count"].as_u64().expect(stage);
        let before = stats().await;
        let (status, body) = post(&client, &server.url(), &credit("evt_stats1", 5)).await;
        assert_eq!(status, 200, "{backend}: {body}");
        let after = stats().await;
        // The counters are the process's, shared with tests running beside this one: at least
        // this delivery's request, and for check-then-insert two writes.
        assert!(count(&after, "request") > count(&before, "request"), "{backend}: {after}");
        assert!(count(&after, "write") >= count(&before, "write") + 2, "{backend}: {after}");
        for &stage in stages {
            assert!(
                count(&after, stage) >= count(&before, stage) + writes_timed,
                "{backend} {stage}: {after}"
            );
        }
        server.stop().await;
        db.cleanup().await;
    }
}

/// check-in-transaction under SERIALIZABLE: eight copies of each event at once, each retried
/// while the database refuses it as a transaction conflict (a serialization failure on Postgres,
/// a deadlock on MySQL, named by [`StoreError::conflict`]), apply each event exactly once; any
/// other error fails the test. SQLite's writers are serialized, so it holds there too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn check_in_transaction_applies_once_under_serializable_retrying_its_conflicts() {
    use receivers::store::{Guard, Isolation, StoreOptions};
    for backend in Backend::ALL {
        let db = Db::fresh(backend).await;
        let options = StoreOptions { isolation: Some(Isolation::Serializable), ..StoreOptions::default() };
        let store = Store::connect(&db.url, &options).await.expect("serializable store");
        let conflicts = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut copies = tokio::task::JoinSet::new();
        for i in 0..20 {
            for _ in 0..8 {
                let (store, conflicts) = (store.clone(), conflicts.clone());
                copies.spawn(async move {
                    let event = credit(&format!("evt_{i:02}"), 100);
                    for _ in 0..200 {
                        match store.apply_checked(&event, "", Guard::None).await {
                            Ok(applied) => return applied,
                            Err(e) => {
                                assert!(e.conflict().is_some(), "{e}");
                                conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                    }
                    panic!("evt_{i:02}: 200 conflicts in a row");
                });
            }
        }
        let mut applied = 0;
        while let Some(done) = copies.join_next().await {
            applied += u32::from(done.expect("a copy") == Applied::Applied);
        }
        let once: Vec<(String, i64)> = (0..20).map(|i| (format!("evt_{i:02}"), 1)).collect();
        assert_eq!(db.applies().await, once, "{backend}: each event applied once");
        assert_eq!(applied, 20, "{backend}: one copy of each answered applied");
        assert_eq!(db.scalar("SELECT count(*) FROM checked_events").await, 20, "{backend}");
        eprintln!("{backend}: {} conflicts retried", conflicts.load(std::sync::atomic::Ordering::Relaxed));
        store.close().await;
        db.cleanup().await;
    }
}

/// Which database errors are transaction conflicts, asked of real servers: MariaDB's 1020 (a row
/// changed since the snapshot, with `innodb_snapshot_isolation` on, as in MariaDB from 11.6.2)
/// and Postgres's 40001 under REPEATABLE READ are; a duplicate key (1062, 23505) is not. A
/// conflict the receivers miss would answer 5xx without the header, so its cell would count 0
/// conflicts where the database refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_conflicts_are_conflicts_and_duplicate_keys_are_not() {
    use receivers::store::StoreError;
    use sqlx::{Connection, Executor};
    let my = testkit::fresh_mysql().await;
    let (mut a, mut b) = (
        sqlx::MySqlConnection::connect(&my.url).await.expect("connect"),
        sqlx::MySqlConnection::connect(&my.url).await.expect("connect"),
    );
    a.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB").await.expect("table");
    a.execute("INSERT INTO t VALUES (1, 0)").await.expect("row");
    let duplicate = a.execute("INSERT INTO t VALUES (1, 0)").await.expect_err("a duplicate key");
    assert_eq!(StoreError::Database(duplicate).conflict(), None);
    a.execute("SET SESSION innodb_snapshot_isolation = ON").await.expect("MariaDB 10.6.18 or later");
    a.execute("BEGIN").await.expect("begin");
    a.execute("SELECT v FROM t WHERE id = 1").await.expect("the snapshot");
    b.execute("UPDATE t SET v = 1 WHERE id = 1").await.expect("the other writer");
    let stale =
        a.execute("UPDATE t SET v = v + 1 WHERE id = 1").await.expect_err("the snapshot's write refused");
    assert_eq!(StoreError::Database(stale).conflict().as_deref(), Some("mysql-1020"));
    a.execute("ROLLBACK").await.expect("rollback");
    // A lock wait stopped at MariaDB's max_statement_time (which the store sets below the lock
    // wait's timeout's restarts): 1969, a conflict too.
    a.execute("SET SESSION innodb_lock_wait_timeout = 5, max_statement_time = 0.2").await.expect("limits");
    b.execute("BEGIN").await.expect("begin");
    b.execute("UPDATE t SET v = 2 WHERE id = 1").await.expect("the lock's holder");
    let stopped = a.execute("UPDATE t SET v = 3 WHERE id = 1").await.expect_err("stopped while it waited");
    assert_eq!(StoreError::Database(stopped).conflict().as_deref(), Some("mysql-1969"));
    drop((a, b));
    my.drop_database().await.expect("drop");

    let pg = Db::fresh(Backend::Postgres).await;
    let (mut a, mut b) = (
        sqlx::PgConnection::connect(&pg.url).await.expect("connect"),
        sqlx::PgConnection::connect(&pg.url).await.expect("connect"),
    );
    a.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL); INSERT INTO t VALUES (1, 0)")
        .await
        .expect("table");
    let duplicate = a.execute("INSERT INTO t VALUES (1, 0)").await.expect_err("a duplicate key");
    assert_eq!(StoreError::Database(duplicate).conflict(), None);
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT v FROM t WHERE id = 1")
        .await
        .expect("the snapshot");
    b.execute("UPDATE t SET v = 1 WHERE id = 1").await.expect("the other writer");
    let stale =
        a.execute("UPDATE t SET v = v + 1 WHERE id = 1").await.expect_err("the snapshot's write refused");
    assert_eq!(StoreError::Database(stale).conflict().as_deref(), Some("40001"));
    drop((a, b));
    pg.cleanup().await;
}
