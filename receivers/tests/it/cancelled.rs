//! A write whose request is dropped half-way, its client gone: the atomic claim that goes in one
//! statement on Postgres and in one string of statements then `COMMIT` on SQLite must still
//! commit all or nothing, and must not leave a pooled connection inside an open transaction (on
//! SQLite that would hold the file's write lock against every later writer).

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use receivers::event::Event;
use receivers::store::{Applied, Backend, Guard, Store, StoreError, StoreOptions};
use testkit::{Db, credit};

/// Polls `write` until it is done or `budget` has passed, yielding to the runtime between polls
/// (finer than the runtime's 1 ms timer), then drops it.
async fn dropped_after<F: Future>(budget: Duration, write: F) {
    let started = Instant::now();
    let mut write = pin!(write);
    loop {
        let ready = std::future::poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx).is_ready())).await;
        if ready || started.elapsed() >= budget {
            return;
        }
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_dropped_at_any_point_commits_all_or_nothing_and_frees_the_store() {
    const EVENTS: usize = 60;
    const WARM: usize = 1;
    for backend in Backend::ALL {
        let db = Db::fresh(backend).await;
        // One write first, so the schema and one pooled connection are there. Later drops fall
        // on the pool opening another connection, on the write's way out and on its answer: with
        // every connection opened first, no Postgres drop came before its statement was sent (60
        // of 60 committed), so some are left to open.
        for i in 0..WARM {
            let warm = credit(&format!("evt_warm{i}"), 5);
            db.store.apply_once(&warm, "body", Guard::None, None).await.expect("a first write");
        }
        let events: Vec<Event> = (0..EVENTS).map(|i| credit(&format!("evt_{i:06}"), 5)).collect();
        // Dropped after 0 to 5.9 ms: before the write goes out, while it is on its way or being
        // answered, after it.
        for (i, event) in events.iter().enumerate() {
            let budget = Duration::from_micros(100 * i as u64);
            dropped_after(budget, db.store.apply_once(event, "body", Guard::None, None)).await;
        }
        // Each again, to the end: applied now, or found applied by the dropped write; and the
        // store still writes, within a bound (a leaked SQLite transaction would hold the file
        // for the 30 s busy timeout).
        let mut applied_now = 0;
        for event in &events {
            let again = db.store.apply_once(event, "body", Guard::None, None);
            let outcome = tokio::time::timeout(Duration::from_secs(10), again)
                .await
                .unwrap_or_else(|_| panic!("{backend}: {} not written within 10 s", event.id()))
                .unwrap_or_else(|e| panic!("{backend}: {}: {e}", event.id()));
            match outcome {
                Applied::Applied => applied_now += 1,
                Applied::Duplicate => {}
                other => panic!("{backend}: {}: {other:?}", event.id()),
            }
        }
        // Every event once: a key claimed without its credit would have answered the second
        // write as a duplicate and left the event out of the ledger.
        let applies = db.applies().await;
        assert_eq!(applies.len(), EVENTS + WARM, "{backend}: {applies:?}");
        assert!(applies.iter().all(|(_, n)| *n == 1), "{backend}: {applies:?}");
        assert_eq!(
            db.scalar("SELECT count(*) FROM processed_events").await,
            (EVENTS + WARM) as i64,
            "{backend}"
        );
        // Where the drops fell (before or after the write went out) is the machine's timing, so
        // it is said, not asserted.
        eprintln!("{backend}: {applied_now} of {EVENTS} dropped writes had not committed");
        db.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_refused_half_way_leaves_no_transaction_open_on_its_connection() {
    for backend in Backend::ALL {
        let db = Db::fresh(backend).await;
        // A poison credit takes the claim statement by statement: its key is inserted in an open
        // transaction, then the side effect refuses it and the transaction is dropped. Its
        // connection goes back to the pool; a ROLLBACK queued on it and not sent would keep the
        // key's row locked (and SQLite's file) until that connection's next use, which here
        // never comes.
        let refused = db.store.apply_once(&credit("evt_000001", 0), "body", Guard::None, None).await;
        assert!(matches!(refused, Err(StoreError::Refused(_))), "{backend}: {refused:?}");
        // Another store, so another connection, claims the same id and must not wait for one.
        let options = StoreOptions { busy_timeout: Duration::from_secs(5), ..StoreOptions::default() };
        let other = Store::connect(&db.url, &options).await.expect("a second store");
        let event = credit("evt_000001", 5);
        let claim = other.apply_once(&event, "body", Guard::None, None);
        let outcome = tokio::time::timeout(Duration::from_secs(10), claim)
            .await
            .unwrap_or_else(|_| panic!("{backend}: the claim waited 10 s for the refused one's lock"))
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert_eq!(outcome, Applied::Applied, "{backend}");
        other.close().await;
        assert_eq!(db.applies().await, [("evt_000001".to_string(), 1)], "{backend}");
        db.cleanup().await;
    }
}
