//! The judge alone, on tiny histories in the compact notation (`notation.rs`): every class with a
//! case that has it and one that does not, the vacuous cases, and property tests that a clean
//! history never fails while an injected anomaly always does.

use proptest::prelude::*;

use super::notation::{evidence, evidence_of, history};
use super::{Class, Needs, Outcome, Rules, Subject, Verdict, judge};

fn verdict_under(h: &str, e: &str, rules: &Rules) -> Verdict {
    let history = history(h);
    judge(&history, &evidence(e, history.len()), rules)
}

fn verdict(h: &str, e: &str) -> Verdict {
    verdict_under(h, e, &Rules::strict())
}

/// The verdict on `h` of evidence `e` whose per-account aggregates (`balance`, `count`) are
/// decoded against `h`'s credits.
fn verdict_decoded(h: &str, e: &str) -> Verdict {
    let history = history(h);
    judge(&history, &evidence_of(e, &history), &Rules::strict())
}

/// The anomalies found in `h` with aggregates decoded, as [`found`] names them.
fn found_decoded(h: &str, e: &str) -> Vec<String> {
    named(&verdict_decoded(h, e))
}

/// The anomalies found, as `class subject`: `duplicate 0`, `stale-account 7`, `half-written run`.
fn found(h: &str, e: &str) -> Vec<String> {
    named(&verdict(h, e))
}

fn named(v: &Verdict) -> Vec<String> {
    let mut all = Vec::new();
    for (i, classes) in v.events.iter().enumerate() {
        all.extend(classes.iter().map(|c| format!("{} {i}", c.name())));
    }
    for a in &v.accounts {
        all.extend(a.classes.iter().map(|c| format!("{} {}", c.name(), a.account)));
    }
    all.extend(v.run.iter().map(|c| format!("{} run", c.name())));
    all
}

#[test]
fn duplicate() {
    assert_eq!(found("c:a c:a", "applied 0=1 1=2"), ["duplicate 1"]);
    assert_eq!(found("c:a c:a", "applied 0=1 1=1"), Vec::<String>::new());
    // Either observer seeing it twice is enough.
    assert_eq!(found("c:a", "applied[sql] 0=1; applied[sink] 0=2"), ["duplicate 0"]);
    let v = verdict("c:a c:aa", "applied 0=3 1=1");
    assert_eq!((v.tally.count(Class::Duplicate), v.tally.extra_applies), (1, 2));
    assert_eq!(v.witnesses[0].problem, "applied 3 times");
    assert_eq!(v.witnesses[0].observed, "sql: applied 3 times");
}

#[test]
fn an_update_applied_twice_is_a_duplicate() {
    // Observed apart (--update-applied-query), or in the applied query among the credits.
    assert_eq!(found("u7v1:a", "applied; updates 0=2; state 7=1"), ["duplicate 0"]);
    assert_eq!(found("c:a u7v1:a", "applied 0=1 1=2; state 7=1"), ["duplicate 1"]);
    assert_eq!(found("u7v1:a", "applied; updates 0=1; state 7=1"), Vec::<String>::new());
    let v = verdict("u7v1:a", "applied; updates 0=3; state 7=1");
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!((v.tally.count(Class::Duplicate), v.tally.extra_applies), (1, 2));
    assert_eq!(v.witnesses[0].problem, "applied 3 times");
    assert_eq!(v.witnesses[0].observed, "sql: applied 0 times, sql updates: applied 3 times");
}

#[test]
fn a_duplicate_of_updates_alone_is_named_only_where_their_applies_are_observed() {
    let unseen = verdict("u7v1:a", "applied; state 7=1");
    assert_eq!(unseen.counted(Class::Duplicate), None, "not observed");
    let seen = verdict("u7v1:a", "applied; updates 0=1; state 7=1");
    assert_eq!(seen.counted(Class::Duplicate), Some(0));
}

