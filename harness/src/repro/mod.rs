//! `hookbench repro`: an audit's FAIL as a standalone script the user keeps and runs without
//! hookbench: Python 3 (standard library only), the same as a pytest module, or Node 18+. The
//! script embeds what it needs as one JSON value: the audited URL, the check, the copies, spacings
//! and trials, the hostile cases its witnesses showed, the applied query, and the credit's body and
//! headers as the audit sent them with sentinels where the event's values go
//! ([`skeleton`](skeleton::skeleton)). It fills them in for fresh events under a new prefix, signs
//! each attempt afresh as the audit's scheme does (the secret only from `HOOKBENCH_SECRET`, never
//! written), sends them as the check did, and judges them with the query.

use std::str::FromStr;

use serde_json::json;

use crate::report::model::Witness;
use crate::report::model::{CheckFigures, Status};
use crate::report::{Check, Report};
use crate::wire::signing::Scheme;
use crate::wire::{Kind, Payload};

mod skeleton;

pub use skeleton::{Skeleton, skeleton};

/// The Python the script is built from; `__HOOKBENCH_EMBED__` and `__HOOKBENCH_HEADER__` are
/// filled in.
const SCRIPT: &str = include_str!("script.py");
/// The same for Node (CommonJS, so that any file name runs).
const NODE_SCRIPT: &str = include_str!("script.js");

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
    /// The script for Node 18+ (`node:http`, `node:crypto`; `pg` for Postgres, `node:sqlite` or
    /// `better-sqlite3` for SQLite), for receivers written in JavaScript.
    Node,
}

/// The checks a script can reproduce so far.
pub use crate::report::model::REPRODUCIBLE as CHECKS;

/// The queries a script judges with (those report.json records, or those the flags give): the
/// observer's own. Without an applied query, each event's applies are its account's change in
/// balance over its amount, else in effect rows (every event of a run has an account of its own).
pub use crate::observe::Queries;

/// What a script judges applies by: the applied query's rows, or an account's change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "by", content = "query", rename_all = "lowercase")]
enum Evidence {
    /// Rows of (event id) or (event id, count).
    Applied(String),
    /// Rows of (account, balance).
    Balance(String),
    /// Rows of (account, effect rows).
    Count(String),
}

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
    /// The check judges with a query neither the report nor the flags give.
    #[error(
        "{flag}: the report records no {what} (an older report, or an audit without one); give the query to judge with"
    )]
    NoQuery {
        /// The flag that gives it.
        flag: &'static str,
        /// What it reads.
        what: &'static str,
    },
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

/// The script reproducing `check`'s FAIL in `report`, sending `payload`'s bodies and
/// judging with `queries` (out-of-order with the state query, every other check with the applied
/// query).
pub fn script(
    report: &Report,
    check: Check,
    payload: &Payload,
    queries: &Queries,
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
    let scheme = <Scheme as clap::ValueEnum>::from_str(&audit.signing, false).map_err(|_| {
        ReproError::Unsupported(format!(
            "the audit signed as {}, a scheme this version does not know",
            audit.signing
        ))
    })?;
    let (evidence, state_query) = needed_queries(check, queries)?;
    let poison_account = match (check, audit.repro.poison_account) {
        (Check::Poison, None) => {
            return Err(ReproError::Unsupported(
                "--check poison: the audit's poison events took a template's body (--poison-template), \
                 which a script does not rebuild yet; reproduce an audit run with --poison-account"
                    .to_string(),
            ));
        }
        (_, account) => account,
    };
    let started = jiff::Timestamp::from_str(&report.header.started_at).map_or(0, |t| t.as_second());
    let kind = if check == Check::OutOfOrder { Kind::Update } else { Kind::Credit };
    let sk = skeleton(payload, kind, scheme, started)?;
    let result = result.expect("matched above");
    let cases = match check {
        Check::HostileInput => hostile_cases(result)?,
        _ => Vec::new(),
    };
    let (copies, trials) = match &result.figures {
        Some(CheckFigures::Trials(t)) => (t.copies.max(2), t.sent.max(1)),
        _ => (
            2,
            match check {
                Check::HostileInput => 5,
                // Accounts, each sent six versions.
                Check::LateReplay | Check::OutOfOrder => 10,
                // Duplicates come from the deliveries in flight at a kill: many events, sent at once.
                Check::Crash => 500,
                // Events, one in five of them poison.
                Check::Poison => 40,
                _ => 20,
            },
        ),
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
        Check::LateReplay => "late",
        Check::HostileInput => "hos",
        Check::Crash => "crash",
        Check::OutOfOrder => "ooo",
        Check::Poison => "poi",
        _ => "seq",
    };
    let (s_id, s_account, s_amount, s_created, s_object) = skeleton::SENTINELS;
    let finding = json!({
        "check": name,
        "tag": tag,
        "url": provision::hide_password(&audit.url),
        "signing": audit.signing,
        "copies": copies,
        "spacings_ms": spacings_ms,
        "trials": trials,
        "cases": cases,
        "stall_wait_s": audit.repro.stall_wait_ms.map_or(30.0, |ms| ms as f64 / 1000.0),
        "timeout_s": 10,
        "account_base": audit.account_base,
        // How the audit's load sent copies: the crash script sends its events the same way.
        "load": {
            "p_duplicate": audit.parameters.p_duplicate,
            "p_concurrent": audit.parameters.p_concurrent,
            "p_ack_lost": audit.parameters.p_ack_lost,
        },
        "headers": sk.headers,
        "body": sk.body,
        "kept": sk.kept,
        "sent_at_in_body": sk.sent_at_in_body,
        "sentinels": {
            "id": s_id, "account": s_account, "amount": s_amount, "object": s_object,
            "created": if sk.fresh_created { Some(s_created) } else { None },
        },
        "evidence": evidence,
        "state_query": state_query,
        "dead_letter_query": queries.dead_letters,
        "poison_account": poison_account,
        "found": {
            "run": report.header.run_id,
            "at": report.header.started_at,
            "commit": report.header.git_sha,
            "evidence": result.evidence,
            "witnesses": witnesses,
        },
    });
    let embedded = serde_json::to_string(&finding.to_string()).expect("a string serializes");
    let header =
        header_comment(report, name, &provision::hide_password(&audit.url), &result.evidence, &sk.kept, form);
    Ok(match form {
        Form::Node => NODE_SCRIPT.replace("__HOOKBENCH_EMBED__", &embedded).replacen(
            "// __HOOKBENCH_HEADER__",
            &header,
            1,
        ),
        Form::Script | Form::Pytest => {
            let tests = match form {
                Form::Pytest => pytest_tests(name, &result.evidence, audit.signing != "none"),
                _ => String::new(),
            };
            SCRIPT
                .replace("__HOOKBENCH_EMBED__", &embedded)
                .replacen("# __HOOKBENCH_HEADER__", &header, 1)
                .replacen("# __HOOKBENCH_TESTS__", &tests, 1)
        }
    })
}

