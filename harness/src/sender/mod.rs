//! The sender: the workload's delivery plan sent as real, signed, parallel HTTP deliveries.
//!
//! Groups leave at their planned times (open loop at `rate` events per second, plan position
//! `at` becoming second `at / rate`, waited for by a `timerfd` pacer, not tokio's millisecond
//! timer), with at most `concurrency` requests in flight; a group
//! waiting for a slot keeps its planned time, so latency measured from it is corrected for
//! coordinated omission. The send runs on one lane per core (a thread with a current-thread
//! runtime, its own connections, an equal share of the concurrency, every n-th group of the plan),
//! so a response wakes its task on the thread that read it. Each group runs in its own task on its
//! lane; the copies of a concurrent group run in their own tasks, are released together by a
//! barrier and go to different workers over different connections. Every attempt is signed afresh (a new timestamp, the same delivery id),
//! its body and headers from the run's [`Wire`]. A 2xx whose ack the article's draw says was lost is dropped and counted as a
//! timeout; 5xx, timeouts and connection errors are retried with exponential backoff and full
//! jitter. Attempt numbers, lost acks and jitter draws are keyed as in the article.
//!
//! A sharded send (`bench --shard I/N`, [`Shard`]) sends only the groups of the events its shard
//! holds, on a clock that starts at `start_at` on the wall clock, so that shards in other
//! processes keep the same planned times.

mod pace;
mod pacer;
mod pool;
mod retry;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use std::sync::Mutex;

use bytes::Bytes;
use tokio::sync::{Barrier, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

pub use pace::Pace;
pub use retry::RetryPolicy;

use crate::history::{AttemptLine, Fate, Line, Tap};
use crate::stats::{CounterSnapshot, Counters, Histograms, Latency, LatencyBuckets, Percentiles, Spectrum};
use crate::wire::{Fields, Wire};
use crate::workload::Shard;
use crate::workload::{Group, Workload};

/// How the sender sends.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    /// Events per second (plan positions per second); `None` sends as fast as the concurrency
    /// allows.
    pub rate: Option<f64>,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// How long an attempt may take before it counts as a timeout.
    pub timeout: Duration,
    /// Retries.
    pub retry: RetryPolicy,
    /// The `{source}` in `/webhooks/{source}`.
    pub source: String,
    /// Keep every attempt ([`SendReport::attempts`]), for witnesses.
    pub record: bool,
    /// Write every attempt to the run's history, as it happens.
    pub history: Option<Tap>,
    /// The part of the plan to send: the events this shard holds ([`Shard::WHOLE`]: all).
    pub shard: Shard,
    /// When the plan's first position is due, on the wall clock, so that shards in different
    /// processes keep one open-loop clock (`None`: 10 ms from now). A send that starts after it
    /// sends what is already due at once and still counts latencies from the planned times.
    pub start_at: Option<jiff::Timestamp>,
}

/// Why a send could not start.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// A target URL is not `http://host:port/path`.
    #[error("bad target URL: {0}")]
    BadUrl(String),
    /// A sender thread could not start, or ended without finishing.
    #[error("the sender's threads: {0}")]
    Thread(String),
}

/// What a send produced.
#[derive(Debug, Clone)]
pub struct SendReport {
    /// Counts of attempts and outcomes.
    pub counters: CounterSnapshot,
    /// Latency from each attempt's planned time to its response (coordinated omission corrected).
    pub latency_intended: Percentiles,
    /// Latency from each answered attempt's actual send to its answer (attempts with no answer,
    /// timed out or without a connection, are counted apart and left out).
    pub latency_actual: Percentiles,
    /// The planned-send latencies by bucket.
    pub latency_buckets: LatencyBuckets,
    /// The percentile spectrum from the planned send (coordinated omission corrected).
    pub spectrum_intended: Spectrum,
    /// The percentile spectrum from the actual send.
    pub spectrum_actual: Spectrum,
    /// From the first planned send to the last response.
    pub elapsed: Duration,
    /// Per workload event: whether any attempt was answered with a 2xx (acknowledged, even when
    /// the article's lost-ack draw then dropped the answer).
    pub acked: Vec<bool>,
    /// Per workload event: whether an attempt was refused with a 4xx.
    pub refused: Vec<bool>,
    /// Per workload event: attempts sent.
    pub tries: Vec<u32>,
    /// Per workload event: its last attempt's status (0: it had none, a timeout or no connection).
    pub last_status: Vec<u16>,
    /// Every attempt, in the order they finished, when [`SenderConfig::record`] asked for them.
    pub attempts: Vec<AttemptRecord>,
    /// The full latency histograms (what a shard hands to `merge`).
    pub histograms: Arc<Histograms>,
    /// How long after [`SenderConfig::start_at`] the send could start (zero when on time).
    pub late_by: Duration,
    /// The instant the plan's first position was due: what every attempt's `sent_ms` and
    /// `done_ms` count from (`None` for shards' reports added up).
    pub started: Option<Instant>,
    /// How the send kept its plan: the planned and achieved rates (none for shards' reports
    /// added up).
    pub pace: Pace,
}