#[test]
fn an_update_acknowledged_and_not_applied_is_no_anomaly() {
    // A version guard skipping the stale version 1: the final state judges it, not its applies.
    let h = "u7v2:a u7v1:a";
    assert_eq!(found(h, "applied; updates 0=1; state 7=2"), Vec::<String>::new());
    assert_eq!(verdict(h, "applied; updates 0=1; state 7=2").outcome, Outcome::Pass);
    // Every update skipped, observed: still judged by the state alone.
    assert_eq!(found(h, "applied; updates; state 7=1"), ["stale-account 7"]);
    // Nothing applied at all, nothing sent: no update is called lost, and nothing passes.
    assert_eq!(found("u7v1:a", "applied; updates"), Vec::<String>::new());
    assert_eq!(verdict("u7v1:a", "applied; updates").outcome, Outcome::Unjudged(vec![Needs::States]));
    assert_eq!(verdict("", "applied; updates").outcome, Outcome::NothingSent);
}

#[test]
fn update_applies_observed_apart_never_lower_a_credits() {
    // The update observer counts no credit: the credit it does not see is not lost.
    assert_eq!(found("c:a u7v1:a", "applied 0=1; updates 1=1; state 7=1"), Vec::<String>::new());
    // And an applied query that counts only credits says nothing of updates.
    let v = verdict("c:a u7v1:a", "applied 0=1; state 7=1");
    assert_eq!(v.outcome, Outcome::Pass);
    assert_eq!(v.tally.applied, 2, "the update by its state");
}

#[test]
fn an_update_counts_as_applied_where_its_applies_are_observed() {
    // Version 1 applied then overwritten by 2: the state alone shows only 2 reached; the
    // update applies show both applied.
    let h = "u7v1:a u7v2:a";
    assert_eq!(verdict(h, "applied; state 7=2").tally.applied, 2, "both at or below the final version");
    assert_eq!(verdict("u7v2:a u7v1:a", "applied; state 7=2").tally.applied, 2);
    assert_eq!(verdict("u7v2:a u7v1:a", "applied; updates 0=1; state 6=0").tally.applied, 1);
}

/// The anomalies found in `h` whose events `pairs` restate one change, under the strict rules.
fn found_paired(h: &str, pairs: &[(usize, usize)], e: &str) -> (Vec<String>, Verdict) {
    let history = history(h).with_twins(pairs);
    let v = judge(&history, &evidence(e, history.len()), &Rules::strict());
    let mut all = Vec::new();
    for (i, classes) in v.events.iter().enumerate() {
        all.extend(classes.iter().map(|c| format!("{} {i}", c.name())));
    }
    (all, v)
}

#[test]
fn a_pair_both_applied_is_a_semantic_duplicate_that_warns() {
    let (found, v) = found_paired("c:a c:a", &[(0, 1)], "applied 0=1 1=1");
    assert_eq!(found, ["semantic-duplicate 1"]);
    assert_eq!(v.outcome, Outcome::Pass, "advisory under the strict rules");
    assert_eq!(v.warning(), [Class::SemanticDuplicate]);
    let w = &v.witnesses[0];
    assert_eq!(w.subject, Subject::Pair(0, 1));
    assert_eq!(
        w.problem,
        "the same change as its pair's first event, both applied: the first 1 times, this 1"
    );
    assert_eq!(
        w.observed,
        "first evt_000000 (1 attempt, 200; sql: applied 1 times), then evt_000001 (1 attempt, 200; sql: applied 1 times)"
    );
    assert_eq!((v.counted(Class::SemanticDuplicate), v.tally.pairs), (Some(1), 1));
    // Failing it, as --strict does.
    let history = history("c:a c:a").with_twins(&[(0, 1)]);
    let strict = Rules { fail: Rules::strict().fail.with(Class::SemanticDuplicate), ..Rules::strict() };
    assert_eq!(judge(&history, &evidence("applied 0=1 1=1", 2), &strict).outcome, Outcome::Fail);
}

#[test]
fn a_pair_with_one_applied_is_no_anomaly_whichever_it_was() {
    for e in ["applied 0=1", "applied 1=1"] {
        let (found, v) = found_paired("c:a c:a", &[(0, 1)], e);
        assert_eq!(found, Vec::<String>::new(), "{e}: the other is not lost");
        assert_eq!(v.outcome, Outcome::Pass, "{e}");
        assert_eq!((v.counted(Class::SemanticDuplicate), v.tally.pairs), (Some(0), 1), "{e}");
    }
    // One of a pair refused, the other applied: the change applied once.
    assert_eq!(found_paired("c:a c:r", &[(0, 1)], "applied 0=1").0, Vec::<String>::new());
}

