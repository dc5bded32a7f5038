//! Where an audit's events go: every account it names is handed out here, and, where per-account
//! aggregates are the evidence (`--balance-query`, `--count-query`), the layout that makes each
//! account's change say how many times each credit sent to it was applied (docs/audit.md,
//! "Choosing the evidence").
//!
//! Every account comes from one counter, from the run's base up, so the run's accounts are one
//! range that its aggregates are read over and that must hold nothing before it starts. In the
//! scarce layout (`--accounts N` with an aggregate: an app whose accounts must exist beforehand)
//! every credit of the run goes to one of the first N accounts instead, its amount the account's
//! next place value ([`crate::judge::aggregate::place_values`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use super::AuditError;
use crate::judge::aggregate::grouped;
pub use crate::workload::Layout;
use crate::workload::Workload;

/// The smallest amount of the scarce layout, and what every amount there is a multiple of: a
/// credit the receiver took with a fee or rounding moves the balance by something else.
pub const UNIT: i64 = 100;

/// The run's accounts, handed out as the checks send.
#[derive(Debug)]
pub struct Accounts {
    layout: Layout,
    base: i64,
    /// The next account no event has used.
    next: AtomicI64,
    /// The scarce layout's next place value on each shared account.
    places: Mutex<Vec<i128>>,
}

/// Where one credit goes, and what it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// The account.
    pub account: i64,
    /// The amount.
    pub amount: i64,
}