impl SendReport {
    /// A report of `counters` and `histograms` over `elapsed`: a send's, or shards' added up
    /// (without their per-event flags and attempts, which `merge` does not need).
    pub fn from_histograms(
        counters: CounterSnapshot,
        histograms: Arc<Histograms>,
        elapsed: Duration,
    ) -> Self {
        let Histograms { intended, actual } = &*histograms;
        Self {
            counters,
            latency_intended: intended.percentiles(),
            latency_actual: actual.percentiles(),
            latency_buckets: intended.buckets(),
            spectrum_intended: intended.spectrum(),
            spectrum_actual: actual.spectrum(),
            elapsed,
            acked: Vec::new(),
            refused: Vec::new(),
            tries: Vec::new(),
            last_status: Vec::new(),
            attempts: Vec::new(),
            histograms,
            late_by: Duration::ZERO,
            started: None,
            pace: Pace::default(),
        }
    }
}

/// One attempt as the sender saw it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct AttemptRecord {
    /// The workload event's index.
    pub event: usize,
    /// The attempt's number for its event (1 first).
    pub attempt: u32,
    /// When it was planned (its first attempt at the plan's time, a retry at its backoff's end),
    /// in milliseconds from the start of the send (0 in a shard's partial written before it was
    /// kept).
    #[serde(default)]
    pub planned_ms: f64,
    /// When it was sent, in milliseconds from the start of the send.
    pub sent_ms: f64,
    /// When its answer (or the lack of one) was known.
    pub done_ms: f64,
    /// The worker URL's index.
    pub target: usize,
    /// The connection it went over (numbered from 1 as connections open; 0: none opened).
    pub connection: u64,
    /// How it ended: its status, `<status> ack lost`, `timeout`, `no-connection` or `reset`.
    #[schemars(with = "String")]
    pub outcome: Fate,
}

/// The live view of a send in progress (for progress bars).
#[derive(Debug, Default)]
pub struct Progress {
    /// Counters, updated as attempts finish.
    pub counters: Counters,
}

/// What every lane of a send shares: the plan, what became of each event, the counters, and the
/// latencies the lanes merge into when they finish.
struct Shared {
    workload: Arc<Workload>,
    wire: Arc<Wire>,
    config: SenderConfig,
    start: Instant,
    acked: Vec<AtomicBool>,
    refused: Vec<AtomicBool>,
    last_status: Vec<AtomicU16>,
    // A std Mutex: held for one push, never across an await.
    records: Mutex<Vec<AttemptRecord>>,
    // A std Mutex: held for one event's first attempt, never across an await.
    pace: Mutex<Pace>,
    attempts: Vec<AtomicU32>,
    progress: Arc<Progress>,
    latency: Arc<Histograms>,
}

/// One lane of a send: a thread with a current-thread runtime, sending every `lanes`-th group
/// over connections of its own, with its own share of the concurrency and its own latency
/// histograms. A response then wakes the task that waits for it on the thread that read it, as
/// in wrk's and oha's thread model, instead of waking a task on another thread.
struct Ctx {
    shared: Arc<Shared>,
    pool: pool::Pool,
    slots: Arc<Semaphore>,
    next_worker: AtomicUsize,
    intended: Latency,
    actual: Latency,
}

