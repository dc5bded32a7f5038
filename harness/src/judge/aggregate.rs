//! Per-account aggregates as evidence of applies: a balance (the sum of the amounts a receiver
//! credited to each account, `--balance-query`) or a count of effect rows (`--count-query`).
//!
//! Most handlers key their effects by ids of their own (a balance column, an `orders` row), so no
//! table but their dedupe bookkeeping holds the provider's event id, and that table holds one row
//! per event however often the effect ran: it proves nothing. An account's aggregate moves with
//! the effect itself. The run lays its credits out so that the move says how many times each
//! credit was applied: one account per credit (its change divided by what one apply adds), or,
//! where accounts are scarce, amounts that are place values ([`place_values`]) no other
//! combination of apply counts can imitate. [`decode`] reads one account's change as the apply
//! count of each credit sent to it, [`CreditBook::resolve`] every account a run credited.
//!
//! A change that no apply counts explain (not a whole number of the credit's amount, more applies
//! than deliveries, a balance that went down, a change on an account the run sent nothing to) is
//! an [unexplained change](super::Class::UnexplainedChange); a change that several apply counts
//! explain is no evidence either way, and its credits stay unobserved.

use std::collections::{BTreeMap, BTreeSet};

/// What an aggregate adds up per account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measure {
    /// The sum of the amounts credited (`--balance-query`): an apply of a credit adds its amount.
    Balance,
    /// How many effect rows (`--count-query`): an apply of a credit adds one.
    Rows,
}

impl Measure {
    /// Its name, as the observer that reads it is called in evidence lines.
    pub fn name(self) -> &'static str {
        match self {
            Self::Balance => "balance",
            Self::Rows => "count",
        }
    }

    /// What one apply of a credit of `amount` adds to the aggregate.
    pub fn unit(self, amount: i64) -> i128 {
        match self {
            Self::Balance => i128::from(amount),
            Self::Rows => 1,
        }
    }

    /// The aggregate in words, as a sentence's subject.
    fn subject(self) -> &'static str {
        match self {
            Self::Balance => "the balance",
            Self::Rows => "its count of effect rows",
        }
    }
}

/// One credit as the decoder sees it: its amount and how many times it reached the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credited {
    /// The amount it carried.
    pub amount: i64,
    /// Its attempts (copies included): the most times it can have been applied.
    pub attempts: u32,
}

/// Why an account's change could not be read as apply counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undecoded {
    /// No apply counts, each at most its credit's attempts, add up to the change.
    Unexplained(String),
    /// Several do: the change cannot say which credit was applied, so it is no evidence either way.
    Ambiguous,
}

/// The most combinations of apply counts tried for an account whose amounts are not place values.
const MOST_TRIED: u128 = 100_000;

/// Each credit's apply count, in `credits`' order, on an account whose `measure` moved by `change`
/// since the baseline: the one set of counts, each at most its credit's attempts, that adds up to
/// the change. A credit applied `c` times adds `c` times [`Measure::unit`] of its amount.
///
/// When the units are place values (each larger than all smaller ones applied as often as they
/// were delivered, as [`place_values`] makes them and as one credit alone is) the counts are read
/// off from the largest down and are the only ones; otherwise every combination is tried, up to
/// [`MOST_TRIED`] of them, and more than one answer is [`Undecoded::Ambiguous`].
pub fn decode(measure: Measure, credits: &[Credited], change: i64) -> Result<Vec<u32>, Undecoded> {
    let change = i128::from(change);
    let units: Vec<i128> = credits.iter().map(|c| measure.unit(c.amount)).collect();
    let what = measure.subject();
    if credits.is_empty() {
        return if change == 0 {
            Ok(Vec::new())
        } else {
            Err(Undecoded::Unexplained(format!(
                "{what} moved by {}, though the run sent no credit to the account",
                signed(change)
            )))
        };
    }
    if units.iter().all(|&u| u > 0) {
        if change < 0 {
            return Err(Undecoded::Unexplained(format!(
                "{what} went down by {}: an apply of a credit never takes anything away",
                grouped(-change)
            )));
        }
        if let Some(order) = place_order(&units, credits) {
            return read_off(measure, credits, &units, &order, change);
        }
    }
    try_every(measure, credits, &units, change)
}

