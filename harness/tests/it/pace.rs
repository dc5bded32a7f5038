//! A load's planned and achieved rates. A receiver that takes 1 s a delivery holds the sender's
//! 16 in flight, so a load planned at 200 events a second goes out at about 16: report.json has
//! both rates and the evidence line says the load fell behind and why. A load the receiver keeps
//! up with has its rates in report.json and says nothing of them.

use std::process::Command;

use hookbench::audit::Check;
use hookbench::report::{CheckFigures, LoadFigures, Report};
use receivers::store::Backend;
use testkit::{Db, SECRET};

use super::audit::{APPLIED, Receiver, run_audit, start};

/// `hookbench serve --design atomic` on `db`, each delivery taking `work_delay`.
pub(super) fn serve(db: &Db, work_delay: &str) -> Receiver {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookbench"));
    cmd.args(["serve", "--design", "atomic", "--database-url", &db.url, "--listen", "127.0.0.1:0"]);
    cmd.args(["--secret", SECRET, "--work-delay", work_delay]);
    start(cmd)
}

/// The parallel load of an audit of `receiver` with `events` at `rate`: its figures and its
/// evidence line.
pub(super) fn parallel_load(receiver: &Receiver, db: &Db, events: &str, rate: &str) -> (LoadFigures, String) {
    let url = format!("http://{}/webhooks/acme", receiver.addr);
    let args = [
        url.as_str(),
        "--secret",
        SECRET,
        "--observe-db",
        &db.url,
        "--applied-query",
        APPLIED,
        "--checks",
        "parallel-load",
        "--events",
        events,
        "--rate",
        rate,
        "--quiet",
        "300ms",
    ];
    let (code, said, report) = run_audit(&args);
    let report: Report = report.unwrap_or_else(|| panic!("a report ({code}: {said})"));
    let check =
        report.audit_section().expect("an audit").checks.iter().find(|c| c.check == Check::ParallelLoad);
    let check = check.expect("the parallel load").clone();
    let Some(CheckFigures::Load(figures)) = check.figures else { panic!("load figures: {check:?}") };
    (*figures, check.evidence)
}

#[test]
fn a_load_the_receiver_cannot_keep_up_with_says_both_rates_and_why() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let db = rt.block_on(Db::fresh(Backend::Postgres));
    let receiver = serve(&db, "1s");
    let (figures, evidence) = parallel_load(&receiver, &db, "200", "200");
    let (planned, achieved) =
        (figures.planned_rate.expect("planned"), figures.achieved_rate.expect("achieved"));
    assert_eq!(planned, 200.0);
    // 16 in flight, each answered after about 1 s: some 16 events a second, far under 0.97 of 200.
    assert!(achieved < 30.0, "achieved {achieved}");
    assert!(
        evidence.contains(&format!("sent at {achieved:.1}/s of the planned {planned:.0}/s"))
            && evidence.contains("the sender's 16 in flight were waiting on the receiver")
            && evidence.contains("latencies include that wait"),
        "{evidence}"
    );
    drop(receiver);
    rt.block_on(db.cleanup());
}

#[test]
fn a_load_the_receiver_keeps_up_with_says_nothing_of_its_rates() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let db = rt.block_on(Db::fresh(Backend::Postgres));
    let receiver = serve(&db, "20ms");
    // At 10/s: at 1/s (the same audit, run by hand) the plan's one late duplicate comes 200 s in.
    let (figures, evidence) = parallel_load(&receiver, &db, "20", "10");
    let (planned, achieved) =
        (figures.planned_rate.expect("planned"), figures.achieved_rate.expect("achieved"));
    assert!(planned == 10.0 && achieved >= 0.97 * planned, "{planned} {achieved}");
    assert!(!evidence.contains("sent at") && !evidence.contains("planned"), "{evidence}");
    drop(receiver);
    rt.block_on(db.cleanup());
}