impl std::ops::Deref for Ctx {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// One copy of a delivery, as it starts: its event, first attempt number, worker, planned time,
/// concurrency slot, and the barrier that releases it with its twin.
struct Copy {
    event: usize,
    group: usize,
    copy: u8,
    attempt: u32,
    worker: usize,
    planned: Instant,
    slot: Option<OwnedSemaphorePermit>,
    barrier: Option<Arc<Barrier>>,
}

/// One attempt's times: planned, sent, answered.
struct Times {
    planned: Instant,
    sent: Instant,
    done: Instant,
}

impl Ctx {
    /// An event's first attempt, planned at `planned` and sent at `sent`, into the send's pace.
    fn first_attempt(&self, planned: Instant, sent: Instant) {
        let ms = |t: Instant| t.saturating_duration_since(self.start).as_secs_f64() * 1e3;
        if let Ok(mut pace) = self.pace.lock() {
            pace.first_attempt(ms(planned), ms(sent));
        }
    }

    fn next_attempt(&self, event: usize) -> u32 {
        self.attempts[event].fetch_add(1, Ordering::Relaxed) + 1
    }

    fn pick_worker(&self) -> usize {
        self.next_worker.fetch_add(1, Ordering::Relaxed) % self.pool.len()
    }

    /// One attempt, signed afresh; how it ended and the connection it went over.
    /// `retry`: the retry's number (1-based) and how the attempt before it ended, for the headers
    /// its provider adds to a retry.
    async fn send(
        &self,
        worker: usize,
        fields: &Fields,
        body: &Bytes,
        retry: Option<(usize, Fate)>,
    ) -> (Fate, u64) {
        let ts = jiff::Timestamp::now().as_second();
        // A body that carries its attempt's time (Linear's) is written again for each attempt.
        let rewritten;
        let body = if self.wire.payload.timestamped() {
            rewritten = self.wire.body(fields, ts);
            &rewritten
        } else {
            body
        };
        let mut headers = self.wire.headers(fields, body, ts);
        if let Some((n, last)) = retry {
            headers.extend(self.wire.retry_headers(n, last));
        }
        let connection = pool::Connection::default();
        let post = self.pool.post(worker, &headers, body, &connection);
        let fate = match tokio::time::timeout(self.config.timeout, post).await {
            Ok(Ok(answer)) => {
                if answer.db_conflict && answer.status >= 500 {
                    Counters::bump(&self.progress.counters.db_conflicts);
                }
                Fate::Answered(answer.status)
            }
            Ok(Err(pool::SendError::Connect)) => Fate::NoConnection,
            Ok(Err(pool::SendError::Broken)) => Fate::Reset,
            Err(_) => Fate::TimedOut,
        };
        (fate, connection.id())
    }

    fn record(&self, event: usize, attempt: u32, worker: usize, times: Times, sent: (Fate, u64)) {
        if !self.config.record {
            return;
        }
        let ms = |t: Instant| t.saturating_duration_since(self.start).as_secs_f64() * 1e3;
        let record = AttemptRecord {
            event,
            attempt,
            planned_ms: ms(times.planned),
            sent_ms: ms(times.sent),
            done_ms: ms(times.done),
            target: worker,
            connection: sent.1,
            outcome: sent.0,
        };
        if let Ok(mut records) = self.records.lock() {
            records.push(record);
        }
    }

    /// The attempt's line in the run's history, when there is one.
    fn history(&self, id: &str, copy: &Copy, times: &Times, sent: (Fate, u64)) {
        let Some(tap) = &self.config.history else { return };
        let ms = |t: Instant| t.saturating_duration_since(self.start).as_secs_f64() * 1e3;
        let e = &self.workload.events[copy.event];
        let fate = sent.0;
        tap.send(Line::Attempt(AttemptLine {
            cell: tap.cell().to_string(),
            event: id.to_string(),
            kind: if e.is_credit() { "credit" } else { "update" }.to_string(),
            group: copy.group,
            copy: copy.copy,
            attempt: copy.attempt,
            planned_ms: ms(times.planned),
            sent_ms: ms(times.sent),
            answered_ms: ms(times.done),
            worker: copy.worker,
            connection: sent.1,
            status: fate.status(),
            outcome: fate.outcome(),
            detail: fate.detail().map(str::to_string),
        }));
    }

