//! Before any check: one signed delivery of a fresh credit (and, when it is refused, the same body
//! signed with a secret the receiver never had) tells a receiver the audit cannot judge as told
//! from one that fails. Each of these stops the audit as could-not-run (exit 2) with the fix: a
//! redirect (give the URL it names: often the trailing slash), a 404 or 405 answered as at a path
//! that cannot exist (the path; answered otherwise, the event itself is refused: its accounts), a
//! correctly signed delivery answered as the wrongly signed one is, twice (`--secret`,
//! `--signing`; words that vary between the two are not compared), a correctly signed delivery
//! refused otherwise (its body: `--payload`), no answer within `--timeout`. A 2xx, a 5xx or an
//! answer cut short goes on: the checks judge the receiver. (A query of the wrong shape is refused
//! before this, when the observer connects.) An unsigned delivery would not tell these apart: a
//! receiver may answer a missing signature and a malformed body with the same 400.
//!
//! An acknowledged credit must then be seen applied ([`confirm`]): a receiver that answers 2xx
//! and applies nothing, or queries that do not read its effect, would fail every check with
//! "lost" witnesses that blame the receiver for what may be the audit's own configuration (a body
//! the handler routes nowhere). A per-account aggregate must move by exactly what one apply adds,
//! so that a fee or a conversion stops the audit before it could fail a correct receiver.

use std::time::Duration;

use super::AuditError;
use super::config::Target;
use super::ctx::{Ctx, Delivered};
use super::probe::Answer;
use crate::history::Fate;
use crate::judge::{CreditBook, Expect};
use crate::observe::Observers;
use crate::wire::{Payload, Scheme};

/// What the preflight found wrong, with the fix.
pub type Fix = String;

/// The preflight credit's amount (in the scarce layout, a place value of a shared account).
pub const AMOUNT: i64 = 100;

/// The preflight: `Ok` with the credit of `amount` it sent (credit `n` of the run's preflights: a
/// sharded audit's shard sends its own), `Err` naming what to fix before the receiver can be
/// audited.
pub async fn preflight(
    ctx: &Ctx,
    url: &str,
    n: usize,
    amount: i64,
) -> Result<Result<Delivered, Fix>, AuditError> {
    let f = ctx.credit("pre", n, amount, TRIES)?;
    let mut sent = Delivered::new(f, Expect::Once);
    Ok(delivered(ctx, url, &mut sent).await.map(|()| sent))
}

/// Sends `sent`, the preflight's credit, and tells what its answers say.
async fn delivered(ctx: &Ctx, url: &str, sent: &mut Delivered) -> Result<(), Fix> {
    let f = sent.fields.clone();
    let mut signed = ctx.deliver(&f, "preflight, signed").await;
    // A receiver warming up (a cold start, a pool filling) may miss one timeout: three in a row
    // is a receiver that does not answer.
    for _ in 1..TRIES {
        if signed.fate != Fate::TimedOut {
            break;
        }
        sent.push(signed);
        signed = ctx.deliver(&f, "preflight, signed, again").await;
    }
    sent.push(signed.clone());
    let Some(status) = signed.status else { return unanswered(&signed, ctx.probe.timeout()) };
    let scheme = ctx.wire.signer.scheme();
    match status {
        300..=399 => Err(redirect(url, ctx.probe.path(), status, signed.location.as_deref())),
        404 | 405 => {
            // The same delivery where nothing can be: a receiver that answers 404 for an unknown
            // customer answers the real path otherwise.
            let (body, headers) = ctx.wire.attempt(&f, super::ctx::now_s());
            let nowhere =
                ctx.probe.post(Some(NOWHERE), &headers, body, "preflight, to a path that cannot exist").await;
            Err(not_found(ctx.probe.path(), (status, &signed.said), (nowhere.status, &nowhere.said)))
        }
        400 | 401 | 403 | 422 if scheme.signs() => {
            let stranger = ctx.wire.signed_by(ctx.wire.signer.stranger());
            let wrong = ctx.deliver_over(&stranger, &f, "preflight, signed with a secret it never had").await;
            let again = ctx.deliver_over(&stranger, &f, "preflight, signed with a secret it never had").await;
            // Words that vary from one refusal to the next (a request id) cannot be compared.
            let words = if wrong.said == again.said { Some(wrong.said.as_str()) } else { None };
            Err(refused(scheme, (status, &signed.said), (wrong.status, words)))
        }
        401 | 403 => Err(format!(
            "the receiver answered {status} to an unsigned delivery (--signing none): give --signing and --secret as its provider signs"
        )),
        400 | 422 => Err(format!(
            "the receiver refused the body with {status}{}: check --payload (the body's shape)",
            quoted(&signed.said)
        )),
        _ => Ok(()),
    }
}

