//! The checker reads what receivers left, through the observer, and counts it: here the bodies
//! refused because their id was already stored with another (report.json's `id_conflicts`).

use std::time::Duration;

use hookbench::checker;
use hookbench::observer::Tables;
use hookbench::workload::{Workload, WorkloadConfig};
use receivers::design::Design;
use receivers::store::Backend;
use testkit::{Db, Server, Signed, credit};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_counts_one_id_with_two_bodies_as_a_conflict() {
    for backend in Backend::ALL {
        for design in [Design::Atomic, Design::Inbox] {
            let db = Db::fresh(backend).await;
            let server = Server::start(design, &db, Duration::ZERO).await;
            let client = reqwest::Client::new();
            assert_eq!(Signed::new(&credit("evt_000001", 100)).post(&client, &server.url()).await.0, 200);
            if design == Design::Inbox {
                db.drain_inbox().await;
            }
            assert_eq!(Signed::new(&credit("evt_000001", 999)).post(&client, &server.url()).await.0, 409);
            let workload = Workload::generate(&WorkloadConfig { events: 10, ..WorkloadConfig::default() })
                .expect("workload");
            let tables = Tables::connect(&db.url).await.expect("observer");
            let verdict = checker::check(&tables, &workload).await.expect("checker");
            tables.close().await;
            assert_eq!(verdict.id_conflicts, 1, "{backend} {design}");
            assert_eq!(verdict.figures.ledger, 100, "{backend} {design}: the first body only");
            server.stop().await;
            db.cleanup().await;
        }
    }
}