    /// One copy's delivery: attempts until acknowledged, refused with a 4xx, or given up.
    async fn deliver(&self, fields: &Fields, body: &Bytes, copy: Copy) {
        let Copy { event, group, copy, mut attempt, mut worker, mut planned, mut slot, barrier } = copy;
        let w = &self.workload;
        let id = w.events[event].id();
        let c = &self.progress.counters;
        if let Some(b) = barrier {
            b.wait().await;
        }
        let mut last = None;
        for retry in 0.. {
            let sent = Instant::now();
            Counters::bump(&c.deliveries);
            if retry > 0 {
                Counters::bump(&c.retries);
            }
            if retry == 0 && attempt == 1 {
                self.first_attempt(planned, sent);
            }
            let (fate, connection) = self.send(worker, fields, body, last.map(|f| (retry as usize, f))).await;
            // The article's lost ack: the receiver committed, the sender never heard.
            let fate = match fate {
                Fate::Answered(s) if fate.stored() && w.ack_lost(id, attempt) => Fate::AckLost(s),
                f => f,
            };
            last = Some(fate);
            let done = Instant::now();
            self.last_status[event].store(fate.status().unwrap_or(0), Ordering::Relaxed);
            self.record(event, attempt, worker, Times { planned, sent, done }, (fate, connection));
            if w.is_poisoned(event) {
                Counters::bump(&c.poison_attempts);
                if !fate.stored() {
                    Counters::bump(&c.poison_non_2xx);
                }
            }
            self.intended.record(done - planned);
            // An answer's own time: a refused connection, a reset or a timeout is no answer, and
            // counted apart, so it never lowers (or raises) what the receiver took to answer.
            if fate.answered() {
                self.actual.record(done - sent);
            }
            let this = Copy { event, group, copy, attempt, worker, planned, slot: None, barrier: None };
            self.history(&fields.id, &this, &Times { planned, sent, done }, (fate, connection));
            c.count(fate);
            if fate.stored() {
                self.acked[event].store(true, Ordering::Relaxed);
            }
            let again = match fate {
                Fate::Answered(s) if (200..300).contains(&s) => false,
                Fate::Answered(s) if (400..500).contains(&s) => {
                    self.refused[event].store(true, Ordering::Relaxed);
                    false // a bad request does not get better by sending it again
                }
                Fate::Answered(_) | Fate::AckLost(_) | Fate::TimedOut | Fate::NoConnection | Fate::Reset => {
                    true
                }
            };
            if !again {
                return;
            }
            if retry + 1 >= self.config.retry.max_attempts {
                Counters::bump(&c.gave_up);
                return;
            }
            let draw = w.keyed(&[&id, &attempt, &"retryAt"]);
            let delay = self.config.retry.delay(retry, draw);
            drop(slot.take());
            planned = Instant::now() + delay;
            tokio::time::sleep_until(planned).await;
            slot = self.slots.clone().acquire_owned().await.ok();
            attempt = self.next_attempt(event);
            worker = (worker + 1) % self.pool.len();
        }
    }

    async fn group(
        self: Arc<Self>,
        group: usize,
        g: Group,
        planned: Instant,
        mut slots: OwnedSemaphorePermit,
    ) {
        let event = g.event as usize;
        let fields = self.wire.fields(&self.workload, event);
        let body = self.wire.body(&fields, jiff::Timestamp::now().as_second());
        if g.copies <= 1 {
            let attempt = self.next_attempt(event);
            let worker = self.pick_worker();
            let copy =
                Copy { event, group, copy: 0, attempt, worker, planned, slot: Some(slots), barrier: None };
            self.deliver(&fields, &body, copy).await;
        } else {
            // Each copy in its own task, to its own worker, released together.
            let barrier = Arc::new(Barrier::new(usize::from(g.copies)));
            let first_worker = self.pick_worker();
            let mut copies = JoinSet::new();
            for copy in 0..usize::from(g.copies) {
                let last = copy + 1 == usize::from(g.copies);
                let slot = if last { Some(take_rest(&mut slots)) } else { slots.split(1) };
                let attempt = self.next_attempt(event);
                let worker = (first_worker + copy) % self.pool.len();
                let (ctx, fields, body, barrier) =
                    (self.clone(), fields.clone(), body.clone(), barrier.clone());
                copies.spawn(async move {
                    let copy = Copy {
                        event,
                        group,
                        copy: copy as u8,
                        attempt,
                        worker,
                        planned,
                        slot,
                        barrier: Some(barrier),
                    };
                    ctx.deliver(&fields, &body, copy).await;
                });
            }
            while copies.join_next().await.is_some() {}
        }
        Counters::bump(&self.progress.counters.groups_done);
    }
}

/// Moves what is left of a permit out of `slots`, leaving an empty one behind.
fn take_rest(slots: &mut OwnedSemaphorePermit) -> OwnedSemaphorePermit {
    let n = slots.num_permits();
    slots.split(n).unwrap_or_else(|| unreachable!("a permit can always be split by its own size"))
}

/// How many lanes a send runs on: one per core, but no more than leaves each lane room for the
/// largest group's copies within the concurrency.
fn lane_count(concurrency: usize, most_copies: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    cores.min(concurrency / most_copies.max(1)).max(1)
}

/// Lane `lane`'s share of `concurrency`: an equal part, the remainder to the first lanes, so
/// that the shares add up to it.
fn share(concurrency: usize, lanes: usize, lane: usize) -> usize {
    concurrency / lanes + usize::from(lane < concurrency % lanes)
}

/// The longest wait a plan can hold: far past any run, short of any overflow.
const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Seconds as a duration, never panicking: negative or NaN is zero, too many is [`FAR`]. A rate
/// or a time read from outside can make any quotient; the flags bound them, this bounds the rest.
pub fn seconds(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs.max(0.0)).map_or(FAR, |d| d.min(FAR))
}