/// How many times the preflight's delivery is tried before a receiver that never answers within
/// `--timeout` stops the audit.
pub const TRIES: u32 = 3;

/// After the preflight credit `sent` was acknowledged: waits until every observer of applies sees
/// it applied (a receiver may apply from a queue), at most `settle.1`, looking every `settle.0`,
/// and, for a per-account aggregate, moved by exactly what its applies add (`book` holds it).
/// `Err` says why the audit cannot go on: nothing seen (the two causes it cannot tell apart, with
/// what `target` sent), or a change no applies explain (a fee, rounding, a conversion).
pub async fn confirm(
    observers: &Observers,
    sent: &Delivered,
    book: &CreditBook,
    settle: (Duration, Duration),
    target: &Target,
) -> Result<Result<(), Fix>, AuditError> {
    let sees = observers.sees();
    if !sent.answers.acked || !(sees.applies || sees.aggregates) {
        return Ok(Ok(()));
    }
    let (quiet, most) = settle;
    let deadline = tokio::time::Instant::now() + most;
    let id = &sent.fields.id;
    let mut last: Option<Seen> = None;
    loop {
        let snapshot = observers.snapshot().await?.resolve(book);
        let now = Seen::of(&snapshot, id, sent.fields.account);
        // Seen applied as it should be: confirmed at once. A change no applies explain must hold
        // over two looks (a receiver applying in steps may pass through one).
        let confirmed = now.unseen.is_empty() && now.unexplained.is_empty();
        if confirmed || (last.as_ref() == Some(&now) && !now.unexplained.is_empty()) {
            return Ok(now.verdict(sent, target, most));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(now.verdict(sent, target, most));
        }
        last = Some(now);
        tokio::time::sleep(quiet).await;
    }
}

/// What the observers saw of the preflight credit.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    /// The observers that did not see it applied.
    unseen: Vec<String>,
    /// The aggregates whose change on its account no applies explain, and why.
    unexplained: Vec<(String, String)>,
}

impl Seen {
    fn of(snapshot: &crate::observe::Snapshot, id: &str, account: i64) -> Self {
        let aggregates: Vec<&str> = snapshot.undecoded.iter().map(|(name, _)| name.as_str()).collect();
        let unexplained: Vec<(String, String)> = snapshot
            .unexplained
            .iter()
            .flatten()
            .filter(|u| u.account == account)
            .map(|u| (u.observer.clone(), u.problem.clone()))
            .collect();
        let unseen = snapshot
            .applied
            .iter()
            .filter(|(observer, counts)| {
                let undecoded =
                    aggregates.contains(&observer.as_str()) && unexplained.iter().any(|(o, _)| o == observer);
                !undecoded && counts.get(id).copied().unwrap_or(0) == 0
            })
            .map(|(observer, _)| observer.clone())
            .collect();
        Self { unseen, unexplained }
    }

