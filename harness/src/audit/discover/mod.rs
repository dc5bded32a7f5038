//! `hookbench discover URL`: before any audit, what one credit does to the receiver's database,
//! what its duplicate does, and what a delivery it must refuse does, read table by table
//! ([`crate::observe::changes`]); in words, and as the queries an audit judges the effect with.
//!
//! Which table is evidence is decided by what its changed rows hold ([`roles`]): the credit's
//! account or amount make an effect, the event id alone makes bookkeeping (a dedupe table holds one
//! row per event however often the effect ran), a change that a refused delivery makes too is a
//! log. The database must be quiet first (another writer's rows would read as the credit's), and
//! discover never writes to it: it reads through the observer's read-only connections. What it
//! proposes is a proposal: `hookbench audit --config` with it gives the verdict.

pub mod roles;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::accounts::{Accounts, Layout};
use super::config::Target;
use super::ctx::Ctx;
use super::{AuditError, Pulse, fresh_ids, preflight, probe};
use crate::judge::aggregate::grouped;
use crate::observe::QueryLimits;
use crate::observe::changes::{COUNTERS_LAG, Changed, Changes, Mark, Values};
use crate::wire::{Poison, Wire};
pub use roles::{Credit, Proposal, Role};

/// The credit's amount: one no column holds by chance as easily as 100.
pub const AMOUNT: i64 = 1_500;

/// What `hookbench discover` is told.
#[derive(Debug, Clone)]
pub struct DiscoverConfig {
    /// The receiver, its signing and its payload.
    pub target: Target,
    /// Its database, read-only.
    pub observe_db: String,
    /// What each query may take.
    pub query_limits: QueryLimits,
    /// How long the database must show no change to count as quiet.
    pub quiet: Duration,
    /// How long to wait for it at most after a delivery.
    pub settle_max: Duration,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// The credit's id prefix (default: `d` and the time in base 36).
    pub id_prefix: Option<String>,
    /// Its account (default: from the time, as an audit's).
    pub account_base: Option<i64>,
}

/// What discover found.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The credit it sent.
    pub credit: Credit,
    /// Each table the deliveries changed, and what it is.
    pub roles: BTreeMap<String, Role>,
    /// What happened, in words, a sentence a line.
    pub words: Vec<String>,
    /// The queries that judge the effect (empty: none could be proposed).
    pub proposal: Proposal,
}

/// Why discover could not run or propose anything (exit status 2).
fn stop(why: String) -> AuditError {
    AuditError::Preflight(why)
}

