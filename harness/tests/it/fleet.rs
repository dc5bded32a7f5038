//! Worker processes of `hookbench serve` sharing one database: concurrent copies of one event
//! meet in the database, not in one process's memory; a SIGKILLed worker leaves nothing half
//! written while the others keep serving.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hookbench::fleet::{Fleet, WorkerSpec};
use hookbench::matrix::{Design, Isolation};
use receivers::store::Backend;
use testkit::{Db, SECRET, credit, post, try_post};

fn spec(design: Design, db: &Db, work_delay: Duration) -> WorkerSpec {
    WorkerSpec {
        exe: env!("CARGO_BIN_EXE_hookbench").into(),
        design,
        database_url: db.url.clone(),
        secrets: vec![SECRET.to_string()],
        work_delay,
        isolation: None,
        inbox_workers: 2,
        max_connections: 4,
        log: None,
        inject_faults: false,
        pool_timeout: hookbench::fleet::WORKER_POOL_TIMEOUT,
    }
}

/// Sends `copies` of each of `events` credit events at the same instant, one copy to each
/// worker, and returns the ledger's applies per event.
async fn concurrent_copies(design: Design, backend: Backend, events: usize) -> Vec<i64> {
    let db = Db::fresh(backend).await;
    let fleet = Fleet::start(spec(design, &db, Duration::from_millis(5)), 2).await.expect("fleet starts");
    let urls: Vec<String> = fleet.workers().iter().map(|w| w.webhook_url("acme")).collect();
    // One client per worker: separate connections, as two provider deliveries would be.
    let clients = [reqwest::Client::new(), reqwest::Client::new()];
    for k in 0..events {
        let event = credit(&format!("evt_{k:06}"), 100);
        let (a, b) = tokio::join!(post(&clients[0], &urls[0], &event), post(&clients[1], &urls[1], &event));
        for (status, body) in [a, b] {
            // check-then-insert answers 500 to the copy whose key INSERT conflicts.
            assert!(status == 200 || (design == Design::CheckThenInsert && status == 500), "{status} {body}");
        }
    }
    if design == Design::Inbox {
        db.drain_inbox().await;
    }
    fleet.stop().await.expect("fleet stops");
    let applies: Vec<i64> = db.applies().await.into_iter().map(|(_, n)| n).collect();
    assert_eq!(applies.len(), events, "{backend} {design}: every event applied at least once");
    db.cleanup().await;
    applies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_and_guarded_designs_never_apply_twice_across_processes() {
    for backend in Backend::ALL {
        for design in
            [Design::Atomic, Design::CreatedGte, Design::CreatedGt, Design::VersionGuard, Design::Inbox]
        {
            let applies = concurrent_copies(design, backend, 30).await;
            assert!(applies.iter().all(|&n| n == 1), "{backend} {design}: {applies:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_then_insert_applies_twice_across_processes() {
    for backend in Backend::ALL {
        let applies = concurrent_copies(Design::CheckThenInsert, backend, 30).await;
        let doubled = applies.iter().filter(|&&n| n == 2).count();
        // Both copies pass the SELECT during the 5 ms of work before either INSERTs: the
        // article's finding, now between two processes.
        assert!(doubled > 0, "{backend}: no event applied twice: {applies:?}");
        assert!(applies.iter().all(|&n| n <= 2), "{backend}: {applies:?}");
        let naive = concurrent_copies(Design::Naive, backend, 10).await;
        assert!(naive.iter().all(|&n| n == 2), "{backend} naive: {naive:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_worker_leaves_nothing_half_written_and_the_others_keep_serving() {
    const EVENTS: usize = 240;
    for backend in Backend::ALL {
        let db = Db::fresh(backend).await;
        let mut fleet =
            Fleet::start(spec(Design::Atomic, &db, Duration::from_millis(2)), 3).await.expect("fleet");
        let urls: Arc<Vec<String>> =
            Arc::new(fleet.workers().iter().map(|w| w.webhook_url("acme")).collect());
        let sent = Arc::new(AtomicUsize::new(0));
        let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
        let mut senders = tokio::task::JoinSet::new();
        for lane in 0..6 {
            let (urls, sent, client) = (urls.clone(), sent.clone(), client.clone());
            senders.spawn(async move {
                let mut retries = 0;
                for k in (lane..EVENTS).step_by(6) {
                    let event = credit(&format!("evt_{k:06}"), 100);
                    // Round-robin; on a refused connection or a 5xx, the next worker.
                    let mut ok = false;
                    for attempt in 0..10 {
                        let url = &urls[(k + attempt) % urls.len()];
                        // The client's 10 s timeout bounds each attempt.
                        if let Ok((200, _)) = try_post(&client, url, &event).await {
                            ok = true;
                            break;
                        }
                        retries += 1;
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    assert!(ok, "evt_{k:06} was never acknowledged");
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                retries
            });
        }
        // Kill worker 0 mid-stream, while requests are in flight on it.
        while sent.load(Ordering::Relaxed) < EVENTS / 3 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        fleet.kill(0).await.expect("SIGKILL");
        let mut retries = 0;
        while let Some(r) = senders.join_next().await {
            retries += r.expect("sender lane");
        }
        assert!(retries > 0, "{backend}: the killed worker refused nothing, so the test proved nothing");
        // Every event applied exactly once, and every ledger row has its credit and its key.
        let applies = db.applies().await;
        assert_eq!(applies.len(), EVENTS, "{backend}");
        assert!(applies.iter().all(|(_, n)| *n == 1), "{backend}: {applies:?}");
        assert_eq!(db.scalar("SELECT count(*) FROM processed_events").await, EVENTS as i64, "{backend}");
        let credits = db.scalar("SELECT CAST(sum(credits) AS BIGINT) FROM accounts").await;
        let ledger = db.scalar("SELECT CAST(sum(amount) AS BIGINT) FROM credit_ledger").await;
        assert_eq!((credits, ledger), (100 * EVENTS as i64, 100 * EVENTS as i64), "{backend}");
        // The fleet brings a new process up in the dead one's place.
        fleet.restart(0).await.expect("restart");
        fleet.stop().await.expect("stop");
        db.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serializable_isolation_answers_5xx_on_a_serialization_failure_and_still_applies_once() {
    let db = Db::fresh(Backend::Postgres).await;
    let mut s = spec(Design::VersionGuard, &db, Duration::from_millis(5));
    s.isolation = Some(Isolation::Serializable);
    let fleet = Fleet::start(s, 2).await.expect("fleet");
    let urls: Vec<String> = fleet.workers().iter().map(|w| w.webhook_url("acme")).collect();
    let clients = [reqwest::Client::new(), reqwest::Client::new()];
    let mut refused = 0;
    for k in 0..40 {
        let event = credit(&format!("evt_{k:06}"), 100);
        let (a, b) = tokio::join!(post(&clients[0], &urls[0], &event), post(&clients[1], &urls[1], &event));
        for (status, body) in [a, b] {
            if status != 200 {
                assert_eq!(status, 500, "{body}");
                assert!(body.contains("could not serialize"), "{body}");
                refused += 1;
                // The sender's retry finds the event applied.
                let (status, body) = post(&clients[0], &urls[0], &event).await;
                assert_eq!((status, body.as_str()), (200, r#"{"outcome":"duplicate"}"#));
            }
        }
    }
    fleet.stop().await.expect("stop");
    let applies = db.applies().await;
    assert_eq!(applies.len(), 40);
    assert!(applies.iter().all(|(_, n)| *n == 1), "{applies:?}");
    println!("serialization failures answered 500: {refused} of 80 copies");
    db.cleanup().await;
}
