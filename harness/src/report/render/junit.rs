//! `--junit FILE`: a run's verdicts as JUnit XML, which CI systems (GitHub's test reporters,
//! GitLab, Jenkins) read. One `<testsuite>` per run, one `<testcase>` per [`cases::Case`]: a FAIL
//! is a `<failure>` whose message is the evidence and whose text lists the first witnesses and what
//! to change; SKIPPED is `<skipped>` with the reason; a WARN passes, its evidence in
//! `<system-out>`. The XML is quick-junit's (nextest's), which escapes markup in every value;
//! every value first passes [`xml_text`], which replaces the characters XML 1.0 forbids (a receiver
//! answering `bad \u{ffff} here` made a file no CI's reader would open).

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use super::Report;
use super::cases::{self, Case, Suite, Verdict};

/// The JUnit file could not be made.
#[derive(Debug, thiserror::Error)]
#[error("encoding JUnit XML: {0}")]
pub struct JunitError(#[from] quick_junit::SerializeError);

/// `value` with every character XML 1.0 does not allow in a document (its `Char` production: the
/// C0 controls but tab, line feed and carriage return, and U+FFFE and U+FFFF) replaced by U+FFFD,
/// so that the file parses wherever it goes. Surrogates, the production's other gap, cannot be in a
/// Rust string: a receiver's answer is decoded lossily, an unpaired one already U+FFFD.
pub(super) fn xml_text(value: &str) -> String {
    let allowed = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{fffd}' | '\u{10000}'..);
    value.chars().map(|c| if allowed(c) { c } else { char::REPLACEMENT_CHARACTER }).collect()
}

/// The report's run as a JUnit XML document.
pub fn render_junit(report: &Report) -> Result<String, JunitError> {
    let suite = cases::suite(report);
    let mut doc = quick_junit::Report::new("hookbench");
    doc.add_test_suite(test_suite(&suite, report));
    Ok(doc.to_string()?)
}

fn test_suite(suite: &Suite, report: &Report) -> TestSuite {
    let mut s = TestSuite::new(xml_text(suite.name));
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(&suite.started_at) {
        s.set_timestamp(at);
    }
    if let Some(time) = seconds(suite.time_s) {
        s.set_time(time);
    }
    s.add_property(Property::new("run_id", xml_text(&suite.run_id)));
    s.add_property(Property::new("hookbench", xml_text(&report.header.versions.hookbench)));
    if let Some(sha) = &report.header.git_sha {
        s.add_property(Property::new("git_sha", xml_text(sha)));
    }
    s.add_test_cases(suite.cases.iter().map(test_case));
    s
}

fn test_case(case: &Case) -> TestCase {
    let status = match &case.verdict {
        Verdict::Pass { .. } | Verdict::Warn { .. } => TestCaseStatus::success(),
        Verdict::Fail { message, details } => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_message(xml_text(message)).set_type("FAIL");
            if !details.is_empty() {
                status.set_description(xml_text(&details.join("\n")));
            }
            status
        }
        Verdict::Skipped { reason } => {
            let mut status = TestCaseStatus::skipped();
            status.set_message(xml_text(reason));
            status
        }
    };
    let mut t = TestCase::new(xml_text(&case.name), status);
    t.set_classname(xml_text(case.classname));
    if let Some(time) = case.time_s.and_then(seconds) {
        t.set_time(time);
    }
    if let Verdict::Warn { evidence, details } = &case.verdict {
        let lines: Vec<&str> =
            std::iter::once(evidence.as_str()).chain(details.iter().map(String::as_str)).collect();
        t.set_system_out(xml_text(&format!("WARN: {}", lines.join("\n"))));
    }
    t
}

