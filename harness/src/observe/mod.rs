//! Evidence from the world: what a receiver applied, read from where it leaves it, never asked of
//! the receiver. One [`Observer`] trait, three kinds: [`Tables`] reads hookbench's own schema (a
//! bench's receivers), [`SqlObserver`] runs the user's read-only queries against their database,
//! and [`Sink`] stands in for the downstream service a receiver's side effect calls. Each reports
//! what it sees into a [`Record`]: a [`Snapshot`] (raw, by id, for settling and for judging
//! several checks) or a [`Gather`] (straight into a history's [`Evidence`], for a bench cell of any
//! size). [`changes`] reads what a delivery changed, table by table, for `hookbench discover`.
//! None of this shares code with the receivers it observes.

pub mod changes;
mod readonly;
mod record;
mod sink;
mod sql;
mod tables;

use std::ops::Range;
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::judge::{Change, Ledger, Measure};
pub use record::{Gather, Snapshot};
pub use sink::{Sink, SinkLimits};
pub use sql::{Queries, QueryLimits, SqlObserver};
pub use tables::{APPLICATION_NAME, INBOX_MAX_ATTEMPTS, Tables};

/// An observer that could not answer: the run cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// The database URL names no database an observer reads. The URL is not quoted: it may hold
    /// a password, or be a secret given to the wrong flag.
    #[error("unsupported database URL (expected postgres://..., mysql://... or sqlite:///path/file.db)")]
    Url,
    /// The database could not be opened.
    #[error("{flag} {url}: {reason}")]
    Connect {
        /// The flag that gave the URL (`--observe-db`, `--database-url`).
        flag: &'static str,
        /// The URL, password hidden.
        url: String,
        /// Why.
        reason: String,
    },
    /// A query failed.
    #[error("{flag} failed: {reason}")]
    Query {
        /// `--applied-query`, `--update-applied-query`, `--state-query`, `--dead-letter-query`, or
        /// hookbench's own tables.
        flag: &'static str,
        /// The database's message.
        reason: String,
    },
    /// A query ran past `--query-timeout`.
    #[error("{flag} ran longer than {limit} and was stopped (--query-timeout sets the limit)")]
    Timeout {
        /// The query's flag.
        flag: &'static str,
        /// The limit, as `--query-timeout` takes it.
        limit: String,
    },
    /// A query returned more rows than `--max-rows`.
    #[error("{flag} returned more than {max} rows (--max-rows sets the limit)")]
    TooManyRows {
        /// The query's flag.
        flag: &'static str,
        /// The limit.
        max: u64,
    },
    /// A query is not one read-only query.
    #[error("{flag} {reason}: only one read-only query (SELECT, or WITH ... SELECT) is run")]
    Refused {
        /// The query's flag.
        flag: &'static str,
        /// What it holds instead.
        reason: String,
    },
    /// A query has, or returned, the wrong shape.
    #[error("{flag} returned {found}; it must return {wanted}")]
    Shape {
        /// The query's flag.
        flag: &'static str,
        /// What came back.
        found: String,
        /// What is expected.
        wanted: &'static str,
    },
    /// The sink could not listen.
    #[error("--sink {addr}: {reason}")]
    Sink {
        /// The address.
        addr: String,
        /// Why.
        reason: String,
    },
}

/// What an observer can see.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sees {
    /// How many times each event was applied.
    pub applies: bool,
    /// Each account's final version.
    pub states: bool,
    /// The dead-letter store.
    pub dead_letters: bool,
    /// The database's change log.
    pub changes: bool,
    /// The balances and the ledger.
    pub ledger: bool,
    /// Bodies refused because their id was stored with another.
    pub id_conflicts: bool,
    /// How many times each update was applied, apart from the credits
    /// (`--update-applied-query`).
    pub update_applies: bool,
    /// Applies read from the receiver's own records (an applied query, hookbench's tables),
    /// which name the event whatever key its side effect carries; a sink names the event only
    /// by the key the receiver sends it.
    pub recorded_applies: bool,
    /// Per-account aggregates (`--balance-query`, `--count-query`): applies of credits, decoded
    /// from each account's change, naming no event by its id.
    pub aggregates: bool,
}

impl Sees {
    /// What either sees.
    #[must_use]
    pub fn or(self, o: Sees) -> Sees {
        Sees {
            applies: self.applies || o.applies,
            states: self.states || o.states,
            dead_letters: self.dead_letters || o.dead_letters,
            changes: self.changes || o.changes,
            ledger: self.ledger || o.ledger,
            id_conflicts: self.id_conflicts || o.id_conflicts,
            update_applies: self.update_applies || o.update_applies,
            recorded_applies: self.recorded_applies || o.recorded_applies,
            aggregates: self.aggregates || o.aggregates,
        }
    }
}

/// Where an observer puts what it sees.
pub trait Record: Send {
    /// `observer` sees `sees`: each kind of evidence it sees is observed from now on, even if it
    /// then reports nothing of that kind (an empty state query is zero accounts, not none).
    fn sees(&mut self, observer: &str, sees: Sees);
    /// `observer` saw `id` applied `times` times.
    fn applied(&mut self, observer: &str, id: &str, times: u64);
    /// `observer`'s query of update applies alone saw `id` applied `times` times.
    fn update_applied(&mut self, observer: &str, id: &str, times: u64);
    /// `account` ends on `version`.
    fn state(&mut self, account: i64, version: i64);
    /// `id` is a dead letter.
    fn dead_letter(&mut self, id: &str);
    /// The change log recorded `change` (in its order).
    fn change(&mut self, change: Change);
    /// The balances and the ledger.
    fn ledger(&mut self, ledger: Ledger);
    /// `n` bodies were refused because their id was stored with another.
    fn id_conflicts(&mut self, n: u64);
    /// A per-account aggregate of `measure` is observed, and (with `row`) an account held a value
    /// (rows of one account add up).
    fn aggregate(&mut self, measure: Measure, row: Option<(i64, i64)>);
}