/// `start` plus `secs` seconds (as [`seconds`]), never overflowing.
pub fn after(start: Instant, secs: f64) -> Instant {
    let wait = seconds(secs);
    // FAR fits any Instant on Linux; were it not to, a year is still never "now".
    start
        .checked_add(wait)
        .or_else(|| start.checked_add(Duration::from_secs(365 * 24 * 3600)))
        .unwrap_or(start)
}

/// Sends lane `lane`'s groups (every `lanes`-th, from `lane`) at their planned times.
async fn send_lane(ctx: Arc<Ctx>, lane: usize, lanes: usize) {
    let (workload, start, rate) = (ctx.workload.clone(), ctx.start, ctx.config.rate);
    let plan_shard = ctx.config.shard;
    let first_at = workload.groups.first().map_or(0.0, |g| g.at);
    let mut tasks = JoinSet::new();
    let mut pacer = pacer::Pacer::new();
    let groups = workload.groups.iter().enumerate().filter(|(_, g)| plan_shard.holds(g.event));
    for (group, g) in groups.skip(lane).step_by(lanes) {
        let planned = match rate {
            Some(rate) => {
                let planned = after(start, (g.at - first_at) / rate);
                pacer.until(planned).await;
                planned
            }
            None => {
                // Unpaced, but not before the run's start (a shard's --start-at): a time before
                // it would read as 0 ms in the history, unlike the latency the histogram holds.
                pacer.until(start).await;
                Instant::now()
            }
        };
        if ctx.slots.available_permits() < usize::from(g.copies)
            && let Ok(mut pace) = ctx.pace.lock()
        {
            pace.waited_for_cap += 1;
        }
        let Ok(slots) = ctx.slots.clone().acquire_many_owned(u32::from(g.copies)).await else {
            break;
        };
        tasks.spawn(ctx.clone().group(group, *g, planned, slots));
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    ctx.shared.latency.intended.merge(&ctx.intended);
    ctx.shared.latency.actual.merge(&ctx.actual);
}

/// Sends `workload`'s plan to the workers at `urls`, bodies and signatures from `wire`, on one
/// lane per core.
pub async fn run(
    workload: Arc<Workload>,
    urls: Vec<String>,
    wire: Arc<Wire>,
    config: SenderConfig,
    progress: Arc<Progress>,
) -> Result<SendReport, SendError> {
    // Each lane holds its share of the concurrency, at least the largest group's copies.
    let most_copies = workload.groups.iter().map(|g| usize::from(g.copies)).max().unwrap_or(1);
    let concurrency = config.concurrency.max(2).max(most_copies);
    let lanes = lane_count(concurrency, most_copies);
    let opened = Arc::new(AtomicU64::new(0));
    let mut pools = Vec::with_capacity(lanes);
    for _ in 0..lanes {
        let pool = pool::Pool::new(&urls, opened.clone())
            .map_err(|e| SendError::BadUrl(e.to_string()))?
            .with_query(wire.path_query());
        if pool.is_empty() {
            return Err(SendError::BadUrl("no worker to send to".to_string()));
        }
        pools.push(pool);
    }
    let n = workload.events.len();
    let (start, late_by) = start_instant(config.start_at);
    let pace = Mutex::new(Pace::new(concurrency, config.rate));
    let shared = Arc::new(Shared {
        workload,
        wire,
        config,
        start,
        acked: (0..n).map(|_| AtomicBool::new(false)).collect(),
        refused: (0..n).map(|_| AtomicBool::new(false)).collect(),
        last_status: (0..n).map(|_| AtomicU16::new(0)).collect(),
        records: Mutex::new(Vec::new()),
        pace,
        attempts: (0..n).map(|_| AtomicU32::new(0)).collect(),
        progress,
        latency: Arc::default(),
    });
    let mut finished = Vec::with_capacity(lanes);
    for (lane, pool) in pools.into_iter().enumerate() {
        let ctx = Arc::new(Ctx {
            shared: shared.clone(),
            pool,
            slots: Arc::new(Semaphore::new(share(concurrency, lanes, lane))),
            // Shards start on different workers.
            next_worker: AtomicUsize::new(lane),
            intended: Latency::default(),
            actual: Latency::default(),
        });
        let (done, finish) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(format!("sender-{lane}"))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
                if let Ok(runtime) = runtime {
                    runtime.block_on(send_lane(ctx, lane, lanes));
                }
                let _ = done.send(());
            })
            .map_err(|e| SendError::Thread(e.to_string()))?;
        finished.push(finish);
    }
    for finish in finished {
        finish.await.map_err(|_| SendError::Thread("a sender thread ended early".to_string()))?;
    }
    let elapsed = start.elapsed();
    let flags = |v: &[AtomicBool]| v.iter().map(|b| b.load(Ordering::Relaxed)).collect();
    let s = &shared;
    Ok(SendReport {
        acked: flags(&s.acked),
        refused: flags(&s.refused),
        tries: s.attempts.iter().map(|a| a.load(Ordering::Relaxed)).collect(),
        last_status: s.last_status.iter().map(|a| a.load(Ordering::Relaxed)).collect(),
        attempts: s.records.lock().map(|mut r| std::mem::take(&mut *r)).unwrap_or_default(),
        late_by,
        started: Some(start),
        pace: s.pace.lock().map(|p| *p).unwrap_or_default(),
        ..SendReport::from_histograms(s.progress.counters.snapshot(), s.latency.clone(), elapsed)
    })
}