/// The credits' indices from the largest unit down, when each unit is larger than every smaller
/// one applied as many times as it was delivered (so the counts can be read off).
fn place_order(units: &[i128], credits: &[Credited]) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| units[i]);
    let mut below: i128 = 0;
    for &i in &order {
        if units[i] <= below {
            return None;
        }
        below = below.checked_add(units[i].checked_mul(i128::from(credits[i].attempts))?)?;
    }
    order.reverse();
    Some(order)
}

/// The counts read off `change` from the largest place down (`order`).
fn read_off(
    measure: Measure,
    credits: &[Credited],
    units: &[i128],
    order: &[usize],
    change: i128,
) -> Result<Vec<u32>, Undecoded> {
    let what = measure.subject();
    let mut counts = vec![0u32; credits.len()];
    let mut rest = change;
    for &i in order {
        let times = rest / units[i];
        if times > i128::from(credits[i].attempts) {
            let one = credits.len() == 1;
            let credit = if one { "the credit" } else { "its credit" };
            let applied = match measure {
                Measure::Balance => {
                    format!("{} applies of {credit} of {}", grouped(times), grouped(units[i]))
                }
                Measure::Rows => format!("{} applies of {credit}", grouped(times)),
            };
            return Err(Undecoded::Unexplained(format!(
                "{what} moved by {}: {applied}, though it reached the receiver {} times",
                signed(change),
                credits[i].attempts
            )));
        }
        counts[i] = u32::try_from(times).unwrap_or(u32::MAX);
        rest -= times * units[i];
    }
    if rest == 0 {
        return Ok(counts);
    }
    Err(Undecoded::Unexplained(match (measure, credits) {
        (Measure::Balance, [one]) => format!(
            "{what} moved by {} for a credit of {}: not a whole number of its amount",
            signed(change),
            grouped(i128::from(one.amount))
        ),
        _ => format!(
            "{what} moved by {}, which no number of applies of its credits ({}) adds up to",
            signed(change),
            listed(measure, credits)
        ),
    }))
}

/// Every combination of counts up to each credit's attempts, when there are few enough.
fn try_every(
    measure: Measure,
    credits: &[Credited],
    units: &[i128],
    change: i128,
) -> Result<Vec<u32>, Undecoded> {
    let combinations = credits
        .iter()
        .try_fold(1u128, |n, c| n.checked_mul(u128::from(c.attempts) + 1))
        .filter(|&n| n <= MOST_TRIED)
        .ok_or(Undecoded::Ambiguous)?;
    let mut found: Option<Vec<u32>> = None;
    let mut counts = vec![0u32; credits.len()];
    for _ in 0..combinations {
        let sum: i128 = counts.iter().zip(units).map(|(&c, &u)| i128::from(c) * u).sum();
        if sum == change {
            if found.is_some() {
                return Err(Undecoded::Ambiguous);
            }
            found = Some(counts.clone());
        }
        // The next combination, as an odometer whose wheel `i` runs 0..=attempts.
        for (count, credit) in counts.iter_mut().zip(credits) {
            if *count < credit.attempts {
                *count += 1;
                break;
            }
            *count = 0;
        }
    }
    found.ok_or_else(|| {
        Undecoded::Unexplained(format!(
            "{} moved by {}, which no number of applies of its credits ({}) adds up to",
            measure.subject(),
            signed(change),
            listed(measure, credits)
        ))
    })
}