/// What `check`'s script judges by: out-of-order by the state query; every other check by the
/// applied query, else by an account's change in balance, else in effect rows. A semantic
/// duplicate's two events share an account, so an account's change cannot tell them apart.
fn needed_queries(check: Check, queries: &Queries) -> Result<(Option<Evidence>, Option<String>), ReproError> {
    if check == Check::OutOfOrder {
        let state = queries.state.clone().ok_or(ReproError::NoQuery {
            flag: "--state-query",
            what: "state query (each account's version)",
        })?;
        return Ok((None, Some(state)));
    }
    // A semantic duplicate's two events share an account; so do poison events.
    let per_account = !matches!(check, Check::SemanticDuplicate | Check::Poison);
    let evidence = match (&queries.applied, &queries.balance, &queries.count) {
        (Some(q), _, _) => Evidence::Applied(q.clone()),
        (None, Some(q), _) if per_account => Evidence::Balance(q.clone()),
        (None, None, Some(q)) if per_account => Evidence::Count(q.clone()),
        _ => {
            return Err(ReproError::NoQuery {
                flag: "--applied-query",
                what: if per_account {
                    "applied, balance or count query (how often each event was applied)"
                } else {
                    "applied query (a semantic duplicate's two events, or poison events, share an account)"
                },
            });
        }
    };
    Ok((Some(evidence), None))
}

