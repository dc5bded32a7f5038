//! What to change, for each anomaly the judge names: one short remedy per class, each with its
//! section in docs/remedies.md. Plain data: which classes a check found is the judge's; this only
//! says what a receiver's author does about each.

use crate::judge::Class;

use super::{Check, MALFORMED_BODY, Witness};

/// The page every remedy has a section in (its anchor is the remedy's).
pub const DOCS: &str = "docs/remedies.md";

/// What to change for one kind of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remedy {
    /// Its section's anchor in [`DOCS`]: the class's name, or the failure's for a check that
    /// fails on its figures alone.
    pub anchor: &'static str,
    /// What to change, in a sentence.
    pub change: &'static str,
}

impl Remedy {
    /// Where the docs explain it: `docs/remedies.md#duplicate`.
    pub fn docs(&self) -> String {
        format!("{DOCS}#{}", self.anchor)
    }
}

/// The remedy of `class`. The match has no catch-all arm, so that a class cannot be added without
/// saying what to change for it.
pub fn for_class(class: Class) -> Remedy {
    let change = match class {
        Class::Duplicate => {
            "record the id and apply the effect in one transaction: INSERT ... ON CONFLICT DO \
             NOTHING, and apply only when a row was inserted"
        }
        Class::SemanticDuplicate => {
            "dedupe on the change, not only the event id: key the effect on the object's id and \
             the change (a unique index on the PaymentIntent's id, say), so that a second event \
             for the same change applies nothing"
        }
        Class::Lost => {
            "acknowledge only after the effect is committed: answer 2xx after the transaction \
             commits, never before or beside it"
        }
        Class::NeverApplied => {
            "accept every valid delivery: verify against each secret in rotation, answer within \
             the timeout, and when the effect fails roll back the recorded id with it so that the \
             retry applies it"
        }
        Class::StaleAccount => {
            "guard the write by version: UPDATE ... WHERE version < $new, so that an older update \
             arriving late changes nothing"
        }
        Class::StaleWrite => {
            "never write a version over a newer one: the same guard, UPDATE ... WHERE version < \
             $new, on the object's own version or timestamp rather than the order of arrival"
        }
        Class::RefusedApplied => {
            "validate before any side effect: check the signature, the timestamp and the body \
             first, and write nothing for a request you answer 4xx"
        }
        Class::NotRefused => {
            "refuse what is not the provider's: verify the signature over the raw body in constant \
             time, reject timestamps outside the tolerance and malformed or oversized bodies, and \
             answer 4xx"
        }
        Class::NotDeadLettered => {
            "keep an event you will never apply: store its id, body and error in a dead-letter \
             table before answering, so that it can be inspected and replayed"
        }
        Class::HeldOpen => {
            "bound the time a request may take to arrive: a read timeout on headers and body, then \
             answer 408 or close the connection"
        }
        Class::IdConflict => {
            "treat one id with two bodies as a conflict, not a new event: keep the first, refuse \
             the second and log it; the sender reusing ids is the bug to find"
        }
        Class::HalfWritten => {
            "write the effect and its evidence (the balance and the ledger row) in one \
             transaction, so that neither commits without the other"
        }
        Class::UnexplainedChange => {
            "credit exactly the amount the event carries, to the account it names, once per \
             apply; if a fee, rounding or a conversion is meant, point the balance query at the \
             amounts as sent (a column that stores them) so that the audit can count the applies"
        }
    };
    Remedy { anchor: class.name(), change }
}

/// The remedies for failures no class names: a check that fails on its figures (latency under
/// the provider's timeout) rather than on an event. A check names its own by anchor
/// ([`Check::unclassed_remedy`]).
pub const UNCLASSED: [Remedy; 2] = [
    Remedy {
        anchor: "too-slow",
        change: "answer within the provider's timeout: verify, record the event and answer 2xx, \
                 then do the work from a queue; a slow answer is retried, and each retry is a \
                 duplicate to dedupe",
    },
    Remedy {
        anchor: "slowed-by-poison",
        change: "refuse an event you can never apply at once and for good (4xx, or 2xx after \
                 dead-lettering it) instead of failing it slowly on every retry",
    },
];