/// The amounts of `n` credits sent to one account, from `unit` up, each `reach[i]` is the most
/// times credit `i` can reach the receiver: place values, each one more than every smaller one
/// applied as often as it can be (`unit`, then `unit * (reach[0] + 1)`, ...), so that any apply
/// counts within the reaches add up to a different change. `None` when one would pass `most`.
pub fn place_values(unit: i64, reach: &[u32], most: i64) -> Option<Vec<i64>> {
    let mut amounts = Vec::with_capacity(reach.len());
    let mut next = i128::from(unit);
    for &r in reach {
        let amount = i64::try_from(next).ok().filter(|&a| a <= most && a > 0)?;
        amounts.push(amount);
        next = next.checked_mul(i128::from(r) + 1)?;
    }
    Some(amounts)
}

/// Each account's change from `before` to `after` (an account absent from either holds 0).
pub fn changes(before: &BTreeMap<i64, i64>, after: &BTreeMap<i64, i64>) -> BTreeMap<i64, i64> {
    let accounts: BTreeSet<i64> = before.keys().chain(after.keys()).copied().collect();
    accounts
        .into_iter()
        .filter_map(|a| {
            let (b, n) = (before.get(&a).copied().unwrap_or(0), after.get(&a).copied().unwrap_or(0));
            let change = i64::try_from(i128::from(n) - i128::from(b)).unwrap_or(i64::MAX);
            (change != 0).then_some((a, change))
        })
        .collect()
}

/// One account whose change no apply counts explain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unexplained {
    /// The aggregate that saw it (`balance`, `count`).
    pub observer: String,
    /// The account.
    pub account: i64,
    /// The change, since the baseline.
    pub change: i64,
    /// What is wrong, with the numbers.
    pub problem: String,
    /// Whether the run sent anything (a credit or an update) to the account.
    pub named: bool,
}

/// What a run's aggregates say of its credits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Each credit's apply count, by id, where its account's change decodes.
    pub counts: Vec<(String, u32)>,
    /// Credits whose account's change several counts explain, or whose account is not observed.
    pub undecoded: Vec<String>,
    /// Accounts whose change no counts explain.
    pub unexplained: Vec<Unexplained>,
}

/// Every credit a run sent, by account, and the accounts it sent updates to: what its aggregates
/// are decoded against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreditBook {
    accounts: BTreeMap<i64, Vec<(String, Credited)>>,
    updated: BTreeSet<i64>,
}

impl CreditBook {
    /// Credit `id` of `amount` to `account` reached the receiver `attempts` more times (a credit
    /// sent again, by a late replay, adds its attempts to its first sending's).
    pub fn credit(&mut self, id: &str, account: i64, amount: i64, attempts: u32) {
        let credits = self.accounts.entry(account).or_default();
        match credits.iter_mut().find(|(known, _)| known == id) {
            Some((_, c)) => c.attempts = c.attempts.saturating_add(attempts),
            None => credits.push((id.to_string(), Credited { amount, attempts })),
        }
    }

    /// `account`'s aggregate is not judged, nor is a change there unexplained: the run sent it an
    /// update (which moves no balance) or credits of a load that judges no applies (the capacity
    /// ramp).
    pub fn unjudged(&mut self, account: i64) {
        self.updated.insert(account);
    }

    /// Whether the run sent anything to `account`.
    pub fn names(&self, account: i64) -> bool {
        self.accounts.contains_key(&account) || self.updated.contains(&account)
    }