/// Evidence from the world, read with connections (or a listener) of the observer's own.
pub trait Observer: Send + Sync {
    /// Its name in reports and evidence lines (`tables`, `sql`, `sink`).
    fn name(&self) -> &'static str;

    /// What it can see.
    fn sees(&self) -> Sees;

    /// Reads everything it sees into `into`.
    fn look<'a>(&'a self, into: &'a mut dyn Record) -> BoxFuture<'a, Result<(), ObserveError>>;

    /// Deliveries the receiver stored and has not yet applied or given up on (an inbox's pending
    /// rows), when it can tell.
    fn pending(&self) -> BoxFuture<'_, Result<Option<u64>, ObserveError>> {
        Box::pin(async { Ok(None) })
    }
}

/// What `look` sees once two looks `quiet` apart agree, or once `max` has passed: the world
/// has settled (a receiver that applies later, from a queue, has finished).
pub async fn steady<T: PartialEq, F: Future<Output = Result<T, ObserveError>>>(
    quiet: Duration,
    max: Duration,
    mut look: impl FnMut() -> F,
) -> Result<T, ObserveError> {
    let deadline = tokio::time::Instant::now() + max;
    let mut last = look().await?;
    loop {
        tokio::time::sleep(quiet).await;
        let now = look().await?;
        if now == last || tokio::time::Instant::now() >= deadline {
            return Ok(now);
        }
        last = now;
    }
}

/// Every observer of one run.
#[derive(Default)]
pub struct Observers {
    list: Vec<Box<dyn Observer>>,
    /// The run's id prefix, when its snapshots keep only its own ids.
    only: Option<String>,
    /// The run's accounts, when its snapshots keep only their aggregates.
    accounts: Option<Range<i64>>,
    /// What the aggregates held before the run sent anything: later snapshots hold changes since.
    baseline: Option<Snapshot>,
}

impl Observers {
    /// A run's observers.
    pub fn new(list: Vec<Box<dyn Observer>>) -> Self {
        Self { list, only: None, accounts: None, baseline: None }
    }

    /// These observers, their snapshots keeping only ids that start with `prefix` (the run's).
    #[must_use]
    pub fn only_ids(self, prefix: &str) -> Self {
        Self { only: Some(prefix.to_string()), ..self }
    }

    /// These observers, their snapshots keeping of the aggregates only `accounts` (the run's).
    #[must_use]
    pub fn only_accounts(self, accounts: Range<i64>) -> Self {
        Self { accounts: Some(accounts), ..self }
    }

    /// From now on, each snapshot's aggregates are their changes since `baseline`'s (what the
    /// accounts held before the run).
    pub fn set_baseline(&mut self, baseline: Snapshot) {
        self.baseline = Some(baseline);
    }

    /// What they see together.
    pub fn sees(&self) -> Sees {
        self.list.iter().fold(Sees::default(), |s, o| s.or(o.sees()))
    }

    /// Their names and what each sees, for reports.
    pub fn names(&self) -> Vec<String> {
        self.list
            .iter()
            .map(|o| {
                let s = o.sees();
                let kinds: Vec<&str> = [
                    (s.applies, "applies"),
                    (s.aggregates, "per-account aggregates"),
                    (s.update_applies, "update applies"),
                    (s.states, "states"),
                    (s.dead_letters, "dead letters"),
                    (s.changes, "change log"),
                ]
                .into_iter()
                .filter_map(|(on, k)| on.then_some(k))
                .collect();
                format!("{} ({})", o.name(), kinds.join(", "))
            })
            .collect()
    }

    /// Asks every observer, into `into`.
    pub async fn look(&self, into: &mut dyn Record) -> Result<(), ObserveError> {
        for o in &self.list {
            into.sees(o.name(), o.sees());
            o.look(into).await?;
        }
        Ok(())
    }

    /// What they all see now.
    pub async fn snapshot(&self) -> Result<Snapshot, ObserveError> {
        let mut s = self.only.as_deref().map_or_else(Snapshot::default, Snapshot::only_ids);
        if let Some(accounts) = &self.accounts {
            s = s.only_accounts(accounts.clone());
        }
        self.look(&mut s).await?;
        Ok(match &self.baseline {
            Some(b) => s.since(b),
            None => s,
        })
    }

    /// Looks until two looks `quiet` apart agree (a receiver that applies later, from a queue, has
    /// finished), or `max` has passed.
    pub async fn settled(&self, quiet: Duration, max: Duration) -> Result<Snapshot, ObserveError> {
        steady(quiet, max, || self.snapshot()).await
    }

    /// Waits until no observer reports deliveries pending (an inbox drained), polling every
    /// 20 ms. `Err` carries what was still pending after `timeout`.
    pub async fn drained(&self, timeout: Duration) -> Result<(), u64> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let mut pending = 0u64;
            for o in &self.list {
                pending = pending.saturating_add(o.pending().await.unwrap_or(Some(u64::MAX)).unwrap_or(0));
            }
            if pending == 0 {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(pending);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
