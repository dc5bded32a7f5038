//! `hookbench repro`: an audit's FAIL as a standalone Python 3 script the user keeps and runs
//! without hookbench. The script embeds what it needs as one JSON value: the audited URL, the
//! check, the copies and trials, the applied query, and the credit body as the audit sent it with
//! sentinel values where the event's id, account, amount and creation time go; it fills them in
//! for fresh events, signs each attempt afresh (Standard Webhooks; the secret only from
//! `HOOKBENCH_SECRET`, never written), sends them as the check did, and judges them with the query.
//!
//! The body is rendered here, by the audit's own payload code, so a template's shape or
//! hookbench's own is kept byte for byte; the script only replaces the sentinels, which
//! [`skeleton`] first proves is enough (the same text rendered with other values must equal the
//! skeleton with those values put in).

use serde_json::json;

use crate::report::model::{CheckFigures, Status};
use crate::report::{Check, Report};
use crate::wire::{Fields, Kind, Payload};

/// The Python the script is built from; `__HOOKBENCH_EMBED__` and `__HOOKBENCH_HEADER__` are
/// filled in.
const SCRIPT: &str = include_str!("script.py");

/// The signing schemes the scripts sign as.
pub use crate::report::model::REPRODUCIBLE_SIGNING as SIGNS;

/// What is written: a script run on its own, or the same as a pytest module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Form {
    /// `python3 repro.py --url URL --db DB`: exits 1 while the finding reproduces.
    #[default]
    Script,
    /// A pytest module (one test per class of the finding the script judges) reading
    /// `HOOKBENCH_REPRO_URL`, `HOOKBENCH_REPRO_DB` and `HOOKBENCH_SECRET`: it fails while the
    /// finding reproduces and passes once it is fixed, the regression test the user commits.
    Pytest,
}

/// The checks a script can reproduce so far.
pub use crate::report::model::REPRODUCIBLE as CHECKS;

/// Sentinels: values no real event has, whose text appears nowhere else in a body.
const SENTINELS: Values =
    ("__HOOKBENCH_ID__", 987_654_321_012_345, 987_654_321_054_321, 987_654_321_077_777, "__HOOKBENCH_OBJ__");
/// A second set, to prove that putting values in the skeleton's text renders the event.
const PROOF: Values = (
    "__HOOKBENCH_PROOF__",
    123_456_789_012_345,
    123_456_789_054_321,
    123_456_789_077_777,
    "__HOOKBENCH_PROOF_OBJ__",
);

/// An event's id, account, amount, creation time and the object it is about.
type Values = (&'static str, i64, i64, i64, &'static str);

/// Why no script could be written.
#[derive(Debug, thiserror::Error)]
pub enum ReproError {
    /// The run is a bench's.
    #[error("{0} is not an audit's report")]
    NotAnAudit(String),
    /// The check did not run, or did not fail.
    #[error("--check {check}: the audit's verdict is {status}; a reproduction is written for a FAIL")]
    NotFailed {
        /// The check.
        check: &'static str,
        /// Its verdict, or that it did not run.
        status: String,
    },
    /// What this version cannot reproduce yet.
    #[error("{0}")]
    Unsupported(String),
    /// The payload's body is not one the sentinels can fill in.
    #[error(
        "the payload's credit body cannot be rebuilt by putting values in its text (a value is \
         transformed, not copied); reproduce with hookbench's own bodies or a template that copies them"
    )]
    Skeleton,
}

/// For each FAIL of `report` this version can reproduce, the command that writes its script (the
/// audit's directory as `dir`): what the terminal's last lines name.
pub fn commands(report: &Report, dir: &std::path::Path) -> Vec<String> {
    let fails = report.audit_section().map(|a| a.reproducible_fails()).unwrap_or_default();
    fails
        .into_iter()
        .map(|check| {
            let name: &'static str = check.into();
            format!("hookbench repro {} --check {name} --out repro-{name}.py", dir.display())
        })
        .collect()
}