#[test]
fn a_pair_neither_applied_is_lost_not_a_semantic_duplicate() {
    let (found, v) = found_paired("c:a c:a", &[(0, 1)], "applied");
    assert_eq!(found, ["lost 0", "lost 1"]);
    assert_eq!(v.outcome, Outcome::Fail);
    // Every answer refused: never-applied, never a semantic duplicate.
    let (found, v) = found_paired("c:rr c:r", &[(0, 1)], "applied");
    assert_eq!(found, ["never-applied 0", "never-applied 1"]);
    assert_eq!(v.failing(), [Class::NeverApplied]);
    // Nothing sent: nothing passes.
    assert_eq!(found_paired("", &[(0, 1)], "applied").1.outcome, Outcome::NothingSent);
}

#[test]
fn a_twin_applied_by_one_observer_only_does_not_excuse_the_other() {
    // The sink never saw the first applied: the change is not shown applied by every observer.
    let (found, _) = found_paired("c:a c:a", &[(0, 1)], "applied[sql] 0=1; applied[sink]");
    assert_eq!(found, ["lost 0", "lost 1"]);
}

#[test]
fn a_pair_applied_twice_in_one_event_is_a_duplicate_too() {
    let (found, _) = found_paired("c:a c:a", &[(0, 1)], "applied 0=2 1=1");
    assert_eq!(found, ["duplicate 0", "semantic-duplicate 1"]);
}

#[test]
fn without_pairs_no_semantic_duplicate_is_looked_for_or_named() {
    let v = verdict("c:a c:a", "applied 0=1 1=1");
    assert_eq!(v.outcome, Outcome::Pass);
    assert!(!v.looked_for().contains(&Class::PAIRED), "{:?}", v.looked_for());
    // Pairs out of range or overlapping are left out.
    let h = history("c:a c:a c:a").with_twins(&[(0, 9), (1, 1), (0, 1), (1, 2)]);
    assert_eq!((h.pairs(), h.twin(2)), (1, None));
}

#[test]
fn lost() {
    assert_eq!(found("c:a", "applied"), ["lost 0"]);
    assert_eq!(found("c:ta", "applied 0=1"), Vec::<String>::new());
    // Lost by either observer.
    assert_eq!(found("c:a", "applied[sql] 0=1; applied[sink]"), ["lost 0"]);
    // At most once, acknowledged: applied.
    assert_eq!(found("m:a", "applied"), ["lost 0"]);
    assert_eq!(found("m:r", "applied"), Vec::<String>::new());
}

#[test]
fn never_applied() {
    assert_eq!(found("c:fff", "applied"), ["never-applied 0"]);
    assert_eq!(found("c:ffa", "applied 0=1"), Vec::<String>::new());
    // Applied without a 2xx the sender heard: no anomaly.
    assert_eq!(found("c:t", "applied 0=1"), Vec::<String>::new());
    let v = verdict("c:rr", "applied");
    assert!(v.witnesses[0].problem.contains("refused: 2 attempts, last 400"), "{:?}", v.witnesses);
    // An update: its account never reached its version, and a later one did not supersede it.
    assert_eq!(found("u7v1:f", "applied; state 7=0"), ["never-applied 0"]);
    assert_eq!(found("u7v1:f u7v2:a", "applied; state 7=2"), Vec::<String>::new());
    // Applied, then overwritten by an older version: the change log shows it reached, so it is a
    // stale write and no never-applied; a log that never reached it leaves it never applied.
    let overwritten = "u7v1:a u7v2:t u7v1:a";
    assert_eq!(found(overwritten, "applied; state 7=1; changes 7:0>1 7:1>2 7:2>1"), ["stale-write 7"]);
    assert_eq!(found(overwritten, "applied; state 7=1; changes 7:0>1"), ["never-applied 1"]);
    // A change log kept and empty, or another account's alone, reaches nothing of account 7.
    assert_eq!(found("u7v1:f", "applied; state 7=0; changes"), ["never-applied 0"]);
    assert_eq!(found("u7v1:f", "applied; state 7=0; changes 8:0>1"), ["never-applied 0"]);
    // At most once: not expected applied.
    assert_eq!(found("m:fff", "applied"), Vec::<String>::new());
}

