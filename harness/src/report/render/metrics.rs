//! `--metrics FILE`: a bench's or an audit's figures in the Prometheus text exposition format (prometheus-client's
//! OpenMetrics encoder), labelled by backend and design, for a node_exporter textfile collector or
//! a push gateway. Attempt counts are counters; the judge's correctness figures and the
//! throughput, a run's results rather than running totals, are gauges; latency from the planned
//! send is a histogram whose buckets come from the run's HdrHistogram.

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet, text::encode};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

use super::{AuditSection, Report, Row, RunBody};
use crate::stats::LatencyBuckets;

/// A metric's labels: the cell.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Cell {
    backend: String,
    design: String,
}

/// A histogram whose buckets were counted elsewhere (by the run's HdrHistogram), set once.
#[derive(Debug, Default)]
struct Counted(Mutex<LatencyBuckets>);

impl TypedMetric for Counted {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Counted {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let b = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        encoder.encode_histogram::<NoLabelSet>(b.sum_s, b.count, &b.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

type Pick = fn(&Row) -> u64;
type PickF = fn(&Row) -> f64;

/// The attempt counters: name, help, the row's figure.
const COUNTERS: [(&str, &str, Pick); 11] = [
    ("hookbench_deliveries", "Attempts sent", |r| r.deliveries),
    ("hookbench_responses_2xx", "Attempts answered 2xx", |r| r.status_2xx),
    ("hookbench_responses_4xx", "Attempts answered 4xx", |r| r.status_4xx),
    ("hookbench_responses_5xx", "Attempts answered 5xx", |r| r.status_5xx),
    (
        "hookbench_db_conflicts",
        "Attempts answered 5xx naming a database transaction conflict (serialization failure or deadlock)",
        |r| r.db_conflicts,
    ),
    ("hookbench_timeouts", "Attempts timed out", |r| r.timeouts),
    (
        "hookbench_acks_lost",
        "Attempts answered 2xx whose answer hookbench dropped on purpose (lost acks)",
        |r| r.acks_lost,
    ),
    ("hookbench_connect_errors", "Attempts no connection was made for", |r| r.connect_errors),
    ("hookbench_resets", "Attempts whose connection broke before a whole answer", |r| r.resets),
    ("hookbench_retries", "Attempts that were retries", |r| r.retries),
    ("hookbench_gave_up", "Deliveries given up after the attempt limit", |r| r.gave_up),
];

/// The run's results: name, help, the row's figure.
const GAUGES: [(&str, &str, PickF); 8] = [
    ("hookbench_dup_events", "Credit events applied more than once", |r| r.figures.dup_events as f64),
    ("hookbench_extra_applies", "Applies beyond the first", |r| r.figures.extra_applies as f64),
    ("hookbench_lost_events", "Credit events acknowledged with a 2xx and never applied", |r| {
        r.figures.lost as f64
    }),
    ("hookbench_never_applied_events", "Events never acknowledged and never applied", |r| {
        r.figures.never_applied as f64
    }),
    ("hookbench_stale_writes", "Times an older plan overwrote a newer one", |r| {
        r.figures.stale_writes as f64
    }),
    ("hookbench_stale_accounts", "Accounts below the latest version acknowledged for them", |r| {
        r.figures.stale_accounts as f64
    }),
    ("hookbench_throughput_per_second", "Attempts per second over the delivery phase", |r| {
        r.throughput_per_s
    }),
    ("hookbench_wall_seconds", "The cell's wall time", |r| r.wall_s),
];

/// An audit metric's labels: the check (`audit` for the audit as a whole).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabel {
    check: String,
}

/// A check's verdict as a state set: one series per check and status, 1 for the status it has.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckStatus {
    check: String,
    status: String,
}

/// An audit's verdicts and figures: each check's status, and every figure its thresholds can name
/// (`hookbench_audit_<figure>`, labelled by check: the loads' and the audit's own), as gauges.
fn audit_registry(report: &Report, a: &AuditSection) -> Registry {
    let mut registry = Registry::default();
    let status = Family::<CheckStatus, Gauge>::default();
    for c in &a.checks {
        for s in ["PASS", "FAIL", "SKIPPED", "WARN"] {
            let labels = CheckStatus { check: c.check.as_str().to_string(), status: s.to_string() };
            status.get_or_create(&labels).set(i64::from(c.status.as_str() == s));
        }
    }
    registry.register("hookbench_audit_check", "Each check's status: 1 for the one it has", status);
    let subjects = report.subjects();
    for &figure in super::super::AUDIT_FIGURES {
        let family = Family::<CheckLabel, Gauge<f64, AtomicU64>>::default();
        let mut any = false;
        for s in &subjects {
            if let Some(&v) = s.figures.get(figure) {
                family.get_or_create(&CheckLabel { check: s.labels.join("/") }).set(v);
                any = true;
            }
        }
        if any {
            registry.register(format!("hookbench_audit_{figure}"), format!("The audit's {figure}"), family);
        }
    }
    registry
}

/// The report's rows (or, for an audit, its verdicts and figures) in the Prometheus text
/// exposition format.
pub fn render_metrics(report: &Report) -> Result<String, std::fmt::Error> {
    let rows = match &report.body {
        RunBody::Bench(b) => &b.rows,
        RunBody::Audit { audit } => {
            let mut out = String::new();
            encode(&mut out, &audit_registry(report, audit))?;
            return Ok(out);
        }
    };
    let mut registry = Registry::default();
    let cell =
        |r: &Row| Cell { backend: r.backend.as_str().to_string(), design: r.design.as_str().to_string() };
    for (name, help, pick) in COUNTERS {
        // A counter an older report did not count apart is left out, not exported as zeros.
        if !report.header.counts(name.trim_start_matches("hookbench_")) {
            continue;
        }
        let family = Family::<Cell, Counter>::default();
        for r in rows {
            family.get_or_create(&cell(r)).inc_by(pick(r));
        }
        registry.register(name, help, family);
    }
    for (name, help, pick) in GAUGES {
        let family = Family::<Cell, Gauge<f64, AtomicU64>>::default();
        for r in rows {
            family.get_or_create(&cell(r)).set(pick(r));
        }
        registry.register(name, help, family);
    }
    let latency = Family::<Cell, Counted>::default();
    for r in rows {
        if let Ok(mut b) = latency.get_or_create(&cell(r)).0.lock() {
            *b = r.latency_buckets.clone();
        }
    }
    registry.register(
        "hookbench_latency_seconds",
        "Latency from each attempt's planned send to its answer (coordinated omission corrected)",
        latency,
    );
    let mut out = String::new();
    encode(&mut out, &registry)?;
    Ok(out)
}
