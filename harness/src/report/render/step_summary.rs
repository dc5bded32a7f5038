//! The verdict grid as GitHub's step summary takes it (Markdown appended to the file
//! `GITHUB_STEP_SUMMARY` names): the run, how many cases had each verdict, and a table of every
//! check or cell and threshold with its verdict and evidence. Built from the same
//! [`cases::Case`]s as the JUnit file, every value escaped as text.

use std::fmt::Write as _;

use super::Report;
use super::cases::{self, THRESHOLD_CLASS, Verdict};
use super::escape::{cell_code, code, text};

/// The report's verdict grid as Markdown, between blank lines.
pub fn render_step_summary(report: &Report) -> String {
    let suite = cases::suite(report);
    let count = |word: &str| suite.cases.iter().filter(|c| c.verdict.word() == word).count();
    // A blank line first: what an earlier step wrote may not end its last line.
    let mut md = format!("\n## {} {}\n\n", suite.name, code(&suite.run_id));
    let _ = writeln!(
        md,
        "{} FAIL, {} WARN, {} PASS, {} SKIPPED.\n",
        count("FAIL"),
        count("WARN"),
        count("PASS"),
        count("SKIPPED")
    );
    let what = if report.audit_section().is_some() { "check" } else { "cell" };
    let _ = writeln!(md, "| {what} | verdict | evidence |\n|---|---|---|");
    for case in &suite.cases {
        let name = if case.classname == THRESHOLD_CLASS {
            format!("threshold {}", cell_code(&case.name))
        } else {
            text(&case.name)
        };
        let verdict = match case.verdict {
            Verdict::Pass { .. } => "PASS".to_string(),
            _ => format!("**{}**", case.verdict.word()),
        };
        let _ = writeln!(md, "| {name} | {verdict} | {} |", text(case.verdict.evidence()));
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::render::cases::tests::{audit_report, every_verdict, result};
    use crate::report::{Check, Status};

    #[test]
    fn the_grid_has_a_row_per_check_with_its_verdict_and_evidence() {
        let md = render_step_summary(&every_verdict());
        assert!(
            md.starts_with("\n## hookbench audit `audit-test`\n\n1 FAIL, 1 WARN, 1 PASS, 1 SKIPPED.\n"),
            "{md}"
        );
        assert!(md.contains("| check | verdict | evidence |\n|---|---|---|\n"), "{md}");
        assert!(md.contains("| concurrent-copies | **FAIL** | 3 of 3 trials doubled |"), "{md}");
        assert!(md.contains("| sequential-duplicate | PASS | applied once each |"), "{md}");
        assert!(md.contains("| out-of-order | **SKIPPED** | needs --state-query |"), "{md}");
        assert!(md.contains("| semantic-duplicate | **WARN** | 1 change applied twice |"), "{md}");
    }

    #[test]
    fn evidence_cannot_break_the_table_or_add_markup() {
        let r = audit_report(vec![result(Check::LostAck, Status::Fail, "a | b\n## c <img>", &[], 0)]);
        let md = render_step_summary(&r);
        assert!(md.contains("| lost-ack | **FAIL** | a \\| b \\#\\# c \\<img\\> |"), "{md}");
    }
}