/// The instant the plan's first position is due, and how late the send is for it: `start_at` on
/// the wall clock, or 10 ms from now.
fn start_instant(start_at: Option<jiff::Timestamp>) -> (Instant, Duration) {
    let now = Instant::now();
    let Some(at) = start_at else { return (now + Duration::from_millis(10), Duration::ZERO) };
    let ahead = at.duration_since(jiff::Timestamp::now());
    match Duration::try_from(ahead) {
        Ok(wait) => (now + wait, Duration::ZERO),
        Err(_) => {
            let late = Duration::try_from(ahead.abs()).unwrap_or(Duration::ZERO);
            (now.checked_sub(late).unwrap_or(now), late)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lanes_share_the_concurrency_exactly_and_each_holds_a_whole_group() {
        for concurrency in 2..200 {
            for most_copies in 1..=4 {
                let concurrency = concurrency.max(most_copies);
                let lanes = lane_count(concurrency, most_copies);
                let shares: Vec<usize> = (0..lanes).map(|s| share(concurrency, lanes, s)).collect();
                assert_eq!(shares.iter().sum::<usize>(), concurrency);
                assert!(shares.iter().all(|&s| s >= most_copies), "{concurrency} {most_copies} {shares:?}");
            }
        }
    }

    #[test]
    fn seconds_from_any_quotient_never_panic() {
        // 1 / 1e-300 seconds once panicked "cannot convert float seconds to Duration".
        assert_eq!(seconds(1.0 / 1e-300), FAR);
        assert_eq!(seconds(f64::INFINITY), FAR);
        assert_eq!(seconds(-3.0), Duration::ZERO);
        assert_eq!(seconds(f64::NAN), Duration::ZERO);
        assert_eq!(seconds(1.5), Duration::from_millis(1500));
        let now = Instant::now();
        assert_eq!(after(now, 1e300), now + FAR);
    }
}
