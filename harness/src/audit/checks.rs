//! The checklist's deliveries and their judgement. Each check sends its own events (ids and
//! accounts no other check uses), records every attempt, and says what it expects of each event;
//! once the observers have settled, [`Pending::judge`] compares that with what they saw.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Barrier;

use super::observe::Observation;
use super::probe::{Answer, Probe};
use super::verdict::{AttemptLog, Check, CheckResult, Status, Witness};
use crate::wire::{Fields, IdSpace, Kind, Wire};

/// How many witnesses a failing check names.
pub const WITNESSES: usize = 5;

/// What a check expects of one of its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Applied exactly once.
    Once,
    /// Refused with a 4xx and never applied.
    Refused,
    /// Not acknowledged (a 4xx or a closed connection) and never applied.
    NotAcked,
    /// Applied once if acknowledged; never twice.
    AtMostOnce,
}

/// One event a check sent: what it expects, and every attempt.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The event's id.
    pub id: String,
    /// Its fields (for a late replay).
    pub fields: Fields,
    /// What the check expects.
    pub expect: Expect,
    /// Every attempt, in order.
    pub attempts: Vec<AttemptLog>,
    /// Whether an attempt was answered 2xx.
    pub acked: bool,
    /// Whether an attempt was answered 4xx.
    pub refused: bool,
}

impl Sent {
    pub(super) fn new(fields: Fields, expect: Expect) -> Self {
        Self { id: fields.id.clone(), fields, expect, attempts: Vec::new(), acked: false, refused: false }
    }

    pub(super) fn push(&mut self, answer: Answer) {
        self.acked |= answer.acked();
        self.refused |= answer.refused();
        self.attempts.push(answer.log);
    }

    /// What is wrong with this event given what was observed, if anything.
    fn problem(&self, seen: &Observation) -> Option<String> {
        let (min, max) = seen.applied(&self.id);
        let acked_lost = self.acked && min == 0;
        match self.expect {
            Expect::Once if max > 1 => Some(format!("applied {max} times")),
            Expect::Once if acked_lost => Some("acknowledged with a 2xx and never applied".into()),
            Expect::Once if min == 0 => {
                let last = self.attempts.last().map_or("none", |a| a.outcome.as_str());
                Some(format!("never applied (last answer: {last})"))
            }
            Expect::Refused if self.acked => Some("answered 2xx".into()),
            Expect::Refused if !self.refused => Some("not refused with a 4xx".into()),
            Expect::NotAcked if self.acked => Some("answered 2xx".into()),
            Expect::Refused | Expect::NotAcked if max > 0 => Some(format!("applied {max} times")),
            Expect::AtMostOnce if max > 1 => Some(format!("applied {max} times")),
            Expect::AtMostOnce if acked_lost => Some("acknowledged with a 2xx and never applied".into()),
            _ => None,
        }
    }
}

/// A check's deliveries, waiting for the observers.
#[derive(Debug, Clone)]
pub struct Pending {
    /// Which check.
    pub check: Check,
    /// Its events.
    pub events: Vec<Sent>,
    /// For out-of-order: each account and the versions sent to it, in sending order.
    pub accounts: Vec<(i64, Vec<i64>, Vec<AttemptLog>)>,
    /// Findings that need no observer (a stalled body held open).
    pub findings: Vec<Witness>,
    /// A line of evidence beyond the counts.
    pub note: String,
}

impl Pending {
    fn new(check: Check) -> Self {
        Self { check, events: Vec::new(), accounts: Vec::new(), findings: Vec::new(), note: String::new() }
    }

