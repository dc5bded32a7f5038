//! What the checks share: the receiver ([`Ctx`]: the probe, the wire, fresh ids and accounts),
//! one event a probing check delivered ([`Delivered`]) and a probing check's deliveries waiting
//! for the observers ([`Probes`]), judged by the one judge.

use std::sync::Arc;
use std::time::Duration;

use super::AuditError;
use super::accounts::{Accounts, Layout};
use super::probe::{Answer, Probe};
use crate::judge::{
    Answers, Class, CreditBook, Expect, History, Ids, Kind, Needs, Rules, Sent, Subject, Verdict, judge,
};
use crate::load::{Load, checked};
use crate::observe::Snapshot;
use crate::report::model::Fate;
use crate::report::{AttemptLog, Check, CheckResult};
use crate::sender::{self, Progress, SendError, SenderConfig};
use crate::wire::{Fields, IdSpace, Wire};
use crate::workload::Workload;

/// The receiver, the wire, and fresh ids and accounts.
pub struct Ctx {
    /// The receiver.
    pub probe: Probe,
    /// Bodies and signatures.
    pub wire: Arc<Wire>,
    /// The run's accounts, handed out as the checks send.
    pub accounts: Accounts,
    /// Added to the reach of every probe's credit: a late replay may send it once more.
    pub replay_reach: u32,
}