/// Remedies chosen by a witness's case, not its class alone: a class whose witnesses are all of
/// that case (an attempt noted so) gets the case's remedy instead of the class's. A signed body
/// that is not JSON answered 500 is not-refused, and the fix is the parse error's, not the
/// signature's.
pub const BY_CASE: [(Class, &str, Remedy); 1] = [(
    Class::NotRefused,
    MALFORMED_BODY,
    Remedy {
        anchor: "malformed-body",
        change: "catch the body's parse error and answer 400: a signed body that is not the JSON \
                 you expect is the sender's mistake, and a 5xx asks for it again, on every retry",
    },
)];

/// The remedies of `class` given its `witnesses`: a case's where a witness is of it, the class's
/// where a witness is of none (or no witness is named).
fn for_witnessed(class: Class, witnesses: &[&Witness]) -> Vec<Remedy> {
    let of_case = |w: &Witness, note: &str| w.attempts.iter().any(|a| a.note == note);
    let cases: Vec<Remedy> = BY_CASE
        .iter()
        .filter(|(c, note, _)| *c == class && witnesses.iter().any(|w| of_case(w, note)))
        .map(|(_, _, r)| *r)
        .collect();
    let uncased =
        witnesses.iter().any(|w| !BY_CASE.iter().any(|(c, note, _)| *c == class && of_case(w, note)));
    if witnesses.is_empty() || uncased { [vec![for_class(class)], cases].concat() } else { cases }
}

/// What to change for a failing check that found `classes`, shown by `witnesses` (each named
/// `class: problem`): the remedy of each class, or of the witnesses' case where a case has its
/// own ([`BY_CASE`]); the check's own when it found no class.
pub fn for_failure(check: Check, classes: &[Class], witnesses: &[Witness]) -> Vec<Remedy> {
    if classes.is_empty() {
        return for_unclassed(check).into_iter().collect();
    }
    let mut remedies: Vec<Remedy> = Vec::new();
    for &class in classes {
        let prefix = format!("{}: ", class.name());
        let of_class: Vec<&Witness> = witnesses.iter().filter(|w| w.problem.starts_with(&prefix)).collect();
        for r in for_witnessed(class, &of_class) {
            if !remedies.contains(&r) {
                remedies.push(r);
            }
        }
    }
    remedies
}