impl Accounts {
    /// The accounts of a run whose range starts at `base`, the first `reserved` of them left to
    /// the parallel load (its updates, and in the own layout its credits too).
    pub fn new(layout: Layout, base: i64, reserved: i64) -> Self {
        let shared = match layout {
            Layout::Scarce { accounts, .. } => accounts as usize,
            _ => 0,
        };
        Self {
            layout,
            base,
            next: AtomicI64::new(base + reserved),
            places: Mutex::new(vec![i128::from(UNIT); shared]),
        }
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The run's first account.
    pub fn base(&self) -> i64 {
        self.base
    }

    /// The next account no event has used yet (the end of the run's range so far).
    pub fn end(&self) -> i64 {
        self.next.load(Ordering::Relaxed)
    }

    /// An account no other event uses.
    pub fn fresh(&self) -> i64 {
        self.block(1)
    }

    /// `n` accounts no other event uses: the first.
    pub fn block(&self, n: i64) -> i64 {
        self.next.fetch_add(n, Ordering::Relaxed)
    }

    /// Where a probe's credit of `amount` goes: a fresh account and `amount`, or, scarce, the
    /// shared account whose next place value is the smallest, and that value; `reach` is the most
    /// times the credit can reach the receiver (its attempts and copies, a late replay's
    /// included), so that the next credit there takes a place above every count of this one.
    pub fn credit(&self, amount: i64, reach: u32) -> Result<Placed, AuditError> {
        match self.layout {
            Layout::Pooled | Layout::Own => Ok(Placed { account: self.fresh(), amount }),
            Layout::Scarce { max_amount, .. } => {
                let mut places = self.places.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                place(&mut places, self.base, reach, max_amount)
            }
        }
    }

    /// Another credit to `account`, already a credit's: of `amount`, or in the scarce layout the
    /// account's next place value (a pair of events that restate one change, to one account).
    pub fn credit_on(&self, account: i64, amount: i64, reach: u32) -> Result<Placed, AuditError> {
        let Layout::Scarce { max_amount, .. } = self.layout else { return Ok(Placed { account, amount }) };
        let mut places = self.places.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let i = usize::try_from(account - self.base).ok().filter(|&i| i < places.len());
        let i = i.ok_or_else(|| AuditError::Config(format!("account {account} is not one of --accounts")))?;
        place(&mut places[i..=i], account, reach, max_amount)
    }

    /// Lays the credits of `workload`, sent with `attempts` attempts per delivery, out as the
    /// layout says: in the own layout each to an account of its own (the load's accounts then
    /// span [`Workload::own_account_span`]); in the scarce layout each to a shared account, its
    /// amount that account's next place value (its account then counts from the run's base:
    /// give the load's wire [`crate::wire::Wire::credit_base`]).
    pub fn lay_out(&self, workload: &mut Workload, attempts: u32) -> Result<(), AuditError> {
        match self.layout {
            Layout::Pooled => Ok(()),
            Layout::Own => {
                workload.credits_to_own_accounts();
                Ok(())
            }
            Layout::Scarce { max_amount, .. } => {
                let copies = workload.copies();
                let mut places = self.places.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                for (e, &c) in workload.events.iter_mut().zip(&copies) {
                    if let crate::workload::EventKind::Credit { amount } = &mut e.kind {
                        let placed = place(&mut places, self.base, c.saturating_mul(attempts), max_amount)?;
                        e.account = u32::try_from(placed.account - self.base).unwrap_or(u32::MAX);
                        *amount = placed.amount;
                    }
                }
                Ok(())
            }
        }
    }

    /// Whether every credit of `reaches` fits the scarce layout under its `--max-amount`, placed
    /// as a run would place them (a run whose plan cannot fit is refused before anything is
    /// sent); the largest amount it would carry.
    pub fn fits(layout: Layout, reaches: impl IntoIterator<Item = u32>) -> Result<i64, AuditError> {
        let Layout::Scarce { accounts, max_amount } = layout else { return Ok(0) };
        let mut places = vec![i128::from(UNIT); accounts as usize];
        let mut most = 0;
        for reach in reaches {
            most = most.max(place(&mut places, 0, reach, max_amount)?.amount);
        }
        Ok(most)
    }
}

/// The credit placed on the shared account (of `places`, counted from `base`) whose next place
/// value is the smallest: that value, the account's next place moved above every count of it.
fn place(places: &mut [i128], base: i64, reach: u32, max_amount: i64) -> Result<Placed, AuditError> {
    let (i, &value) = places
        .iter()
        .enumerate()
        .min_by_key(|&(_, v)| *v)
        .ok_or_else(|| AuditError::Config("--accounts must be at least 1".to_string()))?;
    let amount = i64::try_from(value).ok().filter(|&a| a <= max_amount).ok_or_else(|| {
        AuditError::Config(format!(
            "--max-amount {}: the audit's credits do not fit on --accounts {} accounts as place values \
             (the next would carry {}): raise --max-amount or --accounts, or send fewer credits \
             (--events, --trials, --probe-events, --checks)",
            grouped(max_amount.into()),
            places.len(),
            grouped(value)
        ))
    })?;
    places[i] = value.saturating_mul(i128::from(reach) + 1);
    Ok(Placed { account: base + i as i64, amount })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{Credited, Measure};
    use crate::workload::WorkloadConfig;

    #[test]
    fn fresh_accounts_are_handed_out_once_each() {
        let a = Accounts::new(Layout::Own, 1_000, 10);
        assert_eq!(a.fresh(), 1_010);
        assert_eq!(a.block(5), 1_011);
        assert_eq!(a.credit(150, 4).expect("placed"), Placed { account: 1_016, amount: 150 });
        assert_eq!(a.end(), 1_017);
    }

    #[test]
    fn the_scarce_layout_places_credits_where_every_count_decodes() {
        let layout = Layout::Scarce { accounts: 2, max_amount: 1_000_000 };
        let a = Accounts::new(layout, 500, 2);
        let placed: Vec<Placed> = (0..5).map(|_| a.credit(7, 3).expect("fits")).collect();
        let on =
            |acct: i64| placed.iter().filter(|p| p.account == acct).map(|p| p.amount).collect::<Vec<_>>();
        assert_eq!(on(500), [100, 400, 1_600]);
        assert_eq!(on(501), [100, 400]);
        // Any counts within the reach decode on either account.
        let credits: Vec<Credited> = on(500).iter().map(|&amount| Credited { amount, attempts: 3 }).collect();
        for counts in [[0, 0, 0], [3, 3, 3], [1, 0, 2], [2, 3, 0]] {
            let change: i64 = on(500).iter().zip(counts).map(|(a, c)| a * i64::from(c)).sum();
            assert_eq!(
                crate::judge::aggregate::decode(Measure::Balance, &credits, change),
                Ok(counts.to_vec())
            );
        }
        assert_eq!(a.end(), 502, "no fresh account used");
    }

    #[test]
    fn a_plan_that_cannot_fit_is_refused_naming_the_flag() {
        let layout = Layout::Scarce { accounts: 2, max_amount: 10_000 };
        assert_eq!(Accounts::fits(layout, [9, 9, 9, 9]).expect("fits"), 1_000);
        assert_eq!(Accounts::fits(layout, [9; 6]).expect("fits"), 10_000, "up to the most, included");
        let err = Accounts::fits(layout, [9; 7]).expect_err("too many").to_string();
        assert!(err.contains("--max-amount 10,000") && err.contains("--accounts 2"), "{err}");
        assert_eq!(Accounts::fits(Layout::Own, [1_000_000; 3]).expect("no limit"), 0);
    }

    #[test]
    fn a_load_laid_out_scarce_takes_place_values_on_the_shared_accounts() {
        let mut w = Workload::generate(&WorkloadConfig { events: 40, accounts: 3, ..Default::default() })
            .expect("a workload");
        let a = Accounts::new(Layout::Scarce { accounts: 3, max_amount: i64::MAX }, 0, 3);
        a.lay_out(&mut w, 2).expect("fits");
        let mut by_account: std::collections::BTreeMap<u32, Vec<i64>> = Default::default();
        for e in &w.events {
            if let crate::workload::EventKind::Credit { amount } = e.kind {
                by_account.entry(e.account).or_default().push(amount);
            }
        }
        assert!(by_account.keys().all(|&a| a < 3));
        for amounts in by_account.values() {
            assert_eq!(amounts[0], UNIT);
            assert!(amounts.windows(2).all(|w| w[1] > w[0] && w[1] % UNIT == 0), "{amounts:?}");
        }
    }
}
