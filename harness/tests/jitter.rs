//! `hookbench jitter` on its own: the experiment runs on a wall clock scaled 1/200, where a
//! quarter-second stall is 50 scaled seconds, so no other test shares the machine with it (cargo
//! runs test binaries one after another).

use clap::Parser;
use hookbench::cli::{Cli, run};

#[test]
fn jitter_spreads_the_retry_spike_that_plain_backoff_synchronizes() {
    let cli =
        Cli::try_parse_from(["hookbench", "jitter", "--deliveries", "200", "--time-scale", "200", "--json"])
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
    // With full jitter the last delivery comes much later than without.
    let last = |x: &serde_json::Value| x.as_f64().expect("seconds");
    assert!(last(&real[1]["last_ok_s"]) > last(&real[0]["last_ok_s"]), "{v}");
    assert!((last(&real[0]["last_ok_s"]) - 511.0).abs() < 60.0, "{v}");
}