/// The credit body of `payload` with the sentinels in it, once it is proved that putting other
/// values in its text renders the body those values make.
pub fn skeleton(payload: &Payload) -> Result<String, ReproError> {
    let render =
        |values| String::from_utf8(payload.render(&credit(values))).map_err(|_| ReproError::Skeleton);
    if !payload.headers(&credit(SENTINELS)).is_empty() {
        return Err(ReproError::Unsupported("a payload that sends headers of its own".to_string()));
    }
    let text = render(SENTINELS)?;
    let (s, p) = (SENTINELS, PROOF);
    let filled = text
        .replace(s.4, p.4)
        .replace(s.0, p.0)
        .replace(&s.1.to_string(), &p.1.to_string())
        .replace(&s.2.to_string(), &p.2.to_string())
        .replace(&s.3.to_string(), &p.3.to_string());
    let holds = text.contains(s.0) && filled == render(PROOF)?;
    if holds { Ok(text) } else { Err(ReproError::Skeleton) }
}

/// A credit with these values.
fn credit((id, account, amount, created, object): Values) -> Fields {
    Fields {
        id: id.to_string(),
        kind: Kind::Credit,
        account,
        amount,
        plan: String::new(),
        version: 0,
        created,
        poisoned: false,
        object: Some(object.to_string()),
    }
}

/// The Python script reproducing `check`'s FAIL in `report`, sending `payload`'s bodies and
/// judging with `applied_query`.
pub fn python_script(
    report: &Report,
    check: Check,
    payload: &Payload,
    applied_query: &str,
    form: Form,
) -> Result<String, ReproError> {
    let audit = report.audit_section().ok_or_else(|| ReproError::NotAnAudit(report.header.run_id.clone()))?;
    let name: &'static str = check.into();
    if !CHECKS.contains(&check) {
        let known: Vec<&str> = CHECKS.iter().map(|c| c.into()).collect();
        return Err(ReproError::Unsupported(format!(
            "--check {name}: this version writes reproductions of {} only",
            known.join(", ")
        )));
    }
    let result = audit.checks.iter().find(|c| c.check == check);
    match result {
        Some(r) if r.status == Status::Fail => {}
        // A semantic duplicate warns unless --strict made it fail: a finding either way.
        Some(r) if r.status == Status::Warn && check == Check::SemanticDuplicate => {}
        other => {
            let status = other.map_or_else(
                || "that it did not run".to_string(),
                |r| format!("{:?}", r.status).to_uppercase(),
            );
            return Err(ReproError::NotFailed { check: name, status });
        }
    }
    if !SIGNS.contains(&audit.signing.as_str()) {
        return Err(ReproError::Unsupported(format!(
            "the audit signed as {}; this version's scripts sign {} only",
            audit.signing,
            SIGNS.join(", ")
        )));
    }
    if matches!(payload, Payload::Provider(_)) {
        return Err(ReproError::Unsupported(
            "a provider's bodies: this version's scripts send hookbench's own bodies or a template"
                .to_string(),
        ));
    }
    let result = result.expect("matched above");
    let (copies, trials) = match &result.figures {
        Some(CheckFigures::Trials(t)) => (t.copies.max(2), t.sent.max(1)),
        _ => (2, 20),
    };
    // The race window's spacings where pairs doubled (all of them when none is known).
    let spacings_ms: Vec<f64> = match &result.figures {
        Some(CheckFigures::Spacings(s)) => {
            let doubled: Vec<f64> =
                s.spacings.iter().filter(|x| x.rate.doubled > 0).map(|x| x.spacing_ms).collect();
            if doubled.is_empty() { s.spacings.iter().map(|x| x.spacing_ms).collect() } else { doubled }
        }
        _ => vec![0.0],
    };
    let witnesses: Vec<&str> = result.witnesses.iter().map(|w| w.id.as_str()).collect();
    let tag = match check {
        Check::ConcurrentCopies => "cc",
        Check::LostAck => "ack",
        Check::RaceWindow => "rw",
        Check::SemanticDuplicate => "sem",
        _ => "seq",
    };
    let (s_id, s_account, s_amount, s_created, s_object) = SENTINELS;
    let finding = json!({
        "check": name,
        "tag": tag,
        "url": audit.url,
        "signing": audit.signing,
        "copies": copies,
        "spacings_ms": spacings_ms,
        "trials": trials,
        "timeout_s": 10,
        "content_type": payload.content_type(),
        "headers": {},
        "body": skeleton(payload)?,
        "sentinels": {"id": s_id, "account": s_account, "amount": s_amount, "created": s_created, "object": s_object},
        "applied_query": applied_query,
        "found": {
            "run": report.header.run_id,
            "at": report.header.started_at,
            "commit": report.header.git_sha,
            "evidence": result.evidence,
            "witnesses": witnesses,
        },
    });
    let embedded = serde_json::to_string(&finding.to_string()).expect("a string serializes");
    let header = header_comment(report, name, &audit.url, &result.evidence, form);
    let tests = match form {
        Form::Script => String::new(),
        Form::Pytest => pytest_tests(name, &result.evidence, audit.signing != "none"),
    };
    Ok(SCRIPT
        .replace("__HOOKBENCH_EMBED__", &embedded)
        .replacen("# __HOOKBENCH_HEADER__", &header, 1)
        .replacen("# __HOOKBENCH_TESTS__", &tests, 1))
}

