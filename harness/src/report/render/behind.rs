//! The bench's cells that fell behind their plan, marked wherever their latencies are shown: a
//! cell whose sender could not keep the rate sent its deliveries late, and its latencies from the
//! plan are a backlog's, not the receiver's alone, so a reader must not compare them with a cell
//! that kept the rate.

use super::BenchBody;
use crate::matrix::Design;
use crate::report::model::{BehindCause, Column, behind};

/// What a behind cell's design is marked with in the tables.
pub(super) const MARK: &str = "*";

/// Each cell that fell behind: its column, design and the words for it.
pub(super) fn behind_cells(b: &BenchBody) -> Vec<(Column, Design, String)> {
    b.rows
        .iter()
        .filter_map(|r| {
            let (planned, achieved) = behind(r.planned_rate, r.achieved_rate)?;
            let why = r.behind_cause.map_or(String::new(), |c| format!(": {}", cause(c)));
            Some((r.column(), r.design, format!("{}{why}", words(planned, achieved))))
        })
        .collect()
}

/// "sent at 1633/s of the planned 2500/s (65 %)".
fn words(planned: f64, achieved: f64) -> String {
    format!("sent at {achieved:.0}/s of the planned {planned:.0}/s ({:.0} %)", 100.0 * achieved / planned)
}

/// Why a load fell behind, in words: "the sender's 16 in flight were waiting on the receiver".
pub fn cause(c: BehindCause) -> String {
    match c {
        BehindCause::InFlightCap { cap } => {
            format!("the sender's {cap} in flight were waiting on the receiver")
        }
        BehindCause::Machine => "the sender could not keep the pace on this machine".to_string(),
    }
}

/// What an evidence line adds after a load's latencies when it fell behind its plan: "; sent at
/// 15.2/s of the planned 200/s: the sender's 16 in flight were waiting on the receiver; latencies
/// include that wait". Nothing when it kept the plan or the rates were not measured.
pub fn fell_behind(planned: Option<f64>, achieved: Option<f64>, why: Option<BehindCause>) -> String {
    let Some((planned, achieved)) = behind(planned, achieved) else { return String::new() };
    let why = why.map_or(String::new(), |c| format!(": {}", cause(c)));
    format!("; sent at {achieved:.1}/s of the planned {planned:.0}/s{why}; latencies include that wait")
}

/// The note under a table that marked cells: which, and what it means for their latencies.
pub(super) fn note(cells: &[(Column, Design, String)]) -> Vec<String> {
    if cells.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "{MARK} fell behind its plan: its deliveries went out late, so its latencies include the wait for \
         the sender, not the receiver's time alone; compare them with no cell that kept the rate"
    )];
    lines.extend(cells.iter().map(|(k, d, w)| format!("  {k} {d}: {w}")));
    lines
}

