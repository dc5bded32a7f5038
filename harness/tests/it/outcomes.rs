//! What an attempt came to, counted apart: against a receiver that answers every attempt well
//! within the timeout, the workload's lost acks (answers hookbench drops on purpose, so that the
//! event is sent again) are counted as acks lost and 2xx, never as timeouts.

use receivers::store::Backend;
use testkit::Db;

use super::pace::{parallel_load, serve};

#[test]
fn a_lost_ack_is_counted_as_lost_never_as_a_timeout() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let db = rt.block_on(Db::fresh(Backend::Postgres));
    let receiver = serve(&db, "1ms");
    // 1,000 events with the article's 2 % lost acks: none at all has a chance under 1e-8.
    let (f, evidence) = parallel_load(&receiver, &db, "1000", "500");
    assert_eq!(f.timeouts, 0, "nothing timed out: {f:?}");
    assert!(f.acks_lost > 0, "{f:?}");
    // Every attempt was answered 2xx, the lost acks among them, and each lost ack was sent again.
    assert_eq!((f.status_2xx, f.status_4xx, f.status_5xx), (f.deliveries, 0, 0), "{f:?}");
    assert!(f.deliveries >= f.events + f.acks_lost, "{f:?}");
    assert!(evidence.contains("0 lost"), "{evidence}");
    drop(receiver);
    rt.block_on(db.cleanup());
}