#[test]
fn stale_account() {
    assert_eq!(found("u7v2:a u7v1:a", "applied; state 7=1"), ["stale-account 7"]);
    assert_eq!(found("u7v2:a u7v1:a", "applied; state 7=2"), Vec::<String>::new());
    // Only acknowledged versions count: the receiver refused version 2, and said so.
    assert_eq!(found("u7v1:a u7v2:r", "applied; state 7=1"), ["never-applied 1"]);
    // Not observed without states.
    assert_eq!(found("u7v2:a u7v1:a", "applied"), Vec::<String>::new());
}

#[test]
fn stale_write() {
    let h = "u7v1:a u7v2:a";
    assert_eq!(found(h, "applied; state 7=2; changes 7:0>2 7:2>1 7:1>2"), ["stale-write 7"]);
    assert_eq!(found(h, "applied; state 7=2; changes 7:0>1 7:1>2"), Vec::<String>::new());
    let v = verdict(h, "applied; state 7=2; changes 7:0>2 7:2>1 7:1>2");
    assert_eq!(v.tally.stale_write_changes, 1);
    assert_eq!(v.witnesses[0].problem, "its version went down: 2 -> 1");
}

#[test]
fn refused_and_applied() {
    assert_eq!(found("c:r", "applied 0=1"), ["refused-and-applied 0"]);
    assert_eq!(found("c:ra", "applied 0=1"), Vec::<String>::new(), "acknowledged in the end");
    assert_eq!(found("p:fffff", "applied 0=1"), ["refused-and-applied 0"]);
    assert_eq!(found("p:fffff", "applied"), Vec::<String>::new());
    assert_eq!(found("x:r", "applied 0=1"), ["refused-and-applied 0"]);
    let v = verdict("p:a p:a", "applied 1=2");
    assert_eq!((v.tally.poison, v.tally.poison_applied), (2, 1));
}

#[test]
fn not_refused() {
    assert_eq!(found("x:a", "applied"), ["not-refused 0"]);
    assert_eq!(found("x:f", "applied"), ["not-refused 0"]);
    assert_eq!(found("x:r", "applied"), Vec::<String>::new());
    assert_eq!(found("n:a", "applied"), ["not-refused 0"]);
    assert_eq!(found("n:t", "applied"), Vec::<String>::new());
    assert_eq!(found("n:r", "applied"), Vec::<String>::new());
}

#[test]
fn not_dead_lettered() {
    assert_eq!(found("p:a", "applied; dead"), ["not-dead-lettered 0"]);
    assert_eq!(found("p:a", "applied; dead 0"), Vec::<String>::new());
    assert_eq!(found("p:a", "applied"), Vec::<String>::new(), "no store observed");
}

#[test]
fn held_open() {
    assert_eq!(found("n:h", "applied"), ["held-open 0"]);
    assert_eq!(found("n:t", "applied"), Vec::<String>::new());
}

#[test]
fn id_conflict_warns() {
    assert_eq!(found("c:a", "applied 0=1; conflicts 1"), ["id-conflict run"]);
    assert_eq!(found("c:a", "applied 0=1; conflicts 0"), Vec::<String>::new());
    assert_eq!(verdict("c:a", "applied 0=1; conflicts 1").outcome, Outcome::Pass, "a warning");
}

#[test]
fn half_written() {
    assert_eq!(found("c:a", "applied 0=1; ledger 100/0"), ["half-written run"]);
    assert_eq!(found("c:a", "applied 0=1; ledger 100/100"), Vec::<String>::new());
}