/// `design` as a table shows it: marked when its cell fell behind.
pub(super) fn design_cell(cells: &[(Column, Design, String)], column: Column, design: Design) -> String {
    let marked = cells.iter().any(|(k, d, _)| *k == column && *d == design);
    if marked { format!("{design}{MARK}") } else { design.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::Report;

    /// A bench's report with a sqlite row per `(design, planned_rate, achieved_rate)`.
    fn report(rates: &[(&str, Option<f64>, Option<f64>)]) -> Report {
        let latency = serde_json::json!({"p50":1000,"p90":2000,"p99":3000,"p999":4000,"max":5000,"count":10});
        let rows: Vec<serde_json::Value> = rates
            .iter()
            .map(|(design, planned, achieved)| {
                serde_json::json!({"backend":"sqlite","design":design,"deliveries":10,"status_2xx":10,
                    "status_4xx":0,"status_5xx":0,"timeouts":0,"retries":0,"dup_events":0,"extra_applies":0,
                    "lost":0,"stale_writes":0,"stale_accounts":0,"ledger":700,"expected":700,
                    "latency_us":latency,"latency_actual_us":latency,"throughput_per_s":100.0,
                    "planned_rate":planned,"achieved_rate":achieved,"wall_s":1.5,
                    "connect_errors":0,"gave_up":0,"ledger_rows":700,"dead_letters":0,"model":null})
            })
            .collect();
        let json = serde_json::json!({"kind":"bench","run_id":"bench-test","started_at":"2026-12-01T10:00:00Z",
            "git_sha":null,
            "parameters":{"seed":1,"events":10,"workers":1,"concurrency":2,"rate":2500.0,"work_delay":"0s",
                "timeout":"1s","retry":{"base":"10ms","cap":"1s","max_attempts":10},"isolation":"read-committed",
                "inbox_workers":2,"p_duplicate":0.03,"p_ack_lost":0.02,"p_concurrent":0.01,"p_shuffle":0.1},
            "versions":{"hookbench":"0.1.0","postgres":null,"sqlite":null,"postgres_origin":null},
            "machine":{"cpu":"c","cores":2,"memory_bytes":null,"os":"linux","arch":"x86_64"},
            "rows":rows,"skipped":[],"broken":[],"witnesses":[]});
        serde_json::from_value(json).expect("a bench's report")
    }

    fn body(rates: &[(&str, Option<f64>, Option<f64>)]) -> BenchBody {
        report(rates).bench_body().expect("a bench").clone()
    }

    #[test]
    fn the_terminal_table_and_report_md_mark_the_cell_and_say_why() {
        let r = report(&[
            ("check-then-insert", Some(2500.0), Some(1880.0)),
            ("atomic", Some(2500.0), Some(2500.0)),
        ]);
        let table = super::super::render_table(&r);
        assert!(table.contains("\ncheck-then-insert* "), "{table}");
        assert!(table.contains("\natomic "), "{table}");
        assert!(
            table.contains("* fell behind its plan")
                && table.contains("sqlite check-then-insert: sent at 1880/s")
        );
        let md = super::super::render_markdown(&r);
        assert!(md.contains("| sqlite | check-then-insert\\* |"), "{md}");
        assert!(md.contains("| sqlite | atomic |"), "{md}");
        // Escaped as text where it enters (`:` too, so nothing in it links).
        assert!(md.contains("- sqlite check-then-insert\\: sent at 1880/s of the planned 2500/s"), "{md}");
        let kept = report(&[("atomic", Some(2500.0), Some(2500.0))]);
        assert!(!super::super::render_table(&kept).contains("fell behind"));
        assert!(!super::super::render_markdown(&kept).contains("fell behind"));
    }

    #[test]
    fn only_a_cell_under_097_of_its_plan_is_marked_and_named() {
        let b = body(&[
            ("check-then-insert", Some(2500.0), Some(1880.0)),
            ("atomic", Some(2500.0), Some(2440.0)),
            ("inbox", None, None),
        ]);
        let cells = behind_cells(&b);
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].2, "sent at 1880/s of the planned 2500/s (75 %)");
        let sqlite = Column { backend: crate::matrix::Backend::Sqlite, level: None };
        assert_eq!(design_cell(&cells, sqlite, Design::CheckThenInsert), "check-then-insert*");
        assert_eq!(design_cell(&cells, sqlite, Design::Atomic), "atomic");
        let note = note(&cells);
        assert_eq!(note.len(), 2);
        assert_eq!(note[1], "  sqlite check-then-insert: sent at 1880/s of the planned 2500/s (75 %)");
    }

    #[test]
    fn the_cause_follows_the_rates_when_it_is_known() {
        let mut b = body(&[
            ("check-then-insert", Some(2500.0), Some(1880.0)),
            ("atomic", Some(2500.0), Some(1000.0)),
        ]);
        b.rows[0].behind_cause = Some(BehindCause::Machine);
        b.rows[1].behind_cause = Some(BehindCause::InFlightCap { cap: 64 });
        let cells = behind_cells(&b);
        assert_eq!(
            cells[0].2,
            "sent at 1880/s of the planned 2500/s (75 %): the sender could not keep the pace on this machine"
        );
        assert!(
            cells[1].2.ends_with("(40 %): the sender's 64 in flight were waiting on the receiver"),
            "{}",
            cells[1].2
        );
    }

    #[test]
    fn an_evidence_line_says_the_rates_and_the_cause_only_when_the_load_fell_behind() {
        let cap = Some(BehindCause::InFlightCap { cap: 16 });
        assert_eq!(
            fell_behind(Some(200.0), Some(15.2), cap),
            "; sent at 15.2/s of the planned 200/s: the sender's 16 in flight were waiting on the receiver; \
             latencies include that wait"
        );
        assert_eq!(
            fell_behind(Some(200.0), Some(150.0), None),
            "; sent at 150.0/s of the planned 200/s; latencies include that wait"
        );
        assert_eq!(fell_behind(Some(200.0), Some(199.0), cap), "");
        assert_eq!(fell_behind(None, Some(15.2), cap), "");
        assert_eq!(fell_behind(Some(200.0), None, cap), "");
    }

    #[test]
    fn a_run_whose_cells_kept_the_rate_or_were_not_measured_has_no_note() {
        let b = body(&[("atomic", Some(2500.0), Some(2499.0)), ("naive", None, Some(10.0))]);
        assert!(behind_cells(&b).is_empty());
        assert!(note(&[]).is_empty());
    }
}