    /// The verdict, given the settled observation.
    pub fn judge(&self, seen: &Observation) -> CheckResult {
        let mut witnesses = self.findings.clone();
        for e in &self.events {
            if let Some(problem) = e.problem(seen) {
                let observed = seen.describe(&e.id);
                witnesses.push(Witness { id: e.id.clone(), problem, attempts: e.attempts.clone(), observed });
            }
        }
        for (account, versions, attempts) in &self.accounts {
            let latest = versions.iter().copied().max().unwrap_or(0);
            let now = seen.states.get(account).copied();
            if now != Some(latest) {
                let observed =
                    now.map_or("no state for the account".to_string(), |v| format!("final version {v}"));
                witnesses.push(Witness {
                    id: format!("account {account}"),
                    problem: format!(
                        "final version is not the latest ({latest}); sent in the order {versions:?}"
                    ),
                    attempts: attempts.clone(),
                    observed,
                });
            }
        }
        let failed = witnesses.len();
        let total = self.events.len() + self.accounts.len();
        let status = if failed == 0 { Status::Pass } else { Status::Fail };
        let mut evidence = match status {
            Status::Pass => format!("{total} of {total} as expected"),
            _ => format!("{failed} of {total} not as expected: {}", witnesses[0].problem),
        };
        if !self.note.is_empty() {
            evidence = format!("{evidence}; {}", self.note);
        }
        witnesses.truncate(WITNESSES);
        CheckResult { check: self.check, status, evidence, witnesses }
    }
}

/// What the probing checks share: the receiver, the wire, and fresh ids and accounts.
pub struct Ctx {
    /// The receiver.
    pub probe: Probe,
    /// Bodies and signatures.
    pub wire: Arc<Wire>,
    /// The first account probes use (beyond the load's).
    pub next_account: AtomicI64,
}