#[test]
fn per_account_aggregates_give_each_credit_its_apply_count() {
    // One account per credit: the first applied once, the second twice, the third never.
    let h = "c1:a c2:aa c3:a";
    assert_eq!(found_decoded(h, "balance 1=100 2=200"), ["duplicate 1", "lost 2"]);
    assert_eq!(found_decoded(h, "count 1=1 2=2"), ["duplicate 1", "lost 2"]);
    assert_eq!(found_decoded(h, "balance 1=100 2=100 3=100"), Vec::<String>::new());
    let v = verdict_decoded(h, "balance 1=100 2=200 3=100");
    assert_eq!(v.witnesses[0].observed, "balance: applied 2 times");
    assert_eq!(v.counted(Class::UnexplainedChange), Some(0));
    // Without an aggregate the class is neither looked for in words nor found.
    assert!(!verdict(h, "applied 0=1 1=1 2=1").looked_for().contains(&Class::UnexplainedChange));
}

#[test]
fn the_scarce_layout_decodes_each_credit_of_a_shared_account() {
    // Place values on account 1 for credits delivered once, twice and once: 100, 200, 600.
    let h = "c1$100:a c1$200:aa c1$600:a";
    assert_eq!(found_decoded(h, "balance 1=900"), Vec::<String>::new());
    assert_eq!(found_decoded(h, "balance 1=1100"), ["duplicate 1"]);
    assert_eq!(found_decoded(h, "balance 1=700"), ["lost 1"]);
}

#[test]
fn a_balance_and_a_count_each_say_what_they_saw() {
    // A handler that reads, adds and writes back: concurrent copies leave the balance at one
    // credit while the effect rows show two.
    let v = verdict_decoded("c1:aa", "balance 1=100; count 1=2");
    assert_eq!(named(&v), ["duplicate 0"]);
    assert_eq!(v.witnesses[0].observed, "balance: applied 1 times, count: applied 2 times");
}

#[test]
fn unexplained_change() {
    let v = verdict_decoded("c1$1500:a", "balance 1=1470");
    assert_eq!(named(&v), ["unexplained-change 1"]);
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(
        v.witnesses[0].problem,
        "balance: the balance moved by +1,470 for a credit of 1,500: not a whole number of its amount"
    );
    assert_eq!(v.witnesses[0].observed, "balance: 1,470 since the audit began");
    assert_eq!(v.counted(Class::UnexplainedChange), Some(1));
    assert_eq!(found_decoded("c1$1500:a", "balance 1=1500"), Vec::<String>::new());
    // More applies than deliveries, a balance that went down, rows that went down.
    assert_eq!(found_decoded("c1:a", "balance 1=300"), ["unexplained-change 1"]);
    assert_eq!(found_decoded("c1:a", "balance 1=-100"), ["unexplained-change 1"]);
    assert_eq!(found_decoded("c1:a", "count 1=-1"), ["unexplained-change 1"]);
    // A change on an account nothing was sent to; none on one that only took updates.
    assert_eq!(found_decoded("c1:a", "balance 1=100 9=50"), ["unexplained-change 9"]);
    assert_eq!(found_decoded("u5v1:a c1:a", "balance 1=100 5=40; state 5=1"), Vec::<String>::new());
}

#[test]
fn an_aggregate_that_cannot_say_which_credit_it_saw_is_no_evidence() {
    // Two credits of one amount to one account, one of them applied: which, no one can say.
    let v = verdict_decoded("c1:a c1:a", "balance 1=100");
    assert_eq!(named(&v), Vec::<String>::new());
    assert_eq!(v.outcome, Outcome::Unjudged(vec![Needs::Applies]));
    assert_eq!(v.witnesses.len(), 0);
    // Beside an observer that names events, that observer judges them.
    assert_eq!(verdict_decoded("c1:a c1:a", "applied 0=1 1=1; balance 1=100").outcome, Outcome::Pass);
    // A poison credit the aggregate cannot count cannot pass either.
    assert_eq!(
        verdict_decoded("p1:r p1:r", "balance 1=100").outcome,
        Outcome::Unjudged(vec![Needs::Applies])
    );
}

#[test]
fn aggregates_that_saw_nothing_fail_as_an_applied_query_would() {
    // Nothing applied, and an empty aggregate (no rows): every acknowledged credit lost.
    let v = verdict_decoded("c1:a c2:a", "balance");
    assert_eq!(named(&v), ["lost 0", "lost 1"]);
    assert_eq!(v.outcome, Outcome::Fail);
    // Every answer refused: never applied.
    let v = verdict_decoded("c1:r c2:rr", "count");
    assert_eq!(v.failing(), [Class::NeverApplied]);
    // Nothing sent.
    assert_eq!(verdict_decoded("", "balance").outcome, Outcome::NothingSent);
}