/// The pytest functions: one per class of the finding the script judges (a duplicate: an event
/// applied more than once), each failing while the receiver still shows it.
fn pytest_tests(check: &str, evidence: &str, signed: bool) -> String {
    let needed = if signed {
        r#"("HOOKBENCH_REPRO_URL", "HOOKBENCH_REPRO_DB", "HOOKBENCH_SECRET")"#
    } else {
        r#"("HOOKBENCH_REPRO_URL", "HOOKBENCH_REPRO_DB")"#
    };
    let test = check.replace('-', "_");
    let (name, fails_while) = if check == "semantic-duplicate" {
        ("applies_each_change_once", "both events of one change are applied")
    } else {
        ("applies_each_event_once", "an event is applied more than once")
    };
    let evidence = crate::printable::line(evidence).replace('"', "'").replace('\\', "/");
    format!(
        r#"def _repro_target():
    missing = [name for name in {needed} if not os.environ.get(name)]
    assert not missing, "set " + ", ".join(missing) + " (the receiver's URL, its database, its secret)"
    trials = int(os.environ.get("HOOKBENCH_REPRO_TRIALS", FINDING["trials"]))
    return os.environ["HOOKBENCH_REPRO_URL"], os.environ["HOOKBENCH_REPRO_DB"], trials


def test_{test}_{name}():
    """{check}: hookbench found {evidence}. Fails while {fails_while}."""
    code, said = reproduce(*_repro_target())
    assert code != 2, said
    assert code == 0, said
"#
    )
}

/// The script's top comment: what hookbench found, when, against what, and how to run it.
fn header_comment(report: &Report, check: &str, url: &str, evidence: &str, form: Form) -> String {
    let commit = report.header.git_sha.as_deref().unwrap_or("unknown");
    let lines = [
        format!("hookbench audit {} found {check} against {url}", report.header.run_id),
        format!("at {} (hookbench commit {commit}):", report.header.started_at),
        format!("  {}", crate::printable::line(evidence)),
        "Run it against a fresh instance of the receiver, its secret in the environment:".to_string(),
        match form {
            Form::Script => "  HOOKBENCH_SECRET=whsec_... python3 repro.py --url URL --db DATABASE [--trials N]",
            Form::Pytest => {
                "  HOOKBENCH_REPRO_URL=URL HOOKBENCH_REPRO_DB=DATABASE HOOKBENCH_SECRET=whsec_... pytest test_repro.py"
            }
        }
        .to_string(),
    ];
    lines.iter().map(|l| format!("# {l}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests;
