//! A verdict in words: the one line of evidence each bench cell and audit check reports. The
//! judge decides what was counted ([`Verdict::counted`]) and which classes a run could have
//! ([`Verdict::looked_for`]); this only says it.

use crate::judge::{Class, Outcome, Verdict};

/// The verdict's evidence in one line: what was sent, acknowledged and applied, and each class
/// the check looks for (its count, or that it was not observed).
pub fn summary(v: &Verdict) -> String {
    let t = &v.tally;
    if v.outcome == Outcome::NothingSent {
        return "nothing was sent".to_string();
    }
    let classes: Vec<String> = v.looked_for().into_iter().map(|c| class_words(v, c)).collect();
    let mut line = format!(
        "{} events, {} deliveries: {} of {} acknowledged, {} applied; {}",
        t.events,
        t.attempts,
        t.acked,
        t.events,
        t.applied,
        classes.join(", ")
    );
    if let Outcome::Unjudged(missing) = &v.outcome {
        let names: Vec<&str> = missing.iter().map(|n| n.name()).collect();
        line.push_str(&format!("; not judged: {} not observed", names.join(", ")));
    }
    line
}

/// What a class's count means here: the count with what it is out of, or that it could not be
/// counted.
fn class_words(v: &Verdict, class: Class) -> String {
    let t = &v.tally;
    let name = class.name();
    let Some(n) = v.counted(class) else { return format!("{name} not observed") };
    match class {
        Class::NeverApplied if t.unobserved > 0 => {
            format!("{n} {name} ({} events expected applied not observed)", t.unobserved)
        }
        Class::StaleAccount => {
            let of = t.accounts_observed.unwrap_or(0);
            format!("{n} {name} ({of} of {} accounts observed)", t.accounts)
        }
        Class::Duplicate if n > 0 => format!("{n} {name} ({} extra applies)", t.extra_applies),
        c if c == Class::PAIRED => format!("{n} {name} (of {} pairs)", t.pairs),
        _ => format!("{n} {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::notation::{evidence, evidence_of, history};
    use crate::judge::{Rules, judge};

    fn verdict(h: &str, e: &str) -> Verdict {
        let history = history(h);
        judge(&history, &evidence(e, history.len()), &Rules::strict())
    }

    fn paired(h: &str, pairs: &[(usize, usize)], e: &str) -> Verdict {
        let history = history(h).with_twins(pairs);
        judge(&history, &evidence(e, history.len()), &Rules::strict())
    }

    #[test]
    fn a_clean_history_says_what_it_saw() {
        let v = verdict("c:a c:ta u3v1:a u3v2:fa", "applied 0=1 1=1 ?=4; state 3=2");
        assert_eq!(
            summary(&v),
            "4 events, 6 deliveries: 4 of 4 acknowledged, 4 applied; 0 duplicate, 0 lost, 0 never-applied, \
             0 stale-account (1 of 1 accounts observed), stale-write not observed, 0 refused-and-applied, \
             0 not-refused, not-dead-lettered not observed, 0 held-open, id-conflict not observed, \
             half-written not observed"
        );
    }

    #[test]
    fn nothing_sent_is_said() {
        assert_eq!(summary(&verdict("", "applied; state")), "nothing was sent");
    }

    #[test]
    fn sent_acknowledged_and_applied_lead_the_line() {
        let v = verdict("c:a c:a c:fff", "applied");
        assert!(
            summary(&v).starts_with("3 events, 5 deliveries: 2 of 3 acknowledged, 0 applied"),
            "{}",
            summary(&v)
        );
        let refused = verdict("c:r c:r c:rr", "applied");
        assert!(summary(&refused).contains("0 of 3 acknowledged, 0 applied"), "{}", summary(&refused));
        assert!(summary(&refused).contains("3 never-applied"), "{}", summary(&refused));
    }

    #[test]
    fn each_class_says_what_its_count_is_out_of() {
        let v = verdict("u7v1:a u8v1:a", "applied; state");
        assert!(summary(&v).contains("2 stale-account (0 of 2 accounts observed)"), "{}", summary(&v));
        let unobserved = verdict("c:a u7v1:a", "applied 0=1");
        let words = summary(&unobserved);
        assert!(words.contains("stale-account not observed"), "{words}");
        assert!(words.contains("1 events expected applied not observed"), "{words}");
        let doubled = verdict("c:a", "applied 0=3");
        assert!(summary(&doubled).contains("1 duplicate (2 extra applies)"), "{}", summary(&doubled));
        let pair = paired("c:a c:a", &[(0, 1)], "applied 0=1 1=1");
        assert!(summary(&pair).contains("1 semantic-duplicate (of 1 pairs)"), "{}", summary(&pair));
        let once = paired("c:a c:a", &[(0, 1)], "applied 0=1");
        assert!(summary(&once).contains("0 semantic-duplicate (of 1 pairs)"), "{}", summary(&once));
    }

    #[test]
    fn a_class_the_run_could_not_have_is_not_named() {
        let unpaired = summary(&verdict("c:a c:a", "applied 0=1 1=1"));
        assert!(!unpaired.contains("semantic"), "{unpaired}");
        assert!(!unpaired.contains("unexplained"), "{unpaired}");
        let h = history("c1$1500:a");
        let decoded = judge(&h, &evidence_of("balance 1=1500", &h), &Rules::strict());
        assert!(summary(&decoded).contains("0 unexplained-change"), "{}", summary(&decoded));
    }

    #[test]
    fn an_unjudged_verdict_says_what_was_missing() {
        let words = summary(&verdict("c:a", ""));
        assert!(words.ends_with("not judged: applies not observed"), "{words}");
    }
}