    /// Every credit's apply count as `measure`'s `changes` say, read only on accounts `observed`
    /// (a credit to an account the aggregate does not read is undecoded, never applied no time);
    /// and every observed account whose change no counts explain, the run's or not.
    pub fn resolve(
        &self,
        observer: &str,
        measure: Measure,
        changes: &BTreeMap<i64, i64>,
        observed: &dyn Fn(i64) -> bool,
    ) -> Resolved {
        let mut r = Resolved::default();
        for (&account, credits) in &self.accounts {
            let ids = credits.iter().map(|(id, _)| id.clone());
            if !observed(account) {
                r.undecoded.extend(ids);
                continue;
            }
            let change = changes.get(&account).copied().unwrap_or(0);
            let sent: Vec<Credited> = credits.iter().map(|(_, c)| *c).collect();
            match decode(measure, &sent, change) {
                Ok(counts) => r.counts.extend(ids.zip(counts)),
                Err(Undecoded::Ambiguous) => r.undecoded.extend(ids),
                Err(Undecoded::Unexplained(problem)) => {
                    r.undecoded.extend(ids);
                    r.unexplained.push(Unexplained {
                        observer: observer.to_string(),
                        account,
                        change,
                        problem,
                        named: true,
                    });
                }
            }
        }
        let stray = changes.iter().filter(|&(&a, _)| observed(a) && !self.names(a));
        for (&account, &change) in stray {
            if let Err(Undecoded::Unexplained(problem)) = decode(measure, &[], change) {
                let observer = observer.to_string();
                r.unexplained.push(Unexplained { observer, account, change, problem, named: false });
            }
        }
        r
    }
}

/// `n` with its thousands grouped: `1,470`.
pub fn grouped(n: i128) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// A change with its sign: `+1,470`, `-30`.
fn signed(n: i128) -> String {
    if n > 0 { format!("+{}", grouped(n)) } else { grouped(n) }
}