/// Runs discover, reporting each step through `step`.
pub async fn discover(
    config: &DiscoverConfig,
    step: &(dyn Fn(&str) + Sync),
) -> Result<Discovery, AuditError> {
    let t = &config.target;
    let probe = probe::Probe::new(&t.url, config.timeout, Instant::now(), Arc::new(Pulse::default()))?;
    probe
        .reachable()
        .await
        .map_err(|e| AuditError::Unreachable { url: t.url.clone(), reason: e.to_string() })?;
    let changes = Changes::open(&config.observe_db, config.query_limits).await?;
    let ids = fresh_ids('d', jiff::Timestamp::now(), config.id_prefix.as_deref(), config.account_base);
    let signer = t.signer()?;
    let wire = Wire {
        signer,
        payload: t.payload.clone(),
        ids: ids.clone(),
        poison: Poison::default(),
        credit_base: None,
    };
    let ctx = Ctx::new(probe, Arc::new(wire), Accounts::new(Layout::Own, ids.account_base, 0));
    let settle = Settle { quiet: config.quiet, most: config.settle_max, lag: changes.counts_only() };

    step("waiting for the database to be quiet");
    quiet(&changes, &settle).await?;

    step("a credit");
    let mark = changes.mark().await?;
    let sent = preflight::preflight(&ctx, &t.url, 0, AMOUNT).await?.map_err(stop)?;
    let answered = sent.answers.describe();
    if !sent.answers.acked {
        return Err(stop(format!(
            "the receiver did not acknowledge the credit ({answered}): discover reads what an acknowledged credit did; \
             see why it fails (its logs), then run discover again"
        )));
    }
    let first = settle.changed(&changes, &mark).await?;
    let f = &sent.fields;
    let credit = Credit { id: f.id.clone(), account: f.account, amount: f.amount };
    if first.is_empty() {
        return Err(stop(format!(
            "the receiver acknowledged a credit of {} to account {} ({}) and nothing changed in --observe-db: the \
             handler ignores this event (check --payload and --event-type) or writes to another database",
            grouped(credit.amount.into()),
            credit.account,
            credit.id
        )));
    }
    let tables: BTreeMap<&str, &crate::observe::changes::Table> =
        changes.tables().iter().map(|t| (t.name.as_str(), t)).collect();
    let mut roles: BTreeMap<String, Role> = first
        .iter()
        .filter_map(|c| {
            Some((c.table.clone(), roles::role(tables.get(c.table.as_str())?, c, false, &credit)))
        })
        .collect();
    let after_first = account_rows(&changes, &roles, credit.account).await?;

    step("its duplicate");
    let mark = changes.mark().await?;
    let again = ctx.deliver(f, "discover: the same delivery again").await;
    let duplicate = settle.changed(&changes, &mark).await?;
    let after_duplicate = account_rows(&changes, &roles, credit.account).await?;

    let mut refused = Vec::new();
    if t.signing.signs() {
        step("a delivery it must refuse");
        let mark = changes.mark().await?;
        let other = ctx.credit("pre", 1, AMOUNT, 1)?;
        let stranger = ctx.wire.signed_by(ctx.wire.signer.stranger());
        let answer = ctx.deliver_over(&stranger, &other, "discover: signed with a secret it never had").await;
        refused = settle.changed(&changes, &mark).await?;
        for c in &refused {
            roles.insert(c.table.clone(), Role::Log);
        }
        if answer.acked() {
            return Err(stop(format!(
                "the receiver acknowledged a delivery signed with a secret it never had ({}): it does not verify \
                 signatures as --signing {} does; discover cannot tell a log from an effect, and an audit would fail it",
                answer.status.unwrap_or_default(),
                t.signing.as_str()
            )));
        }
    }
    let proposal = roles::propose(&roles, changes.is_postgres());
    let read =
        Readings { answered, first, again: again.status, duplicate, after_first, after_duplicate, refused };
    let words = read.words(&credit, &roles);
    Ok(Discovery { credit, roles, words, proposal })
}

/// How discover waits for the database after a delivery.
struct Settle {
    quiet: Duration,
    most: Duration,
    /// Whether some table is read by its counters, which a writer may hold back.
    lag: bool,
}

impl Settle {
    /// What changed since `mark`, once two looks `quiet` apart agree (at most `most` after the
    /// first).
    async fn changed(&self, changes: &Changes, mark: &Mark) -> Result<Vec<Changed>, AuditError> {
        if self.lag {
            tokio::time::sleep(COUNTERS_LAG).await;
        }
        Ok(crate::observe::steady(self.quiet, self.most, || changes.since(mark)).await?)
    }
}

/// Refuses a database that changes while nothing is sent: another writer's rows would read as
/// the credit's effect.
async fn quiet(changes: &Changes, settle: &Settle) -> Result<(), AuditError> {
    let mark = changes.mark().await?;
    let wait =
        settle.quiet.max(Duration::from_secs(1)) + if settle.lag { COUNTERS_LAG } else { Duration::ZERO };
    tokio::time::sleep(wait).await;
    let moved = changes.since(&mark).await?;
    if moved.is_empty() && changes.committed_since(&mark).await? {
        return Err(stop(format!(
            "the database is not quiet: while nothing was sent, another connection committed a write within {} (no \
             table's row count moved: an update in place, or a table created since the first look): another writer would be read as the credit's effect; stop \
             it, or discover against a database of its own",
            humantime::format_duration(wait)
        )));
    }
    if moved.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = moved.iter().map(|c| format!("{} ({} rows)", c.table, c.touched())).collect();
    Err(stop(format!(
        "the database is not quiet: while nothing was sent, {} changed within {}: another writer (a worker, a \
         scheduled job, another test) would be read as the credit's effect; stop it, or discover against a database \
         of its own",
        named.join(", "),
        humantime::format_duration(wait)
    )))
}

