//! The judge's evidence from a real database: hookbench's own tables, observed through the one
//! observer trait, judged by the one judge (the judge alone is tested in `src/judge/tests.rs`).

use std::time::Duration;

use hookbench::judge::{Answers, Class, Expect, History, Ids, Kind, Rules, Sent, judge};
use hookbench::observe::{Gather, INBOX_MAX_ATTEMPTS, Observers, Tables};
use receivers::design::Design;
use receivers::store::Backend;
use testkit::{Db, Server, Signed, credit};

/// The harness keeps its own figure for the inbox's attempt bound (it reads dead letters by it);
/// it must be the receivers'.
#[test]
fn the_observers_inbox_bound_is_the_receivers() {
    assert_eq!(INBOX_MAX_ATTEMPTS, receivers::store::INBOX_MAX_ATTEMPTS);
}

/// One credit, acknowledged.
fn acked_credit() -> Sent {
    let answers = Answers { attempts: 1, acked: true, last_status: Some(200), ..Answers::default() };
    Sent { kind: Kind::Credit { amount: 100 }, account: 1, expect: Expect::Once, answers }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_id_with_two_bodies_is_an_id_conflict_and_the_first_body_alone_is_applied() {
    for backend in Backend::ALL {
        for design in [Design::Atomic, Design::Inbox] {
            let db = Db::fresh(backend).await;
            let server = Server::start(design, &db, Duration::ZERO).await;
            let client = reqwest::Client::new();
            assert_eq!(Signed::new(&credit("evt_000000", 100)).post(&client, &server.url()).await.0, 200);
            if design == Design::Inbox {
                db.drain_inbox().await;
            }
            assert_eq!(Signed::new(&credit("evt_000000", 999)).post(&client, &server.url()).await.0, 409);
            let tables = Tables::connect(&db.url).await.expect("observer");
            let observers = Observers::new(vec![Box::new(tables.clone())]);
            let history = History::new(vec![acked_credit()], Ids::Workload { prefix: String::new() });
            let mut gather = Gather::new(&history);
            observers.look(&mut gather).await.expect("observed");
            tables.close().await;
            let e = gather.evidence;
            assert_eq!(e.id_conflicts, Some(1), "{backend} {design}");
            assert_eq!(
                e.ledger.map(|l| (l.balances, l.rows)),
                Some((100, 100)),
                "{backend} {design}: the first body only"
            );
            let v = judge(&history, &e, &Rules::strict());
            assert!(
                v.run.contains(Class::IdConflict),
                "{backend} {design}: {}",
                hookbench::report::verdict_summary(&v)
            );
            assert!(
                v.passed() && v.exactly_once(),
                "an id conflict warns: {}",
                hookbench::report::verdict_summary(&v)
            );
            server.stop().await;
            db.cleanup().await;
        }
    }
}