/// The hostile-input cases a script re-sends, named by the notes of the witnesses' attempts: what
/// must be refused (a tampered body, a wrong secret, no signature, a timestamp the provider's
/// library refuses, malformed JSON), one id sent with another body, a stalled body (which must
/// not be held past the audit's `--stall-wait`) and a body past the limit `--oversized-bytes`
/// named (`oversized:BYTES`, which must not be acknowledged). Other paths and overflowing
/// credits are not written yet.
fn hostile_cases(result: &crate::report::model::CheckResult) -> Result<Vec<String>, ReproError> {
    const CASES: [(&str, &str); 8] = [
        ("tampered body", "tampered"),
        ("wrong secret", "wrong-secret"),
        ("no signature headers", "unsigned"),
        ("timestamp an hour old", "stale"),
        ("timestamp an hour ahead", "future"),
        ("the same id with another body", "rebodied"),
        (crate::report::MALFORMED_BODY, "malformed"),
        ("stalled body", "stalled"),
    ];
    let notes = |w: &Witness| w.attempts.iter().map(|a| a.note.clone()).collect::<Vec<_>>();
    let all: Vec<String> = result.witnesses.iter().flat_map(notes).collect();
    let mut cases: Vec<String> = CASES
        .iter()
        .filter(|(note, _)| all.iter().any(|n| n == note))
        .map(|(_, case)| case.to_string())
        .collect();
    let oversized =
        all.iter().find_map(|n| n.strip_suffix(crate::report::model::PAST_THE_LIMIT)?.parse::<usize>().ok());
    cases.extend(oversized.map(|bytes| format!("oversized:{bytes}")));
    if cases.is_empty() {
        return Err(ReproError::Unsupported(format!(
            "--check hostile-input: its witnesses are cases a script does not send yet ({})",
            all.iter().filter(|n| !n.is_empty()).cloned().collect::<Vec<_>>().join("; ")
        )));
    }
    Ok(cases)
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
    let (name, fails_while) = match check {
        "semantic-duplicate" => ("applies_each_change_once", "both events of one change are applied"),
        "out-of-order" => (
            "keeps_each_accounts_latest_version",
            "an account is left at an older version than one it acknowledged",
        ),
        "poison" => (
            "parks_poison_and_applies_the_rest_once",
            "a poison event is applied or not dead-lettered, or another event is not applied once",
        ),
        _ => ("applies_each_event_once", "an event is applied more than once"),
    };
    let evidence = crate::printable::line(evidence).replace('"', "'").replace('\\', "/");
    format!(
        r#"def _repro_target():
    missing = [name for name in {needed} if not os.environ.get(name)]
    assert not missing, "set " + ", ".join(missing) + " (the receiver's URL, its database, its secret)"
    trials = int(os.environ.get("HOOKBENCH_REPRO_TRIALS", FINDING["trials"]))
    env = os.environ.get
    # The script's own flags, for the checks that take them (crash, late-replay).
    opts = argparse.Namespace(
        retention_cmd=env("HOOKBENCH_REPRO_RETENTION_CMD"),
        replay_after=float(env("HOOKBENCH_REPRO_REPLAY_AFTER", "0")),
        kill_cmd=env("HOOKBENCH_REPRO_KILL_CMD"),
        start_cmd=env("HOOKBENCH_REPRO_START_CMD"),
        kills=int(env("HOOKBENCH_REPRO_KILLS", "1")),
        signed_url=env("HOOKBENCH_REPRO_SIGNED_URL"),
        stall_wait=float(env("HOOKBENCH_REPRO_STALL_WAIT")) if env("HOOKBENCH_REPRO_STALL_WAIT") else None,
    )
    return os.environ["HOOKBENCH_REPRO_URL"], os.environ["HOOKBENCH_REPRO_DB"], trials, opts


def test_{test}_{name}():
    """{check}: hookbench found {evidence}. Fails while {fails_while}."""
    code, said = reproduce(*_repro_target())
    assert code != 2, said
    assert code == 0, said
"#
    )
}

/// The script's top comment: what hookbench found, when, against what, and how to run it.
fn header_comment(
    report: &Report,
    check: &str,
    url: &str,
    evidence: &str,
    kept: &[String],
    form: Form,
) -> String {
    let commit = report.header.git_sha.as_deref().unwrap_or("unknown");
    let lines = [
        format!("hookbench audit (run {}) found {check} against {url}", report.header.run_id),
        format!("at {} (hookbench commit {commit}):", report.header.started_at),
        format!("  {}", crate::printable::line(evidence)),
        "Run it against a fresh instance of the receiver, its secret in the environment:".to_string(),
        match form {
            Form::Script => "  HOOKBENCH_SECRET=... python3 repro.py --url URL --db DATABASE [--trials N]",
            Form::Node => "  HOOKBENCH_SECRET=... node repro.js --url URL --db DATABASE [--trials N]",
            Form::Pytest => {
                "  HOOKBENCH_REPRO_URL=URL HOOKBENCH_REPRO_DB=DATABASE HOOKBENCH_SECRET=... pytest test_repro.py"
            }
        }
        .to_string(),
    ];
    let mut lines = lines.to_vec();
    let pytest = form == Form::Pytest;
    match check {
        "crash" if pytest => lines.push("  with HOOKBENCH_REPRO_KILL_CMD, HOOKBENCH_REPRO_START_CMD [HOOKBENCH_REPRO_KILLS]: how to kill your receiver and start it".to_string()),
        "crash" => lines.push("  with --kill-cmd CMD --start-cmd CMD [--kills N]: how to kill your receiver and start it".to_string()),
        "late-replay" if pytest => lines.push("  [HOOKBENCH_REPRO_RETENTION_CMD] [HOOKBENCH_REPRO_REPLAY_AFTER]: your purge job, and the wait before the replay".to_string()),
        "late-replay" => lines.push("  [--retention-cmd CMD] [--replay-after SECONDS]: your purge job, and the wait before the replay".to_string()),
        _ => {}
    }
    if !kept.is_empty() {
        // A provider's body: what the script cannot make fresh is said, not hidden.
        lines.push(
            "The body is the audit's provider body with a fresh event id, account and amount; its dates"
                .to_string(),
        );
        lines.push(
            "keep the audit's time, and these places its values (hookbench derives them from the id):"
                .to_string(),
        );
        for chunk in kept.chunks(6) {
            lines.push(format!("  {}", chunk.join(", ")));
        }
    }
    let mark = if form == Form::Node { "//" } else { "#" };
    lines.iter().map(|l| format!("{mark} {l}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests;