/// `s` seconds as a duration, when it is one (a report's figures are not checked).
fn seconds(s: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::render::cases::tests::{audit_report, every_verdict, result};
    use crate::report::{Check, Status};

    /// The document `report` renders, read back by quick-junit's own reader: the one suite.
    fn read_back(report: &Report) -> TestSuite {
        let xml = render_junit(report).expect("renders");
        let doc = quick_junit::Report::deserialize_from_str(&xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
        assert_eq!(doc.test_suites.len(), 1, "one suite per run: {xml}");
        doc.test_suites.into_iter().next().expect("a suite")
    }

    fn case<'a>(s: &'a TestSuite, name: &str) -> &'a TestCase {
        s.test_cases.iter().find(|c| c.name.as_str() == name).unwrap_or_else(|| panic!("no case {name}"))
    }

    #[test]
    fn a_fail_is_a_failure_a_skip_skipped_a_warn_and_a_pass_pass() {
        let s = read_back(&every_verdict());
        assert_eq!(s.name.as_str(), "hookbench audit");
        assert_eq!((s.tests, s.failures, s.skipped, s.errors), (4, 1, 1, 0));
        assert_eq!(s.time, Some(Duration::from_millis(2500)));
        assert!(s.timestamp.is_some(), "the run's start");
        let run_id = s.properties.iter().find(|p| p.name.as_str() == "run_id").expect("run_id");
        assert_eq!(run_id.value.as_str(), "audit-test");
        let fail = case(&s, "concurrent-copies");
        assert_eq!(fail.classname.as_ref().map(|c| c.as_str()), Some("hookbench.audit"));
        let TestCaseStatus::NonSuccess { kind: NonSuccessKind::Failure, message, description, .. } =
            &fail.status
        else {
            panic!("a failure: {:?}", fail.status)
        };
        assert_eq!(message.as_ref().map(|m| m.as_str()), Some("3 of 3 trials doubled"));
        let text = description.as_ref().expect("witnesses").as_str();
        assert!(
            text.starts_with("evt_0: duplicate") && text.contains("docs/remedies.md#duplicate"),
            "{text}"
        );
        assert_eq!(text.lines().count(), cases::MAX_WITNESSES + 2, "{text}");
        let skip = case(&s, "out-of-order");
        let TestCaseStatus::Skipped { message, .. } = &skip.status else {
            panic!("skipped: {:?}", skip.status)
        };
        assert_eq!(message.as_ref().map(|m| m.as_str()), Some("needs --state-query"));
        let warn = case(&s, "semantic-duplicate");
        assert!(matches!(warn.status, TestCaseStatus::Success { .. }), "a WARN passes: {:?}", warn.status);
        let out = warn.system_out.as_ref().expect("the WARN's evidence").as_str();
        assert!(out.starts_with("WARN: 1 change applied twice"), "{out}");
        let pass = case(&s, "sequential-duplicate");
        assert!(matches!(pass.status, TestCaseStatus::Success { .. }) && pass.system_out.is_none());
    }

    #[test]
    fn markup_and_control_characters_in_evidence_arrive_as_text() {
        let evil = "<failure message=\"x\"/>]]> & \u{1b}[31m\u{7}";
        let r = audit_report(vec![result(Check::LostAck, Status::Fail, evil, &[], 0)]);
        let s = read_back(&r);
        assert_eq!((s.tests, s.failures), (1, 1));
        let TestCaseStatus::NonSuccess { message, .. } = &s.test_cases[0].status else { panic!("a failure") };
        let message = message.as_ref().expect("a message").as_str();
        // Control characters (an escape, a bell) are no XML 1.0 text: the cases have them as spaces.
        assert_eq!(message, "<failure message=\"x\"/>]]> &  [31m ");
    }

    #[test]
    fn the_characters_xml_forbids_are_replaced_and_the_rest_kept() {
        assert_eq!(xml_text("bad \u{ffff} \u{fffe} \u{0} here"), "bad \u{fffd} \u{fffd} \u{fffd} here");
        let allowed = "tab\tLF\nCR\r \u{7f}\u{85}\u{d7ff}\u{e000}\u{fdd0}\u{fffd}\u{10000}\u{10ffff} é ✓";
        assert_eq!(xml_text(allowed), allowed);
        // A FAIL's evidence quoting an answer with U+FFFF in it reads back.
        let evil = "answered 400 (\"bad \u{ffff} here\")";
        let r = audit_report(vec![result(Check::LostAck, Status::Fail, evil, &[], 0)]);
        let s = read_back(&r);
        let TestCaseStatus::NonSuccess { message, .. } = &s.test_cases[0].status else { panic!("a failure") };
        assert_eq!(message.as_ref().expect("a message").as_str(), "answered 400 (\"bad \u{fffd} here\")");
    }

    #[test]
    fn the_vacuous_report_is_one_skipped_case_and_no_failure() {
        let s = read_back(&audit_report(Vec::new()));
        assert_eq!((s.tests, s.failures, s.skipped), (1, 0, 1));
        assert_eq!(s.test_cases[0].name.as_str(), "nothing judged");
    }
}