/// An account's credits in words: `1,500 delivered twice, 3,000 delivered once`.
fn listed(measure: Measure, credits: &[Credited]) -> String {
    credits
        .iter()
        .map(|c| {
            let times = match c.attempts {
                1 => "once".to_string(),
                2 => "twice".to_string(),
                n => format!("{n} times"),
            };
            match measure {
                Measure::Balance => format!("{} delivered {times}", grouped(i128::from(c.amount))),
                Measure::Rows => format!("one delivered {times}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn credits(list: &[(i64, u32)]) -> Vec<Credited> {
        list.iter().map(|&(amount, attempts)| Credited { amount, attempts }).collect()
    }

    fn unexplained(r: Result<Vec<u32>, Undecoded>) -> String {
        match r {
            Err(Undecoded::Unexplained(why)) => why,
            other => panic!("not unexplained: {other:?}"),
        }
    }

    #[test]
    fn one_credit_per_account_reads_its_change_as_its_count() {
        let one = credits(&[(1_500, 3)]);
        assert_eq!(decode(Measure::Balance, &one, 0), Ok(vec![0]));
        assert_eq!(decode(Measure::Balance, &one, 1_500), Ok(vec![1]));
        assert_eq!(decode(Measure::Balance, &one, 4_500), Ok(vec![3]));
        assert_eq!(decode(Measure::Rows, &one, 2), Ok(vec![2]));
        assert_eq!(decode(Measure::Rows, &one, 0), Ok(vec![0]));
    }

    #[test]
    fn a_change_no_counts_explain_says_why_with_the_numbers() {
        let one = credits(&[(1_500, 2)]);
        assert_eq!(
            unexplained(decode(Measure::Balance, &one, 1_470)),
            "the balance moved by +1,470 for a credit of 1,500: not a whole number of its amount"
        );
        assert_eq!(
            unexplained(decode(Measure::Balance, &one, 4_500)),
            "the balance moved by +4,500: 3 applies of the credit of 1,500, though it reached the receiver 2 times"
        );
        assert_eq!(
            unexplained(decode(Measure::Balance, &one, -30)),
            "the balance went down by 30: an apply of a credit never takes anything away"
        );
        assert_eq!(
            unexplained(decode(Measure::Rows, &one, 3)),
            "its count of effect rows moved by +3: 3 applies of the credit, though it reached the receiver 2 times"
        );
        assert_eq!(
            unexplained(decode(Measure::Rows, &[], 1)),
            "its count of effect rows moved by +1, though the run sent no credit to the account"
        );
        assert_eq!(decode(Measure::Balance, &[], 0), Ok(Vec::new()), "nothing sent, nothing moved");
    }

    #[test]
    fn place_values_decode_and_a_digit_above_the_attempts_is_unexplained() {
        let amounts = place_values(100, &[2, 3, 1], 1_000_000).expect("fits");
        assert_eq!(amounts, [100, 300, 1_200]);
        let sent = credits(&[(100, 2), (300, 3), (1_200, 1)]);
        assert_eq!(decode(Measure::Balance, &sent, 100 * 2 + 300 * 3 + 1_200), Ok(vec![2, 3, 1]));
        assert_eq!(decode(Measure::Balance, &sent, 300), Ok(vec![0, 1, 0]));
        // Two applies of the top credit, delivered once: no counts make 2,400 without it.
        let why = unexplained(decode(Measure::Balance, &sent, 2_400));
        assert!(
            why.contains("2 applies of its credit of 1,200, though it reached the receiver 1 times"),
            "{why}"
        );
        assert!(unexplained(decode(Measure::Balance, &sent, 150)).contains("no number of applies"));
        // A plan that cannot fit under the most an amount may be.
        assert_eq!(place_values(100, &[9, 9, 9], 9_999), None);
        assert_eq!(place_values(100, &[9, 9, 9], 100_000), Some(vec![100, 1_000, 10_000]));
    }

    #[test]
    fn amounts_that_are_not_place_values_decode_only_when_one_answer_fits() {
        // Two credits of 2^62 and 2^62 + 1 to one account (their sum overflows 64 bits).
        let big = 1i64 << 62;
        let pair = credits(&[(big, 1), (big + 1, 1)]);
        assert_eq!(decode(Measure::Balance, &pair, big), Ok(vec![1, 0]));
        assert_eq!(decode(Measure::Balance, &pair, big + 1), Ok(vec![0, 1]));
        // Two equal amounts: one apply of either is the same change.
        let same = credits(&[(100, 1), (100, 1)]);
        assert_eq!(decode(Measure::Balance, &same, 100), Err(Undecoded::Ambiguous));
        assert_eq!(decode(Measure::Balance, &same, 200), Ok(vec![1, 1]));
        assert_eq!(decode(Measure::Balance, &same, 0), Ok(vec![0, 0]));
        assert_eq!(decode(Measure::Rows, &same, 1), Err(Undecoded::Ambiguous));
        // A poison credit's negative amount, applied.
        assert_eq!(decode(Measure::Balance, &credits(&[(-100, 5)]), -200), Ok(vec![2]));
        // Too many combinations to try: not evidence.
        let many = vec![Credited { amount: 7, attempts: 9 }; 8];
        assert_eq!(decode(Measure::Balance, &many, 7), Err(Undecoded::Ambiguous));
    }

    #[test]
    fn the_baseline_is_subtracted() {
        let before = BTreeMap::from([(1, 500), (2, 100), (3, 7)]);
        let after = BTreeMap::from([(1, 2_000), (2, 100), (4, 300)]);
        assert_eq!(changes(&before, &after), BTreeMap::from([(1, 1_500), (3, -7), (4, 300)]));
        let mut book = CreditBook::default();
        book.credit("a", 1, 1_500, 1);
        let r = book.resolve("balance", Measure::Balance, &changes(&before, &after), &|a| a < 4);
        assert_eq!(r.counts, [("a".to_string(), 1)]);
        // Account 3 went down and was sent nothing; account 4 is not observed.
        assert_eq!(r.unexplained.len(), 1);
        assert_eq!((r.unexplained[0].account, r.unexplained[0].named), (3, false));
    }

    #[test]
    fn a_book_resolves_every_account_and_keeps_what_it_cannot_read_apart() {
        let mut book = CreditBook::default();
        book.credit("a", 1, 100, 1);
        book.credit("b", 2, 100, 2);
        book.credit("c", 3, 100, 1);
        book.credit("c", 3, 100, 1);
        book.credit("d", 9, 100, 1);
        book.unjudged(5);
        let changes = BTreeMap::from([(1, 100), (2, 250), (3, 200), (5, 40), (6, 1)]);
        let r = book.resolve("balance", Measure::Balance, &changes, &|a| a != 9);
        assert_eq!(
            r.counts,
            [("a".to_string(), 1), ("c".to_string(), 2)],
            "c was sent twice (a late replay)"
        );
        assert_eq!(r.undecoded, ["b", "d"], "b unexplained, d not observed");
        let accounts: Vec<(i64, bool)> = r.unexplained.iter().map(|u| (u.account, u.named)).collect();
        assert_eq!(accounts, [(2, true), (6, false)], "an update's account is never unexplained");
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(grouped(1_470), "1,470");
        assert_eq!(grouped(-1_000_000), "-1,000,000");
        assert_eq!(grouped(999), "999");
        assert_eq!(signed(0), "0");
    }

    /// Credits each to an account of its own: amounts, attempts and apply counts within them.
    fn own_accounts() -> impl Strategy<Value = Vec<(i64, u32, u32)>> {
        proptest::collection::vec((1i64..1_000_000, 1u32..40), 1..20)
            .prop_flat_map(|sent| {
                let counts: Vec<_> = sent.iter().map(|&(_, attempts)| 0..=attempts).collect();
                (Just(sent), counts)
            })
            .prop_map(|(sent, counts)| sent.iter().zip(counts).map(|(&(a, n), c)| (a, n, c)).collect())
    }

    /// One scarce account's credits: their reaches (the most attempts each can have), the attempts
    /// each had, and apply counts within them.
    fn one_scarce_account() -> impl Strategy<Value = Vec<(u32, u32, u32)>> {
        proptest::collection::vec(1u32..12, 1..7)
            .prop_flat_map(|reach| {
                let attempts: Vec<_> = reach.iter().map(|&r| 0..=r).collect();
                (Just(reach), attempts)
            })
            .prop_flat_map(|(reach, attempts)| {
                let counts: Vec<_> = attempts.iter().map(|&a| 0..=a).collect();
                (Just(reach), Just(attempts), counts)
            })
            .prop_map(|(r, a, c)| (0..r.len()).map(|i| (r[i], a[i], c[i])).collect())
    }

    proptest! {
        #[test]
        fn every_count_on_accounts_of_their_own_decodes(sent in own_accounts()) {
            for measure in [Measure::Balance, Measure::Rows] {
                for &(amount, attempts, times) in &sent {
                    let change = i64::try_from(measure.unit(amount) * i128::from(times)).unwrap_or(i64::MAX);
                    let credit = [Credited { amount, attempts }];
                    prop_assert_eq!(decode(measure, &credit, change), Ok(vec![times]));
                }
            }
        }

        #[test]
        fn every_multiset_of_counts_below_the_base_decodes_on_a_scarce_account(sent in one_scarce_account()) {
            let reach: Vec<u32> = sent.iter().map(|s| s.0).collect();
            let amounts = place_values(100, &reach, i64::MAX).expect("fits in 64 bits");
            let credits: Vec<Credited> =
                amounts.iter().zip(&sent).map(|(&amount, s)| Credited { amount, attempts: s.1 }).collect();
            let change: i64 = amounts.iter().zip(&sent).map(|(&a, s)| a * i64::from(s.2)).sum();
            let counts: Vec<u32> = sent.iter().map(|s| s.2).collect();
            prop_assert_eq!(decode(Measure::Balance, &credits, change), Ok(counts));
        }

        #[test]
        fn a_change_off_the_amounts_never_decodes(sent in one_scarce_account(), off in 1i64..100) {
            let reach: Vec<u32> = sent.iter().map(|s| s.0).collect();
            let amounts = place_values(100, &reach, i64::MAX).expect("fits in 64 bits");
            let credits: Vec<Credited> =
                amounts.iter().zip(&sent).map(|(&amount, s)| Credited { amount, attempts: s.1 }).collect();
            let change: i64 = amounts.iter().zip(&sent).map(|(&a, s)| a * i64::from(s.2)).sum::<i64>() + off;
            prop_assert!(matches!(decode(Measure::Balance, &credits, change), Err(Undecoded::Unexplained(_))));
        }
    }
}