    fn verdict(self, sent: &Delivered, target: &Target, waited: Duration) -> Result<(), Fix> {
        let f = &sent.fields;
        if !self.unexplained.is_empty() {
            let moved: Vec<String> = self
                .unexplained
                .iter()
                .map(|(observer, problem)| format!("{problem} (--{observer}-query)"))
                .collect();
            return Err(format!(
                "the preflight credit of {} to account {} ({}) was acknowledged, and then {}: a fee, rounding or a \
                 currency conversion? --balance-query must sum the amounts as sent, --count-query count one \
                 row per applied credit, so that the audit can count the applies",
                f.amount,
                f.account,
                f.id,
                moved.join("; ")
            ));
        }
        if self.unseen.is_empty() {
            return Ok(());
        }
        Err(format!(
            "the receiver acknowledged the preflight credit ({}, account {}, amount {}) and {} did not see it \
             applied within --settle-max {}: either the handler ignores this event ({}) or the queries do not \
             read its effect (point --applied-query, --balance-query or --count-query at the rows the handler \
             writes; `hookbench discover` proposes them); a receiver that answers 2xx and applies nothing cannot \
             be audited",
            f.id,
            f.account,
            f.amount,
            self.unseen.join(" and "),
            humantime::format_duration(waited),
            ignored_because(target)
        ))
    }
}

/// Why a handler may ignore the audit's event, from what the audit sent: the body and its type.
fn ignored_because(target: &Target) -> String {
    let signing = target.signing;
    match &target.payload {
        Payload::Hookbench if !matches!(signing, Scheme::StandardWebhooks | Scheme::None) => format!(
            "--signing {0} with --payload hookbench sent hookbench's own body, not the provider's: give --payload {0}",
            signing.as_str()
        ),
        Payload::Provider(b) => format!(
            "check --payload {} and --event-type: a credit went as {}",
            b.name(),
            target.payload.event_type(crate::wire::Kind::Credit)
        ),
        payload => format!("check --payload {}: the body's shape and its type", payload.name()),
    }
}

/// The preflight's delivery got no whole answer. Three that ran out of `--timeout` stop the audit:
/// every delivery after it would wait as long and prove nothing (a receiver that accepts and never
/// answers kept an audit busy for 15 minutes). One cut short goes on, to be judged.
fn unanswered(signed: &Answer, timeout: Duration) -> Result<(), Fix> {
    if signed.fate != Fate::TimedOut {
        return Ok(());
    }
    Err(format!(
        "the receiver did not answer a signed delivery within --timeout {} ({TRIES} tries): check that it answers, or raise --timeout",
        humantime::format_duration(timeout)
    ))
}

/// A path no receiver serves, to compare a 404 with.
const NOWHERE: &str = "/hookbench-preflight-no-such-path";

/// The fix for a 404 or 405 at `path`: the path, when a path that cannot exist is answered alike;
/// else the event is what the receiver refuses.
fn not_found(path: &str, at_path: (u16, &str), nowhere: (Option<u16>, &str)) -> Fix {
    let (status, said) = at_path;
    if nowhere.0 == Some(status) && nowhere.1 == said {
        return format!(
            "the receiver answered {status}{} at {path} to a signed delivery, as at a path that cannot exist: nothing takes webhooks there; check the URL's path",
            quoted(said)
        );
    }
    format!(
        "the receiver answered {status}{} at {path} to a signed delivery, unlike at a path that cannot exist ({}): it refuses the event itself (an account it does not know?); create the accounts it needs, or point --account-base at accounts that exist",
        quoted(said),
        nowhere.0.map_or_else(|| "no answer".to_string(), |s| s.to_string())
    )
}

fn quoted(said: &str) -> String {
    if said.is_empty() { String::new() } else { format!(" (\"{said}\")") }
}