/// The remedy for `check` failing without a class, if it can. `None`: the check fails only with
/// a class.
pub fn for_unclassed(check: Check) -> Option<Remedy> {
    let anchor = check.unclassed_remedy()?;
    UNCLASSED.iter().find(|r| r.anchor == anchor).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/remedies.md, as committed.
    fn docs() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/remedies.md");
        std::fs::read_to_string(path).expect("docs/remedies.md")
    }

    /// The section of `docs` under the heading whose GitHub anchor is `anchor`, if there is one.
    fn section<'a>(docs: &'a str, anchor: &str) -> Option<&'a str> {
        let mut sections = docs.split("\n## ").skip(1);
        sections.find(|s| super::super::page::slug(s.lines().next().unwrap_or_default()) == anchor)
    }

    fn every_remedy() -> Vec<Remedy> {
        let classed = Class::ALL.iter().map(|&c| for_class(c));
        classed.chain(UNCLASSED).chain(BY_CASE.iter().map(|(_, _, r)| *r)).collect()
    }

    /// A witness of `class` whose one attempt is noted `note`.
    fn witness(class: Class, note: &str) -> Witness {
        let attempt = crate::report::AttemptLog {
            at_ms: 1.0,
            outcome: "500".into(),
            connection: "port 1".into(),
            note: note.into(),
        };
        Witness {
            id: "a_hi_0005".into(),
            problem: format!("{}: not refused", class.name()),
            attempts: vec![attempt],
            observed: String::new(),
        }
    }

    #[test]
    fn a_malformed_body_not_refused_gets_the_parse_errors_remedy_not_the_signatures() {
        let malformed = witness(Class::NotRefused, MALFORMED_BODY);
        let anchors = |w: &[Witness]| -> Vec<&str> {
            for_failure(Check::HostileInput, &[Class::NotRefused], w).iter().map(|r| r.anchor).collect()
        };
        assert_eq!(anchors(std::slice::from_ref(&malformed)), ["malformed-body"]);
        // A stale timestamp let through too: both remedies, the class's first.
        let stale = witness(Class::NotRefused, "timestamp an hour old");
        assert_eq!(anchors(&[malformed.clone(), stale.clone()]), ["not-refused", "malformed-body"]);
        // No malformed witness, or no witness named: the class's alone.
        assert_eq!(anchors(&[stale]), ["not-refused"]);
        assert_eq!(anchors(&[]), ["not-refused"]);
        // The case belongs to its class: a duplicate witnessed on that delivery keeps its own.
        let dup = witness(Class::Duplicate, MALFORMED_BODY);
        let found = for_failure(Check::HostileInput, &[Class::Duplicate], &[dup]);
        assert_eq!(found.iter().map(|r| r.anchor).collect::<Vec<_>>(), ["duplicate"]);
    }

    #[test]
    fn every_class_has_a_remedy_of_its_own_named_by_the_class() {
        let remedies: Vec<Remedy> = Class::ALL.iter().map(|&c| for_class(c)).collect();
        for (r, c) in remedies.iter().zip(Class::ALL) {
            assert_eq!(r.anchor, c.name());
            assert!(!r.change.is_empty(), "{c:?}");
        }
        let changes: std::collections::BTreeSet<&str> = remedies.iter().map(|r| r.change).collect();
        assert_eq!(changes.len(), Class::ALL.len(), "no two classes share a sentence");
    }

    #[test]
    fn every_remedy_has_its_section_in_the_docs_holding_its_sentence() {
        let docs = docs();
        for r in every_remedy() {
            let s = section(&docs, r.anchor).unwrap_or_else(|| panic!("no section #{} in {DOCS}", r.anchor));
            let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(words(s).contains(&words(r.change)), "#{}'s section lacks `{}`", r.anchor, r.change);
            assert_eq!(r.docs(), format!("docs/remedies.md#{}", r.anchor));
        }
        assert!(section(&docs, "no-such-remedy").is_none(), "the lookup can miss");
    }

    #[test]
    fn a_check_that_fails_on_its_figures_alone_has_the_checks_remedy() {
        assert_eq!(
            for_failure(Check::Capacity, &[], &[]).iter().map(|r| r.anchor).collect::<Vec<_>>(),
            ["too-slow"]
        );
        assert_eq!(for_failure(Check::Poison, &[], &[]).len(), 1);
        assert!(for_failure(Check::ConcurrentCopies, &[], &[]).is_empty(), "no class, no remedy to guess");
    }

    #[test]
    fn every_anchor_a_check_names_is_a_remedy() {
        for &c in Check::ALL {
            if let Some(anchor) = c.unclassed_remedy() {
                assert_eq!(for_unclassed(c).map(|r| r.anchor), Some(anchor), "{c:?}");
            }
        }
        assert!(for_unclassed(Check::LostAck).is_none(), "a check without one has none");
    }

    #[test]
    fn a_check_with_classes_has_one_remedy_per_class_in_order_once_each() {
        let found = [Class::Duplicate, Class::Lost, Class::Duplicate];
        let anchors: Vec<&str> = for_failure(Check::Capacity, &found, &[]).iter().map(|r| r.anchor).collect();
        assert_eq!(anchors, ["duplicate", "lost"], "the classes' remedies, not the check's");
    }
}