#[test]
fn nothing_sent_never_passes() {
    assert_eq!(verdict("", "applied").outcome, Outcome::NothingSent);
}

#[test]
fn nothing_applied_fails() {
    let v = verdict("c:a c:a c:fff", "applied");
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!((v.tally.count(Class::Lost), v.tally.count(Class::NeverApplied)), (2, 1));
    let t = &v.tally;
    assert_eq!((t.events, t.attempts, t.acked, t.applied), (3, 5, 2, 0));
}

#[test]
fn every_answer_refused_fails() {
    let v = verdict("c:r c:r c:rr", "applied");
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(v.failing(), [Class::NeverApplied]);
    assert_eq!((v.tally.acked, v.tally.applied), (0, 0));
    assert_eq!(v.counted(Class::NeverApplied), Some(3));
}

#[test]
fn an_empty_state_observation_is_zero_accounts_observed() {
    let v = verdict("u7v1:a u8v1:a", "applied; state");
    assert_eq!(v.failing(), [Class::StaleAccount]);
    assert_eq!(
        (v.counted(Class::StaleAccount), v.tally.accounts_observed, v.tally.accounts),
        (Some(2), Some(0), 2)
    );
    // An update whose account's state is not observed cannot pass: nothing shows it applied.
    let unobserved = verdict("c:a u7v1:a", "applied 0=1");
    assert_eq!(unobserved.counted(Class::StaleAccount), None);
    assert_eq!(unobserved.tally.unobserved, 1, "1 event expected applied not observed");
    assert_eq!(unobserved.outcome, Outcome::Unjudged(vec![Needs::States]));
}

#[test]
fn required_evidence_not_observed_is_not_a_pass() {
    assert_eq!(verdict("c:a", "").outcome, Outcome::Unjudged(vec![Needs::Applies]));
    // Evidence of every event expected once, whatever the rules require.
    let only_states = Rules::strict().requiring(&[]);
    assert_eq!(verdict_under("c:a", "state", &only_states).outcome, Outcome::Unjudged(vec![Needs::Applies]));
    let rules = Rules::strict().requiring(&[Needs::States]);
    assert_eq!(verdict_under("u7v1:a", "", &rules).outcome, Outcome::Unjudged(vec![Needs::States]));
    assert_eq!(verdict_under("u7v1:a", "state 7=1", &rules).outcome, Outcome::Pass);
}

#[test]
fn a_clean_history_passes_and_says_what_it_saw() {
    let v = verdict("c:a c:ta u3v1:a u3v2:fa", "applied 0=1 1=1 ?=4; state 3=2");
    assert_eq!(v.outcome, Outcome::Pass, "{v:?}");
    assert!(v.exactly_once() && v.latest_state());
    assert_eq!(v.tally.unknown_applies, 4);
    let counted: Vec<(Class, Option<u64>)> = v.looked_for().into_iter().map(|c| (c, v.counted(c))).collect();
    let not_observed = [Class::StaleWrite, Class::NotDeadLettered, Class::IdConflict, Class::HalfWritten];
    for (c, n) in counted {
        assert_eq!(n, (!not_observed.contains(&c)).then_some(0), "{c:?}");
    }
}

#[test]
fn ignored_classes_are_not_looked_for() {
    let rules = Rules::strict().ignoring(Class::Duplicate);
    assert_eq!(verdict_under("c:a", "applied 0=2", &rules).outcome, Outcome::Pass);
}

#[test]
fn exactly_once_needs_the_ledger_to_add_up() {
    assert!(verdict("c:a c:a", "applied 0=1 1=1; ledger 200/200").exactly_once());
    assert!(!verdict("c:a c:a", "applied 0=1 1=1; ledger 300/300").exactly_once());
}

#[test]
fn witnesses_are_bounded_and_name_their_subject() {
    let h = vec!["c:a"; 20].join(" ");
    let v = verdict(&h, "applied");
    assert_eq!(v.tally.count(Class::Lost), 20);
    assert_eq!(v.witnesses.len(), 5);
    assert_eq!(v.witnesses[0].subject, Subject::Event(0));
}