/// The current time, Unix seconds (each attempt is signed afresh).
pub fn now_s() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl Ctx {
    /// The context of a run: its receiver, its wire and its accounts.
    pub fn new(probe: Probe, wire: Arc<Wire>, accounts: Accounts) -> Self {
        let probe = probe.with_query(wire.path_query());
        Self { probe, wire, accounts, replay_reach: 0 }
    }

    /// An account no other check uses (for updates, and for a credit whose account is its own
    /// whatever the layout).
    pub fn account(&self) -> i64 {
        self.accounts.fresh()
    }

    /// The run's wire for a load of its own, ids under `tag`, and `accounts` accounts no other
    /// check uses (a load whose credits are not laid out: the capacity ramp's).
    pub fn load_wire(&self, tag: &str, accounts: u32) -> Wire {
        let account_base = self.accounts.block(i64::from(accounts));
        let prefix = format!("{}{tag}", self.wire.ids.prefix);
        Wire { ids: IdSpace { prefix, account_base }, ..(*self.wire).clone() }
    }

    /// `workload` laid out as the run's layout says, sent with `attempts` attempts per delivery,
    /// with the wire for it: ids under `tag`, the accounts its events name no other check uses
    /// (one per credit too in the own layout), and in the scarce layout its credits on the run's
    /// shared accounts.
    pub fn laid_out_load(
        &self,
        tag: &str,
        workload: &mut Workload,
        attempts: u32,
    ) -> Result<Wire, AuditError> {
        let span = match self.accounts.layout() {
            Layout::Own => Workload::own_account_span(&workload.config),
            _ => u64::from(workload.config.accounts),
        };
        self.accounts.lay_out(workload, attempts)?;
        let mut wire = self.load_wire(tag, 0);
        wire.ids.account_base = self.accounts.block(i64::try_from(span).unwrap_or(i64::MAX));
        let scarce = matches!(self.accounts.layout(), Layout::Scarce { .. });
        wire.credit_base = scarce.then(|| self.accounts.base());
        Ok(wire)
    }

    /// Credit `n` of a check's `tag`, of `amount` (made a place value in the scarce layout) to an
    /// account as the layout places it; `reach` is the most times the check can deliver it.
    pub fn credit(&self, tag: &str, n: usize, amount: i64, reach: u32) -> Result<Fields, AuditError> {
        let placed = self.accounts.credit(amount, reach.saturating_add(self.replay_reach))?;
        Ok(self.credit_to(tag, n, placed.account, placed.amount))
    }

    /// Credit `n` of a check's `tag` to the account of `first`, another credit, restating it: of
    /// the same amount, or in the scarce layout the account's next place value.
    pub fn credit_beside(
        &self,
        tag: &str,
        n: usize,
        first: &Fields,
        reach: u32,
    ) -> Result<Fields, AuditError> {
        let reach = reach.saturating_add(self.replay_reach);
        let placed = self.accounts.credit_on(first.account, first.amount, reach)?;
        Ok(self.credit_to(tag, n, placed.account, placed.amount))
    }

    /// Credit `n` of a check's `tag`, of `amount` to `account`, whatever the layout.
    pub fn credit_to(&self, tag: &str, n: usize, account: i64, amount: i64) -> Fields {
        let id = format!("{}{tag}_{n:04}", self.wire.ids.prefix);
        Fields {
            id,
            kind: crate::wire::Kind::Credit,
            account,
            amount,
            plan: String::new(),
            version: 0,
            created: now_s(),
            poisoned: false,
            object: None,
        }
    }

    /// Update `n` of a check's `tag`: `account`'s plan at `version`.
    pub fn update(&self, tag: &str, n: usize, account: i64, version: i64) -> Fields {
        let id = format!("{}{tag}_{n:04}", self.wire.ids.prefix);
        Fields {
            id,
            kind: crate::wire::Kind::Update,
            account,
            amount: 0,
            plan: format!("plan_v{version}"),
            version,
            created: now_s() + version,
            poisoned: false,
            object: None,
        }
    }

    /// One signed attempt of `f` on a fresh connection.
    pub async fn deliver(&self, f: &Fields, note: &str) -> Answer {
        self.deliver_over(&self.wire, f, note).await
    }

    /// One attempt of `f` with `wire`'s body and signature, on a fresh connection.
    pub async fn deliver_over(&self, wire: &Wire, f: &Fields, note: &str) -> Answer {
        let (body, headers) = wire.attempt(f, now_s());
        self.probe.post(None, &headers, body, note).await
    }

    /// Sends `workload` to the receiver over `wire` as `config` says: a load, as the judge reads
    /// it, its attempts' times on the audit's clock (from [`Load::offset_ms`]).
    pub async fn send_load(
        &self,
        url: &str,
        workload: Workload,
        wire: Arc<Wire>,
        config: SenderConfig,
    ) -> Result<Load, SendError> {
        let asked_ms = self.probe.now_ms();
        let workload = Arc::new(workload);
        let history = config.history.clone();
        let progress = Arc::new(Progress::default());
        self.probe.pulse().load_started(progress.clone(), workload.groups.len() as u64);
        let sent =
            sender::run(workload.clone(), vec![url.to_string()], wire.clone(), config, progress).await?;
        // The attempts' times count from the send's own start, a little after it was asked for
        // (10 ms and the set-up): counted from when it was asked, every attempt of a crash check
        // read 10 ms early, and an attempt cut by a kill seemed answered before the kill began.
        let offset_ms = sent.started.map_or(asked_ms, |at| self.probe.ms_at(at));
        Ok(Load { workload, wire, sent, offset_ms, history })
    }

    /// Attempts until a 2xx or a 4xx, at most `tries` times.
    pub async fn until_answered(&self, sent: &mut Delivered, tries: usize, note: &str) {
        for _ in 0..tries {
            // After an attempt, this one is a retry and carries what its provider adds to one
            // (Slack's number and reason); an attempt heard no answer from timed out, to the
            // provider.
            let n = sent.attempts.len();
            let (body, mut headers) = self.wire.attempt(&sent.fields, now_s());
            if n > 0 {
                headers.extend(self.wire.retry_headers(n, sent.last_fate.unwrap_or(Fate::TimedOut)));
            }
            let answer = self.probe.post(None, &headers, body, note).await;
            let done = answer.acked() || answer.refused();
            sent.push(answer);
            if done {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// One event a probing check sent: what it expects, every attempt, how each was answered.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// Its fields (for a late replay).
    pub fields: Fields,
    /// What the check expects.
    pub expect: Expect,
    /// Every attempt, in order, as witnesses show them.
    pub attempts: Vec<AttemptLog>,
    /// How they were answered, as the judge reads it.
    pub answers: Answers,
    /// How the last attempt with an answer ended (what a provider's retry names as its reason).
    pub last_fate: Option<Fate>,
}

impl Delivered {
    /// `fields`, expected as `expect`, not sent yet.
    pub fn new(fields: Fields, expect: Expect) -> Self {
        Self { fields, expect, attempts: Vec::new(), answers: Answers::default(), last_fate: None }
    }

    /// One more attempt, answered (or not) as `answer` says.
    pub fn push(&mut self, answer: Answer) {
        let (acked, refused) = (answer.acked(), answer.refused());
        self.last_fate = Some(answer.fate);
        self.unanswered(answer.log);
        let a = &mut self.answers;
        a.last_status = answer.status;
        a.acked |= acked;
        a.refused |= refused;
    }

    /// One more attempt without a status (dropped before its answer, closed, held open).
    pub fn unanswered(&mut self, log: AttemptLog) {
        self.attempts.push(log);
        self.answers.attempts += 1;
        self.answers.last_status = None;
    }

    /// One more attempt the receiver held open past the bound (a stalled body).
    pub fn held_open(&mut self, log: AttemptLog) {
        self.unanswered(log);
        self.answers.held_open = true;
    }

    /// Into `book`: the credit, with its attempts, or the update's account.
    pub fn book(&self, book: &mut CreditBook) {
        let f = &self.fields;
        match f.kind {
            crate::wire::Kind::Credit => book.credit(&f.id, f.account, f.amount, self.answers.attempts),
            crate::wire::Kind::Update => book.unjudged(f.account),
        }
    }

    fn sent(&self) -> Sent {
        let kind = match self.fields.kind {
            crate::wire::Kind::Credit => Kind::Credit { amount: self.fields.amount },
            crate::wire::Kind::Update => Kind::Update { version: self.fields.version },
        };
        Sent { kind, account: self.fields.account, expect: self.expect, answers: self.answers }
    }
}

/// A probing check's deliveries, waiting for the observers.
#[derive(Debug, Clone)]
pub struct Probes {
    /// Which check.
    pub check: Check,
    /// Its events.
    pub events: Vec<Delivered>,
    /// What it is held to.
    pub rules: Rules,
    /// A line of evidence beyond the judge's (what was not sent, a stall's time).
    pub note: String,
    /// Pairs of its events, by index, that restate one change under two ids.
    pub pairs: Vec<(usize, usize)>,
}

/// Witnesses a class the judge keeps of a probing check's deliveries (a few dozen at most): more
/// than a report shows, so that a witness of a case with its own remedy is found past the first
/// few (`load::checked` shows those too).
const PROBE_WITNESSES: usize = 64;

impl Probes {
    /// `check`'s deliveries, held to failing on `fail`, with `require` observed.
    pub fn new(check: Check, fail: &[Class], require: &[Needs]) -> Self {
        let rules = Rules {
            fail: fail.iter().copied().collect(),
            warn: crate::judge::ClassSet::EMPTY,
            require: require.to_vec(),
            witnesses: PROBE_WITNESSES,
        };
        Self { check, events: Vec::new(), rules, note: String::new(), pairs: Vec::new() }
    }

    /// What the judge reads of them.
    pub fn history(&self) -> History {
        let ids = self.events.iter().map(|e| e.fields.id.clone()).collect();
        History::new(self.events.iter().map(Delivered::sent).collect(), Ids::Listed(ids))
            .with_twins(&self.pairs)
    }

    /// The attempts of a witness's subject: the event's, or every update's of the account.
    fn attempts(&self, s: Subject) -> Vec<AttemptLog> {
        match s {
            Subject::Event(i) => self.events.get(i).map(|e| e.attempts.clone()).unwrap_or_default(),
            Subject::Pair(a, b) => {
                let mut logs: Vec<AttemptLog> = [a, b]
                    .iter()
                    .filter_map(|&i| self.events.get(i))
                    .flat_map(|e| e.attempts.clone())
                    .collect();
                logs.sort_by(|x, y| x.at_ms.total_cmp(&y.at_ms));
                logs
            }
            Subject::Account(a) => {
                let mut logs: Vec<AttemptLog> = self
                    .events
                    .iter()
                    .filter(|e| e.fields.account == a)
                    .flat_map(|e| e.attempts.iter().cloned())
                    .collect();
                logs.sort_by(|x, y| x.at_ms.total_cmp(&y.at_ms));
                logs
            }
            Subject::Run => Vec::new(),
        }
    }

    /// The verdict, given the settled observation.
    pub fn judge(&self, seen: &Snapshot) -> CheckResult {
        self.judged(seen).0
    }

    /// The verdict as a check's result, and the judge's verdict it comes from.
    pub fn judged(&self, seen: &Snapshot) -> (CheckResult, Verdict) {
        let history = self.history();
        let verdict = judge(&history, &seen.evidence(&history), &self.rules);
        (checked(self.check, &verdict, &history, &|s| self.attempts(s), &self.note), verdict)
    }

    /// Its credits into `book`, and the accounts of its updates.
    pub fn book(&self, book: &mut CreditBook) {
        for e in &self.events {
            e.book(book);
        }
    }

    /// Its events acknowledged and applied exactly once (`seen` saw them once), which a late
    /// replay may send again.
    pub fn replayable(&self, seen: &Snapshot) -> Vec<Fields> {
        self.events
            .iter()
            .filter(|e| e.answers.acked && e.expect == Expect::Once && seen.applied(&e.fields.id) == (1, 1))
            .map(|e| e.fields.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::time::Instant;

    use super::*;
    use crate::audit::pulse::Pulse;
    use crate::sender::RetryPolicy;
    use crate::workload::WorkloadConfig;

    /// A load's attempts on the audit's clock keep causality with what the receiver saw: each
    /// was sent before the receiver had it and answered after. Counted from when the send was
    /// asked for instead of when it began, every attempt read 10 ms early, so an attempt cut by a
    /// crash check's kill seemed to end before the kill began (and the kill caught nothing).
    #[tokio::test]
    async fn a_loads_attempts_are_timed_on_the_audits_clock() {
        let seen = Arc::new(Mutex::new(Vec::<(String, Instant)>::new()));
        let record = seen.clone();
        let app = axum::Router::new().route(
            "/webhooks",
            axum::routing::post(move |headers: axum::http::HeaderMap| {
                let at = Instant::now();
                let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                record.lock().expect("arrivals").push((id, at));
                async { "ok" }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/webhooks", listener.local_addr().expect("addr"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let wire = Arc::new(Wire::hookbench(testkit::SECRET).expect("the secret"));
        let probe = Probe::new(&url, Duration::from_secs(5), Instant::now(), Arc::new(Pulse::default()))
            .expect("the URL");
        let ctx = Ctx::new(probe, wire.clone(), Accounts::new(Layout::Pooled, 1, 0));
        let plain = WorkloadConfig {
            events: 20,
            p_credit: 1.0,
            p_duplicate: 0.0,
            p_ack_lost: 0.0,
            p_concurrent: 0.0,
            p_shuffle: 0.0,
            ..WorkloadConfig::default()
        };
        let config = SenderConfig {
            rate: None,
            concurrency: 2,
            timeout: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            source: "test".into(),
            record: true,
            history: None,
            shard: crate::workload::Shard::WHOLE,
            start_at: None,
        };
        let workload = Workload::generate(&plain).expect("a workload");
        let load = ctx.send_load(&url, workload, wire.clone(), config).await.expect("sent");
        let arrived = seen.lock().expect("arrivals").clone();
        assert_eq!(load.sent.attempts.len(), arrived.len(), "every attempt reached the receiver once");
        for (id, at) in arrived {
            let event = wire.workload_index(&id).expect("an id of the load");
            let a = load.sent.attempts.iter().find(|a| a.event == event).expect("its attempt");
            let (sent, at, done) =
                (load.offset_ms + a.sent_ms, ctx.probe.ms_at(at), load.offset_ms + a.done_ms);
            assert!(sent <= at && at <= done, "{id}: sent {sent:.3}, arrived {at:.3}, answered {done:.3} ms");
        }
    }
}