fn now_s() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl Ctx {
    pub(super) fn account(&self) -> i64 {
        self.next_account.fetch_add(1, Ordering::Relaxed)
    }

    /// The run's wire for a load of its own: ids under `tag`, and `accounts` accounts no other
    /// check uses.
    pub fn load_wire(&self, tag: &str, accounts: u32) -> Wire {
        let account_base = self.next_account.fetch_add(i64::from(accounts), Ordering::Relaxed);
        let prefix = format!("{}{tag}", self.wire.ids.prefix);
        Wire { ids: IdSpace { prefix, account_base }, ..(*self.wire).clone() }
    }

    pub(super) fn credit(&self, tag: &str, n: usize, account: i64, amount: i64) -> Fields {
        let id = format!("{}{tag}_{n:04}", self.wire.ids.prefix);
        Fields {
            id,
            kind: Kind::Credit,
            account,
            amount,
            plan: String::new(),
            version: 0,
            created: now_s(),
            poisoned: false,
        }
    }

    fn update(&self, tag: &str, n: usize, account: i64, version: i64) -> Fields {
        let id = format!("{}{tag}_{n:04}", self.wire.ids.prefix);
        let plan = format!("plan_v{version}");
        Fields {
            id,
            kind: Kind::Update,
            account,
            amount: 0,
            plan,
            version,
            created: now_s() + version,
            poisoned: false,
        }
    }

    /// One signed attempt of `f` on a fresh connection.
    pub async fn deliver(&self, f: &Fields, note: &str) -> Answer {
        self.deliver_over(&self.wire, f, note).await
    }

    /// One attempt of `f` with `wire`'s body and signature, on a fresh connection.
    async fn deliver_over(&self, wire: &Wire, f: &Fields, note: &str) -> Answer {
        let (body, headers) = wire.attempt(f, now_s());
        self.probe.post(None, &headers, body, note).await
    }

    /// Attempts until a 2xx or a 4xx, at most `tries` times.
    async fn until_answered(&self, sent: &mut Sent, tries: usize, note: &str) {
        for _ in 0..tries {
            let answer = self.deliver(&sent.fields, note).await;
            let done = answer.acked() || answer.refused();
            sent.push(answer);
            if done {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Check 1: each event twice in a row, the second after the first's answer.
pub async fn sequential_duplicate(ctx: &Ctx, events: usize) -> Pending {
    let mut p = Pending::new(Check::SequentialDuplicate);
    for n in 0..events {
        let mut sent = Sent::new(ctx.credit("seq", n, ctx.account(), 100 + n as i64), Expect::Once);
        ctx.until_answered(&mut sent, 3, "first delivery").await;
        sent.push(ctx.deliver(&sent.fields, "sequential duplicate").await);
        p.events.push(sent);
    }
    p
}

/// Check 2: `copies` copies of each event, released together by a barrier, each on a connection
/// of its own.
pub async fn concurrent_copies(ctx: &Arc<Ctx>, events: usize, copies: usize) -> Pending {
    let mut p = Pending::new(Check::ConcurrentCopies);
    for n in 0..events {
        let mut sent = Sent::new(ctx.credit("cc", n, ctx.account(), 100 + n as i64), Expect::Once);
        let barrier = Arc::new(Barrier::new(copies));
        let mut tasks = tokio::task::JoinSet::new();
        for c in 0..copies {
            let (ctx, f, barrier) = (ctx.clone(), sent.fields.clone(), barrier.clone());
            tasks.spawn(async move {
                let (body, headers) = ctx.wire.attempt(&f, now_s());
                barrier.wait().await;
                ctx.probe.post(None, &headers, body, &format!("copy {} of {copies}", c + 1)).await
            });
        }
        let mut answers: Vec<Answer> = tasks.join_all().await;
        answers.sort_by(|a, b| a.log.at_ms.total_cmp(&b.log.at_ms));
        for a in answers {
            sent.push(a);
        }
        if !sent.acked {
            ctx.until_answered(&mut sent, 3, "retry after no copy was acknowledged").await;
        }
        p.events.push(sent);
    }
    p
}

/// Check 3: each event sent whole and its connection dropped before the answer, then retried.
pub async fn lost_ack(ctx: &Ctx, events: usize) -> Pending {
    let mut p = Pending::new(Check::LostAck);
    for n in 0..events {
        let mut sent = Sent::new(ctx.credit("ack", n, ctx.account(), 100 + n as i64), Expect::Once);
        let (body, headers) = ctx.wire.attempt(&sent.fields, now_s());
        sent.attempts.push(ctx.probe.post_and_drop(&headers, &body, Duration::from_millis(50)).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
        ctx.until_answered(&mut sent, 5, "retry").await;
        p.events.push(sent);
    }
    p
}

/// Check 4: each account's updates, versions 1 to `versions`, in a shuffled order.
pub async fn out_of_order(ctx: &Ctx, accounts: usize, versions: i64) -> Pending {
    let mut p = Pending::new(Check::OutOfOrder);
    let mut n = 0;
    for a in 0..accounts {
        let account = ctx.account();
        let mut order: Vec<i64> = (1..=versions).collect();
        // A fixed interleaving per account: the latest is never last.
        let len = order.len();
        order.rotate_left(a % len + 1);
        if order.last() == Some(&versions) {
            order.swap(0, len - 1);
        }
        let mut logs = Vec::new();
        for &v in &order {
            let f = ctx.update("ooo", n, account, v);
            n += 1;
            let mut sent = Sent::new(f, Expect::AtMostOnce);
            ctx.until_answered(&mut sent, 3, &format!("version {v}")).await;
            logs.extend(sent.attempts);
        }
        p.accounts.push((account, order, logs));
    }
    p
}

/// Check 6: one event signed with each secret alone, accepted; one signed with a secret no
/// receiver holds, refused.
pub async fn secret_rotation(ctx: &Ctx) -> Pending {
    let mut p = Pending::new(Check::SecretRotation);
    let signer = &ctx.wire.signer;
    for i in 0..signer.secrets() {
        let f = ctx.credit("rot", i, ctx.account(), 100);
        let mut sent = Sent::new(f, Expect::Once);
        let alone = ctx.wire.signed_by(signer.only(i));
        sent.push(
            ctx.deliver_over(&alone, &sent.fields, &format!("signed with secret {} alone", i + 1)).await,
        );
        p.events.push(sent);
    }
    let f = ctx.credit("rot", signer.secrets(), ctx.account(), 100);
    let mut sent = Sent::new(f, Expect::Refused);
    let stranger = ctx.wire.signed_by(signer.stranger());
    sent.push(ctx.deliver_over(&stranger, &sent.fields, "signed with neither secret").await);
    p.events.push(sent);
    p
}

/// How the hostile-input check may hold its requests.
#[derive(Debug, Clone, Copy)]
pub struct Hostility {
    /// Bytes of the oversized body.
    pub oversized_bytes: usize,
    /// How long a stalled body may be held before it counts against the receiver.
    pub stall_wait: Duration,
}

/// Check 7: requests that must be refused, and the cases that broke hookbench's own receivers.
pub async fn hostile_input(ctx: &Ctx, h: Hostility) -> Pending {
    let mut p = Pending::new(Check::HostileInput);
    let scheme = ctx.wire.signer.scheme();
    let mut skipped = Vec::new();
    let mut n = 0;
    let next = |ctx: &Ctx, n: &mut usize| {
        *n += 1;
        ctx.credit("hos", *n, ctx.account(), 100)
    };

    // Refused outright.
    if scheme.signs() {
        let f = next(ctx, &mut n);
        let (_, headers) = ctx.wire.attempt(&f, now_s());
        let mut tampered = f.clone();
        tampered.amount += 1_000_000;
        let mut sent = Sent::new(f, Expect::Refused);
        sent.push(ctx.probe.post(None, &headers, ctx.wire.body(&tampered), "tampered body").await);
        p.events.push(sent);

        let f = next(ctx, &mut n);
        let mut sent = Sent::new(f, Expect::Refused);
        let stranger = ctx.wire.signed_by(ctx.wire.signer.stranger());
        sent.push(ctx.deliver_over(&stranger, &sent.fields, "wrong secret").await);
        p.events.push(sent);

        let f = next(ctx, &mut n);
        let mut sent = Sent::new(f, Expect::Refused);
        let body = ctx.wire.body(&sent.fields);
        sent.push(
            ctx.probe
                .post(None, &[("content-type", "application/json".into())], body, "no signature headers")
                .await,
        );
        p.events.push(sent);
    } else {
        skipped.push("tampered, wrong-secret and unsigned requests (--signing none)");
    }
    if scheme.has_timestamp() {
        for (offset, note) in [(-3600, "timestamp an hour old"), (3600, "timestamp an hour ahead")] {
            let f = next(ctx, &mut n);
            let (body, headers) = ctx.wire.attempt(&f, now_s() + offset);
            let mut sent = Sent::new(f, Expect::Refused);
            sent.push(ctx.probe.post(None, &headers, body, note).await);
            p.events.push(sent);
        }
    } else {
        skipped.push("stale and future timestamps (the scheme signs none)");
    }
    let f = next(ctx, &mut n);
    let malformed = Bytes::from(format!("{{\"id\": \"{}\", \"amount\": ", f.id));
    let headers = ctx.wire.headers(&f, &malformed, now_s());
    let mut sent = Sent::new(f, Expect::Refused);
    sent.push(ctx.probe.post(None, &headers, malformed, "malformed JSON, signed").await);
    p.events.push(sent);

    let f = next(ctx, &mut n);
    let oversized = oversized_body(&f.id, h.oversized_bytes);
    let headers = ctx.wire.headers(&f, &oversized, now_s());
    let mut sent = Sent::new(f, Expect::NotAcked);
    sent.push(
        ctx.probe.post(None, &headers, oversized, &format!("{} byte body, signed", h.oversized_bytes)).await,
    );
    p.events.push(sent);

    // The cases that broke hookbench's own receivers.
    let f = next(ctx, &mut n);
    let (body, headers) = ctx.wire.attempt(&f, now_s());
    let mut sent = Sent::new(f, Expect::AtMostOnce);
    sent.push(ctx.probe.post(None, &headers, body.clone(), "to the URL").await);
    for other in other_paths(ctx.probe.path()) {
        sent.push(
            ctx.probe
                .post(Some(&other), &headers, body.clone(), &format!("the same signed delivery to {other}"))
                .await,
        );
    }
    p.events.push(sent);

    let f = next(ctx, &mut n);
    let mut sent = Sent::new(f.clone(), Expect::AtMostOnce);
    sent.push(ctx.deliver(&f, "first body").await);
    let mut rebodied = f;
    rebodied.amount = 999;
    sent.push(ctx.deliver(&rebodied, "the same id with another body").await);
    p.events.push(sent);

    let account = ctx.account();
    for i in 0..2 {
        n += 1;
        let f = ctx.credit("hos", n, account, 1 << 62);
        let mut sent = Sent::new(f, Expect::AtMostOnce);
        let note = format!("credit {} of 2 of 2^62 to one account (their sum overflows 64 bits)", i + 1);
        sent.push(ctx.deliver(&sent.fields, &note).await);
        p.events.push(sent);
    }

    let f = next(ctx, &mut n);
    let (body, headers) = ctx.wire.attempt(&f, now_s());
    let (took, log) = ctx.probe.stall(&headers, 1_000_000, &body[..body.len().min(10)], h.stall_wait).await;
    if took.is_none() {
        p.findings.push(Witness {
            id: f.id.clone(),
            problem: format!(
                "a body stalled after 10 of 1,000,000 bytes was still held after {:?}",
                h.stall_wait
            ),
            attempts: vec![log],
            observed: "no timeout".into(),
        });
    }
    let stall = took.map_or("not timed out".to_string(), |t| {
        format!("stalled body closed after {:.1} s", t.as_secs_f64())
    });
    p.note = if skipped.is_empty() { stall } else { format!("{stall}; not sent: {}", skipped.join("; ")) };
    p
}

fn oversized_body(id: &str, bytes: usize) -> Bytes {
    let mut body = format!("{{\"id\":\"{id}\",\"padding\":\"").into_bytes();
    body.resize(bytes.saturating_sub(2).max(body.len()), b'x');
    body.extend_from_slice(b"\"}");
    Bytes::from(body)
}

/// Other paths on the same receiver: the last segment changed, and one added.
fn other_paths(path: &str) -> Vec<String> {
    let path = path.split('?').next().unwrap_or(path).trim_end_matches('/');
    let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
    vec![format!("{parent}/hookbench-other"), format!("{path}-replayed")]
}

/// Check 5, after the run: each event re-sent once with a fresh signature.
pub async fn late_replay(ctx: &Ctx, sample: &[Fields]) -> Pending {
    let mut p = Pending::new(Check::LateReplay);
    for f in sample {
        let mut sent = Sent::new(f.clone(), Expect::Once);
        sent.push(ctx.deliver(f, "late replay").await);
        p.events.push(sent);
    }
    p
}

/// The replay sample: acknowledged events applied exactly once, up to `n`, spread over the checks.
pub fn replay_sample(pending: &[Pending], seen: &Observation, n: usize) -> Vec<Fields> {
    let mut by_check: HashMap<Check, Vec<&Sent>> = HashMap::new();
    for p in pending {
        for e in &p.events {
            if e.acked && e.expect == Expect::Once && seen.applied(&e.id) == (1, 1) {
                by_check.entry(p.check).or_default().push(e);
            }
        }
    }
    let mut sample = Vec::new();
    let mut round = 0;
    while sample.len() < n && by_check.values().any(|v| v.len() > round) {
        let mut checks: Vec<_> = by_check.keys().copied().collect();
        checks.sort();
        for c in checks {
            if let Some(e) = by_check[&c].get(round)
                && sample.len() < n
            {
                sample.push(e.fields.clone());
            }
        }
        round += 1;
    }
    sample
}

/// Late replay's verdict: counts after the replay against counts before it.
pub fn judge_replay(p: &Pending, before: &Observation, after: &Observation) -> CheckResult {
    let mut witnesses = Vec::new();
    for e in &p.events {
        let (_, was) = before.applied(&e.id);
        let (_, now) = after.applied(&e.id);
        if now > was {
            witnesses.push(Witness {
                id: e.id.clone(),
                problem: format!("applied again: {was} before the replay, {now} after"),
                attempts: e.attempts.clone(),
                observed: after.describe(&e.id),
            });
        }
    }
    let total = p.events.len();
    let (status, evidence) = if total == 0 {
        return CheckResult::skipped(
            Check::LateReplay,
            "no event was acknowledged and applied once to replay",
        );
    } else if witnesses.is_empty() {
        (Status::Pass, format!("{total} acknowledged events re-sent; none applied again; {}", p.note))
    } else {
        (Status::Fail, format!("{} of {total} re-sent events applied again; {}", witnesses.len(), p.note))
    };
    witnesses.truncate(WITNESSES);
    CheckResult { check: Check::LateReplay, status, evidence, witnesses }
}
