//! A report's rows as the subjects of `--fail-on` thresholds: each row's numeric figures under the
//! names report.json gives them, and its latencies in milliseconds.

use std::collections::BTreeMap;

use crate::matrix::Design;
use crate::matrix::{Backend, Isolation};

use super::model::{AuditSection, Check, CheckFigures, LoadFigures, Report, Row, RunBody, Status};
use crate::stats::Percentiles;
use crate::threshold::Subject;

/// The figures a bench row has (its numeric fields in report.json, and latencies in ms).
pub const BENCH_FIGURES: &[&str] = &[
    "deliveries",
    "status_2xx",
    "status_4xx",
    "status_5xx",
    "db_conflicts",
    "timeouts",
    "acks_lost",
    "retries",
    "connect_errors",
    "resets",
    "gave_up",
    "dup_events",
    "extra_applies",
    "lost",
    "never_applied",
    "stale_writes",
    "stale_accounts",
    "ledger",
    "expected",
    "ledger_rows",
    "dead_letters",
    "id_conflicts",
    "poisoned",
    "poison_applied",
    "throughput_per_s",
    "planned_rate",
    "achieved_rate",
    "wall_s",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "actual_p50_ms",
    "actual_p90_ms",
    "actual_p99_ms",
    "actual_p999_ms",
    "actual_max_ms",
];

/// The figures an audit's subjects have: the loads' (the parallel load's, crash's, poison's), the capacity's,
/// and the count of failed checks.
pub const AUDIT_FIGURES: &[&str] = &[
    "failed_checks",
    "deliveries",
    "status_2xx",
    "status_4xx",
    "status_5xx",
    "timeouts",
    "acks_lost",
    "connect_errors",
    "resets",
    "dup_events",
    "extra_applies",
    "lost",
    "never_applied",
    "stale_accounts",
    "refused_applied",
    "gave_up",
    "throughput_per_s",
    "planned_rate",
    "achieved_rate",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "answer_p50_ms",
    "answer_p90_ms",
    "answer_p99_ms",
    "answer_p999_ms",
    "answer_max_ms",
    "poison_applied",
    "capacity_per_s",
];

/// The names a bench threshold's scope may use: the backends, the designs, and the isolation
/// levels (`serialized`: SQLite's cells, whatever was listed).
pub fn bench_scopes() -> Vec<&'static str> {
    let backends = Backend::KNOWN.iter().map(|b| b.as_str());
    let designs = Design::KNOWN.iter().map(|d| d.as_str());
    let levels = <Isolation as strum::VariantArray>::VARIANTS.iter().map(|l| l.as_str());
    backends.chain(designs).chain(levels).chain(["serialized"]).collect()
}

/// The names an audit threshold's scope may use: the checks.
pub fn audit_scopes() -> Vec<&'static str> {
    Check::ALL.iter().map(|c| c.as_str()).collect()
}

/// A value's numeric fields, by name.
fn numbers(value: serde_json::Value) -> BTreeMap<String, f64> {
    match value {
        serde_json::Value::Object(map) => {
            map.into_iter().filter_map(|(k, v)| v.as_f64().map(|n| (k, n))).collect()
        }
        _ => BTreeMap::new(),
    }
}

fn latencies(figures: &mut BTreeMap<String, f64>, prefix: &str, p: &Percentiles) {
    for (name, us) in [("p50", p.p50), ("p90", p.p90), ("p99", p.p99), ("p999", p.p999), ("max", p.max)] {
        figures.insert(format!("{prefix}{name}_ms"), us as f64 / 1e3);
    }
}

fn row(r: &Row) -> Subject {
    let mut figures = numbers(serde_json::to_value(r).unwrap_or_default());
    latencies(&mut figures, "", &r.latency_us);
    latencies(&mut figures, "actual_", &r.latency_actual_us);
    let mut labels = vec![r.backend.as_str().to_string(), r.design.as_str().to_string()];
    // The level the cell ran at, listed or its database's own: `read-committed:dup_events>0`
    // holds Postgres's default cells too.
    labels.extend(r.isolation.clone());
    Subject { name: r.cell(), labels, figures }
}

fn load(check: &str, l: &LoadFigures) -> Subject {
    let mut figures = numbers(serde_json::to_value(l).unwrap_or_default());
    latencies(&mut figures, "", &l.latency_us);
    if let Some(answers) = &l.answer_latency_us {
        latencies(&mut figures, "answer_", answers);
    }
    Subject { name: check.to_string(), labels: vec![check.to_string()], figures }
}

fn audit(a: &AuditSection) -> Vec<Subject> {
    let failed = a.checks.iter().filter(|c| c.status == Status::Fail).count();
    let mut whole = BTreeMap::from([("failed_checks".to_string(), failed as f64)]);
    let mut subjects = Vec::new();
    for c in &a.checks {
        let name = c.check.as_str();
        match &c.figures {
            Some(CheckFigures::Load(l)) => subjects.push(load(name, l)),
            Some(CheckFigures::Crash(f)) => subjects.push(load(name, &f.load)),
            Some(CheckFigures::Poison(p)) => {
                let mut s = load(name, &p.load);
                s.figures.insert("poison_applied".to_string(), p.poison_applied as f64);
                subjects.push(s);
            }
            Some(CheckFigures::Capacity(f)) => {
                if let Some(rate) = f.capacity_per_s {
                    whole.insert("capacity_per_s".to_string(), rate);
                }
            }
            Some(CheckFigures::Storm(_) | CheckFigures::Trials(_) | CheckFigures::Spacings(_)) | None => {}
        }
    }
    subjects
        .insert(0, Subject { name: "audit".to_string(), labels: vec!["audit".to_string()], figures: whole });
    subjects
}

impl Report {
    /// The rows thresholds are held against: a bench's cells, or an audit's loads and itself.
    pub fn subjects(&self) -> Vec<Subject> {
        match &self.body {
            RunBody::Audit { audit: a } => audit(a),
            RunBody::Bench(b) => b.rows.iter().map(row).collect(),
        }
    }
}