/// The fix for a redirect: the URL it names, and the trailing slash when that is all it adds.
fn redirect(url: &str, path: &str, status: u16, location: Option<&str>) -> Fix {
    let Some(to) = location else {
        return format!(
            "the receiver answered {status}, a redirect without a Location, to a signed delivery: give the URL it serves webhooks at"
        );
    };
    let slash = !url.ends_with('/') && (to == format!("{url}/") || to == format!("{path}/"));
    let hint = if slash { ": add the trailing slash" } else { "" };
    format!(
        "the receiver answered {status} redirecting to {to} for a signed delivery (a provider does not follow redirects){hint}; audit {to}"
    )
}

/// The fix for a correctly signed delivery refused with `signed` (status, words): the secret or
/// scheme when one signed with a secret the receiver never had is answered alike (the same status,
/// and the same words unless they vary between refusals: `None`), else the body.
fn refused(scheme: Scheme, signed: (u16, &str), wrong: (Option<u16>, Option<&str>)) -> Fix {
    let (status, said) = signed;
    if wrong.0 == Some(status) && wrong.1.is_none_or(|w| w == said) {
        return format!(
            "the receiver answers a correctly signed delivery as it answers one signed with a secret it never had ({status}{}): check --secret (the receiver's signing secret, as the provider shows it) and --signing {}",
            quoted(said),
            scheme.as_str()
        );
    }
    format!(
        "the receiver refused a correctly signed delivery with {status}{}, unlike one signed with a secret it never had ({}{}): the signature passed and the body was refused; check --payload (the body's shape; a template names the fields your handler reads)",
        quoted(said),
        wrong.0.map_or_else(|| "no answer".to_string(), |u| u.to_string()),
        quoted(wrong.1.unwrap_or_default())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Measure;
    use crate::observe::{Record, Snapshot};

    /// The preflight credit `pre_0000` of 1,500 to account 7, acknowledged once.
    fn acked() -> Delivered {
        let f = crate::wire::Fields {
            id: "pre_0000".into(),
            kind: crate::wire::Kind::Credit,
            account: 7,
            amount: 1_500,
            plan: String::new(),
            version: 0,
            created: 0,
            poisoned: false,
            object: None,
        };
        let mut sent = Delivered::new(f, Expect::Once);
        sent.answers.attempts = 1;
        sent.answers.acked = true;
        sent
    }

    fn target(signing: Scheme, payload: Payload) -> Target {
        Target {
            url: "http://h:1/w".into(),
            signing,
            provider: None,
            secrets: Vec::new(),
            payload,
            signed_url: None,
        }
    }

    /// What a snapshot whose balance of account 7 moved by `change` says of the preflight credit.
    fn seen(change: Option<i64>, sql: Option<u64>) -> Seen {
        let sent = acked();
        let mut s = Snapshot::default();
        if let Some(n) = sql {
            s.sees("sql", crate::observe::Sees { applies: true, ..Default::default() });
            Record::applied(&mut s, "sql", "pre_0000", n);
        }
        if let Some(change) = change {
            s.aggregate(Measure::Balance, Some((7, change)));
        }
        let mut book = CreditBook::default();
        sent.book(&mut book);
        Seen::of(&s.resolve(&book), "pre_0000", 7)
    }

    #[test]
    fn calibration_refuses_a_fee_quoting_the_numbers() {
        let t = target(Scheme::StandardWebhooks, Payload::Hookbench);
        let fix = seen(Some(1_470), None).verdict(&acked(), &t, Duration::from_secs(1)).expect_err("a fee");
        assert!(
            fix.contains("the balance moved by +1,470 for a credit of 1,500")
                && fix.contains("a fee, rounding or a currency conversion?")
                && fix.contains("--balance-query must sum the amounts as sent"),
            "{fix}"
        );
        assert_eq!(seen(Some(1_500), None).verdict(&acked(), &t, Duration::from_secs(1)), Ok(()));
    }

    #[test]
    fn a_credit_no_observer_saw_applied_names_both_causes_and_what_was_sent() {
        let t = target(Scheme::Github, Payload::Hookbench);
        let nothing = seen(Some(0), Some(0));
        assert_eq!(nothing.unseen, ["sql", "balance"]);
        let fix = nothing.verdict(&acked(), &t, Duration::from_secs(60)).expect_err("unseen");
        assert!(
            fix.contains("sql and balance did not see it applied within --settle-max 1m")
                && fix.contains("--signing github with --payload hookbench sent hookbench's own body")
                && fix.contains("give --payload github")
                && fix.contains("the queries do not read its effect"),
            "{fix}"
        );
        // One observer saw it, the other did not: still not confirmed.
        assert_eq!(seen(Some(1_500), Some(0)).unseen, ["sql"]);
        assert_eq!(seen(Some(1_500), Some(1)).verdict(&acked(), &t, Duration::from_secs(1)), Ok(()));
    }

    #[test]
    fn a_redirect_to_the_trailing_slash_says_to_add_it() {
        let fix = redirect("http://h:1/webhooks", "/webhooks", 301, Some("http://h:1/webhooks/"));
        assert!(fix.ends_with("add the trailing slash; audit http://h:1/webhooks/"), "{fix}");
        let fix = redirect("http://h:1/webhooks", "/webhooks", 308, Some("/webhooks/"));
        assert!(fix.contains("add the trailing slash"), "{fix}");
        let fix = redirect("http://h:1/webhooks", "/webhooks", 302, Some("/login"));
        assert!(!fix.contains("trailing slash") && fix.contains("audit /login"), "{fix}");
    }

    #[test]
    fn a_refusal_like_a_wrong_secrets_names_the_secret_and_any_other_the_payload() {
        let fix =
            refused(Scheme::Stripe, (400, "No signatures found"), (Some(400), Some("No signatures found")));
        assert!(fix.contains("--secret") && fix.contains("--signing stripe"), "{fix}");
        let fix = refused(
            Scheme::StandardWebhooks,
            (422, "missing field customer"),
            (Some(401), Some("bad signature")),
        );
        assert!(fix.contains("--payload") && fix.contains("missing field customer"), "{fix}");
        // The same status, other words: the example receiver's 400 for a malformed body and for a
        // signature that matches no secret.
        let fix = refused(
            Scheme::StandardWebhooks,
            (400, "malformed event"),
            (Some(400), Some("no matching signature")),
        );
        assert!(fix.contains("--payload"), "{fix}");
    }

    #[test]
    fn words_that_vary_between_refusals_compare_by_status_alone() {
        // A receiver that puts a request id in every refusal: the same status is the secret's.
        let fix = refused(Scheme::Stripe, (400, "req 7f2a: bad request"), (Some(400), None));
        assert!(fix.contains("--secret"), "{fix}");
        let fix = refused(Scheme::Stripe, (400, "req 7f2a: bad request"), (Some(401), None));
        assert!(fix.contains("--payload"), "{fix}");
        let fix = refused(Scheme::Stripe, (400, "bad"), (None, None));
        assert!(fix.contains("--payload") && fix.contains("no answer"), "{fix}");
    }

    #[test]
    fn a_404_like_a_path_that_cannot_exist_names_the_path_and_one_unlike_it_the_event() {
        let fix = not_found("/webhooks", (404, "Not Found"), (Some(404), "Not Found"));
        assert!(fix.contains("check the URL's path") && fix.contains("at /webhooks"), "{fix}");
        let fix = not_found("/webhooks", (404, "unknown customer"), (Some(404), "Not Found"));
        assert!(fix.contains("refuses the event itself") && !fix.contains("URL's path"), "{fix}");
        let fix = not_found("/webhooks", (405, ""), (Some(404), ""));
        assert!(fix.contains("refuses the event itself"), "{fix}");
        let fix = not_found("/webhooks", (404, ""), (None, ""));
        assert!(fix.contains("no answer"), "{fix}");
    }
}