#[test]
fn workload_ids_map_back_only_as_the_sender_spelled_them() {
    let h = history("c:a c:a");
    assert_eq!(h.id(1), "evt_000001");
    assert_eq!(h.index("evt_000001"), Some(1));
    assert_eq!(h.index("evt_1"), None);
    assert_eq!(h.index("evt_000002"), None, "beyond the history");
    assert_eq!(h.index("msg_1"), None);
}

#[test]
fn every_class_has_a_definition_and_a_distinct_name() {
    let names: std::collections::BTreeSet<&str> = Class::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(names.len(), Class::ALL.len());
    for c in Class::ALL {
        assert!(c.definition().len() > 30, "{c:?}: {}", c.definition());
    }
}

/// A clean history: credits and updates over a few accounts, each event's answers ending in an
/// acknowledgement after any failures, and evidence of each credit applied once and each account
/// on its latest version.
fn clean() -> impl Strategy<Value = (String, String)> {
    let event = (any::<bool>(), 0..3i64, "[ft]{0,3}");
    proptest::collection::vec(event, 1..30).prop_map(|events| {
        let mut versions = std::collections::BTreeMap::new();
        let (mut h, mut applied) = (Vec::new(), Vec::new());
        for (i, (credit, account, failures)) in events.into_iter().enumerate() {
            if credit {
                h.push(format!("c{account}:{failures}a"));
                applied.push(format!("{i}=1"));
            } else {
                let v = versions.entry(account).or_insert(0);
                *v += 1;
                h.push(format!("u{account}v{v}:{failures}a"));
            }
        }
        let state: Vec<String> = versions.iter().map(|(a, v)| format!("{a}={v}")).collect();
        (h.join(" "), format!("applied {}; state {}", applied.join(" "), state.join(" ")))
    })
}

/// A history of pairs, its pairs, its evidence, and which of each pair's events applied.
type Paired = (String, Vec<(usize, usize)>, String, Vec<(bool, bool)>);

/// Pairs of credits, each pair's events acknowledged, applied as each pair's two bits say.
fn pairs() -> impl Strategy<Value = Paired> {
    proptest::collection::vec((any::<bool>(), any::<bool>()), 1..10).prop_map(|applied| {
        let h = vec!["c:a c:a"; applied.len()].join(" ");
        let pairs = (0..applied.len()).map(|p| (2 * p, 2 * p + 1)).collect();
        let counts: Vec<String> = applied
            .iter()
            .enumerate()
            .flat_map(|(p, &(a, b))| [(2 * p, a), (2 * p + 1, b)])
            .filter(|&(_, on)| on)
            .map(|(i, _)| format!("{i}=1"))
            .collect();
        (h, pairs, format!("applied {}", counts.join(" ")), applied)
    })
}

/// Credits, each to an account of its own (account `i + 1`), each acknowledged after any
/// failures, and the balance each account shows when each was applied once.
fn clean_on_own_accounts() -> impl Strategy<Value = (String, Vec<(i64, i64)>)> {
    proptest::collection::vec((1i64..5_000, "[ft]{0,3}"), 1..20).prop_map(|credits| {
        let h: Vec<String> =
            credits.iter().enumerate().map(|(i, (amount, f))| format!("c{}${amount}:{f}a", i + 1)).collect();
        let balances = credits.iter().enumerate().map(|(i, &(amount, _))| (i as i64 + 1, amount)).collect();
        (h.join(" "), balances)
    })
}

fn balances(b: &[(i64, i64)]) -> String {
    let each: Vec<String> = b.iter().map(|(a, v)| format!("{a}={v}")).collect();
    format!("balance {}", each.join(" "))
}