/// The account's rows in each table whose role names an account column, keyed by table.
async fn account_rows(
    changes: &Changes,
    roles: &BTreeMap<String, Role>,
    account: i64,
) -> Result<BTreeMap<String, Vec<Values>>, AuditError> {
    let mut rows = BTreeMap::new();
    for (table, role) in roles {
        if let Some(a) = role.account() {
            let value = match &a.prefix {
                Some(p) => serde_json::Value::from(format!("{p}{account}")),
                None => serde_json::Value::from(account),
            };
            rows.insert(table.clone(), changes.rows_where(table, &a.column, &value).await?);
        }
    }
    Ok(rows)
}

/// What the three deliveries did, as discover read it.
struct Readings {
    /// How the credit was answered.
    answered: String,
    /// What the credit changed.
    first: Vec<Changed>,
    /// How its duplicate was answered.
    again: Option<u16>,
    /// What its duplicate changed.
    duplicate: Vec<Changed>,
    /// The account's rows in each table with an account column, after the credit.
    after_first: BTreeMap<String, Vec<Values>>,
    /// The same, after its duplicate.
    after_duplicate: BTreeMap<String, Vec<Values>>,
    /// What a delivery that must be refused changed.
    refused: Vec<Changed>,
}

impl Readings {
    /// What happened, a sentence a line.
    fn words(&self, credit: &Credit, roles: &BTreeMap<String, Role>) -> Vec<String> {
        let mut said = vec![format!(
            "a credit of {} to account {} ({}), acknowledged ({}), changed {} table{}:",
            grouped(credit.amount.into()),
            credit.account,
            credit.id,
            self.answered,
            self.first.len(),
            if self.first.len() == 1 { "" } else { "s" }
        )];
        for c in &self.first {
            let role = roles.get(&c.table).unwrap_or(&Role::Unrelated);
            said.push(format!("  {}", roles::first_words(&c.table, role, c, credit)));
        }
        said.push(self.duplicate_words(credit, roles));
        if !self.refused.is_empty() {
            let logs: Vec<String> = self.refused.iter().map(|c| c.table.clone()).collect();
            said.push(format!(
                "a delivery signed with a secret the receiver never had changed {}: a log of every delivery, never evidence",
                logs.join(", ")
            ));
        }
        said
    }

    /// What the duplicate did to the effect tables.
    fn duplicate_words(&self, credit: &Credit, roles: &BTreeMap<String, Role>) -> String {
        let status = self.again.map_or_else(|| "no answer".to_string(), |s| s.to_string());
        let none = Vec::new();
        let applied_again: Vec<String> = roles
            .iter()
            .filter(|(_, r)| r.is_effect())
            .filter_map(|(t, r)| {
                let a = self.after_first.get(t).unwrap_or(&none);
                let b = self.after_duplicate.get(t).unwrap_or(&none);
                roles::applied_again(r, a, b, credit.amount).map(|what| format!("{t}: {what}"))
            })
            .collect();
        let others: Vec<String> = self
            .duplicate
            .iter()
            .filter(|c| !roles.get(&c.table).is_some_and(Role::is_effect))
            .map(|c| format!("{} ({} rows)", c.table, c.touched()))
            .collect();
        let also = if others.is_empty() {
            String::new()
        } else {
            format!("; it also changed {}", others.join(", "))
        };
        if applied_again.is_empty() {
            format!(
                "its duplicate (answered {status}) changed no effect table: the handler dedupes a copy sent after the \
                 first was answered (whether copies arriving together are deduped too is what the audit measures){also}"
            )
        } else {
            format!(
                "its duplicate (answered {status}) was applied again: {}: the handler applies duplicates{also}",
                applied_again.join("; ")
            )
        }
    }
}
