//! `hookbench jitter` on its own: the experiment runs on a wall clock scaled 1/25, where a
//! quarter-second stall is 6 scaled seconds, so no other test shares the machine with it (cargo
//! runs test binaries one after another). At 1/200 a busy CI machine (2 cores, right after the
//! integration tests) put the 200 synchronized retries through over about 50 ms, ten scaled
//! seconds, and the spike was flattened to 37 per second; at 1/25 the same 50 ms is 1.25 s. The
//! figures carry how late the retries due after recovery arrived (`recovery_late_p99_s`), so a
//! failure here says whether the machine kept the schedule.

use clap::Parser;
use hookbench::cli::{Cli, run};

#[test]
fn jitter_spreads_the_retry_spike_that_plain_backoff_synchronizes() {
    let cli =
        Cli::try_parse_from(["hookbench", "jitter", "--deliveries", "200", "--time-scale", "25", "--json"])
            .expect("valid arguments");
    let mut out = Vec::new();
    run(cli, &mut out).expect("jitter runs");
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    let (real, model) = (&v["real"], &v["model"]);
    let n = |x: &serde_json::Value| x.as_u64().expect("a count");
    // Without jitter every delivery retries at 0, 1, 3, 7, ... s: all 200 fail together at 255 s
    // and come back together at 511 s, a spike measured at the receiver.
    assert_eq!(n(&real[0]["attempts"]), n(&model[0]["attempts"]), "{v}");
    assert_eq!(n(&model[0]["peak_after"]), 200);
    let spike = n(&real[0]["peak_after"]);
    let spread = n(&real[1]["peak_after"]);
    assert!(spike >= 50, "no synchronized spike at the receiver: {v}");
    assert!(spread * 5 <= spike, "full jitter did not spread the retries: {v}");
    for mode in [&real[0], &real[1]] {
        let late = mode["recovery_late_p99_s"].as_f64().expect("seconds");
        assert!(late.is_finite() && late >= 0.0, "arrivals measured before they were due: {v}");
    }
    // With full jitter the last delivery comes much later than without.
    let last = |x: &serde_json::Value| x.as_f64().expect("seconds");
    assert!(last(&real[1]["last_ok_s"]) > last(&real[0]["last_ok_s"]), "{v}");
    assert!((last(&real[0]["last_ok_s"]) - 511.0).abs() < 60.0, "{v}");
}