proptest! {
    #[test]
    fn a_clean_history_never_fails_on_balances((h, b) in clean_on_own_accounts()) {
        let v = verdict_decoded(&h, &balances(&b));
        prop_assert_eq!(&v.outcome, &Outcome::Pass, "{}: {:?}", h, v.tally);
    }

    #[test]
    fn an_injected_double_apply_on_a_balance_always_fails(
        (h, mut b) in clean_on_own_accounts(),
        pick in any::<prop::sample::Index>(),
    ) {
        let i = pick.index(b.len());
        b[i].1 *= 2;
        let v = verdict_decoded(&h, &balances(&b));
        prop_assert_eq!(&v.outcome, &Outcome::Fail);
        // Delivered once, applied twice: more applies than deliveries (an unexplained change);
        // delivered more often, a duplicate.
        prop_assert!(v.events[i].contains(Class::Duplicate) || !v.accounts.is_empty(), "{} / {:?}", h, b);
    }

    #[test]
    fn a_pair_is_judged_by_how_many_of_its_events_applied((h, p, e, applied) in pairs()) {
        let (found, v) = found_paired(&h, &p, &e);
        let both = applied.iter().filter(|&&(a, b)| a && b).count() as u64;
        let neither = applied.iter().filter(|&&(a, b)| !a && !b).count() as u64;
        prop_assert_eq!(v.tally.count(Class::SemanticDuplicate), both, "{:?}", found);
        prop_assert_eq!(v.tally.count(Class::Lost), 2 * neither, "{:?}", found);
        let expected = if neither > 0 { Outcome::Fail } else { Outcome::Pass };
        prop_assert_eq!(&v.outcome, &expected, "{:?}", found);
    }

    #[test]
    fn a_clean_history_never_fails((h, e) in clean()) {
        let v = verdict(&h, &e);
        prop_assert_eq!(&v.outcome, &Outcome::Pass, "{} / {}: {:?}", h, e, v.tally);
    }

    #[test]
    fn an_injected_duplicate_always_fails((h, e) in clean(), pick in any::<prop::sample::Index>()) {
        let credits: Vec<usize> = h.split_whitespace().enumerate().filter(|(_, s)| s.starts_with('c')).map(|(i, _)| i).collect();
        prop_assume!(!credits.is_empty());
        let i = credits[pick.index(credits.len())];
        let e = e.replacen(&format!(" {i}=1"), &format!(" {i}=2"), 1);
        let v = verdict(&h, &e);
        prop_assert_eq!(&v.outcome, &Outcome::Fail);
        prop_assert!(v.events[i].contains(Class::Duplicate), "{} / {}", h, e);
    }

    #[test]
    fn an_injected_update_duplicate_always_fails_and_a_skipped_update_never_does(
        (h, e) in clean(),
        pick in any::<prop::sample::Index>(),
    ) {
        let updates: Vec<usize> = h.split_whitespace().enumerate().filter(|(_, s)| s.starts_with('u')).map(|(i, _)| i).collect();
        prop_assume!(!updates.is_empty());
        let i = updates[pick.index(updates.len())];
        let twice = verdict(&h, &format!("{e}; updates {i}=2"));
        prop_assert_eq!(&twice.outcome, &Outcome::Fail);
        prop_assert!(twice.events[i].contains(Class::Duplicate), "{} / {}", h, e);
        // Observed and applied no time (a version guard skipped it): never an anomaly.
        let skipped = verdict(&h, &format!("{e}; updates"));
        prop_assert_eq!(&skipped.outcome, &Outcome::Pass, "{:?}", skipped.tally);
    }

    #[test]
    fn an_injected_stale_account_always_fails((h, e) in clean()) {
        let updated: Vec<String> = h.split_whitespace().filter(|s| s.starts_with('u'))
            .map(|s| s[1..].split('v').next().unwrap_or_default().to_string()).collect();
        prop_assume!(!updated.is_empty());
        let (_, state) = e.split_once("; state ").unwrap_or_default();
        let account = &updated[0];
        let lowered: Vec<String> = state.split_whitespace().map(|kv| match kv.split_once('=') {
            Some((a, v)) if a == account => format!("{a}={}", v.parse::<i64>().unwrap_or(1) - 1),
            _ => kv.to_string(),
        }).collect();
        let e = format!("{}; state {}", e.split("; state").next().unwrap_or_default(), lowered.join(" "));
        let v = verdict(&h, &e);
        prop_assert_eq!(&v.outcome, &Outcome::Fail, "{} / {}", h, e);
    }
}
