//! The crash check (the checklist's item 4): the seeded load sent while the receiver is killed
//! `--kills` times at seeded moments (`--kill-cmd`) and started again (`--start-cmd`, until
//! `--health-url` answers), the sender retrying whatever was not acknowledged, at least 30
//! attempts per event. PASS: every event applied exactly once by the end, and with `--state-query`
//! no account below the latest version it acknowledged; a design that commits its key before its
//! side effect acknowledges the retry of an event it never applied (lost, or a stale account for an
//! update). Its evidence says how many deliveries were in flight at each kill and how many kills
//! it took to find a failure; a PASS when no kill caught a delivery in flight proved nothing, and
//! is SKIPPED instead, saying so.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{AuditCheck, CheckSettings, Delivery, EXACTLY_ONCE, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::control::{Control, Restart};
use crate::history::Fate;
use crate::judge::{Class, ClassSet, CreditBook, Needs, Rules, Verdict};
use crate::load::{Load, WITNESSES, judge_load};
use crate::observe::Snapshot;
use crate::report::{AttemptLog, Check, CheckFigures, CheckResult, CrashFigures, RestartFigure, Status};
use crate::sender::AttemptRecord;
use crate::stats::Latency;
use crate::workload::Workload;

/// Attempts per event at least, so that the retries outlast the restarts (with backoff capped at
/// 1 s and fully jittered, 30 attempts span about 15 s).
const MIN_ATTEMPTS: u32 = 30;

/// Attempts added per kill (about 20 s more of retries each). A provider retries for hours or
/// days; a sender that gives up while the receiver is still down charges the receiver with events
/// the audit itself stopped sending: @octokit/webhooks restarting in 3 to 6 s under three kills
/// was down for most of 14 s, and 57 events whose every attempt found no connection were judged
/// never-applied.
const ATTEMPTS_PER_KILL: u32 = 40;

/// Kills past this add no more retries: ten kills' worth (430 attempts, about 3.5 minutes of
/// them) outlast any restart the health check waits for, and a receiver answering 500 to
/// everything keeps each event's retries going that long.
const KILLS_THAT_ADD_RETRIES: u32 = 10;

/// The attempts per event the crash check's load makes at least, for `kills` kills.
fn attempts_for(kills: u32) -> u32 {
    MIN_ATTEMPTS + ATTEMPTS_PER_KILL * kills.min(KILLS_THAT_ADD_RETRIES)
}

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::Crash, phase: Phase::Disturb, build };

/// The check's own flag; `--kill-cmd`, `--start-cmd` and `--health-url` (the receiver's
/// commands, which the retry storm shares) run it.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "crash")]
pub struct Flags {
    /// Kills during the crash check's load, at seeded moments.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub kills: u32,
}

/// The check's settings, from its flags.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How to kill and restart the receiver.
    pub control: Control,
    /// Kills during the load.
    pub kills: u32,
}

impl Flags {
    /// The settings, when the receiver's commands were given.
    pub fn settings(&self, control: Option<&Control>) -> Result<Option<Settings>, AuditError> {
        let Some(control) = control else { return Ok(None) };
        if self.kills == 0 {
            return Err(AuditError::Config("--kills must be at least 1".into()));
        }
        Ok(Some(Settings { control: control.clone(), kills: self.kills }))
    }
}

/// Builds the check from its flags.
fn build<'a>(_: &'a AuditConfig, checks: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    let settings = checks.crash.as_ref().ok_or(Unbuilt::Needs("--kill-cmd, --start-cmd and --health-url"))?;
    Ok(Box::new(Crash { settings }))
}

struct Crash<'a> {
    settings: &'a Settings,
}

/// When kill `k` of `kills` happens within a load planned to last `planned`: in the middle half of
/// the `k`th equal slice, at the workload's seeded draw.
fn kill_at(workload: &Workload, k: u32, kills: u32, planned: Duration) -> Duration {
    let draw = workload.keyed(&[&"kill", &k]);
    planned.mul_f64((f64::from(k) + 0.25 + 0.5 * draw) / f64::from(kills))
}

/// The load and its restarts.
struct Crashed {
    load: Load,
    restarts: Vec<Restart>,
    /// When each kill command had returned (the kill landed between its start and this).
    landed_ms: Vec<f64>,
}

impl Crashed {
    /// A kill and the receiver healthy again, as two lines of a witness's timeline.
    fn marks(&self) -> Vec<[AttemptLog; 2]> {
        self.restarts
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let kill = AttemptLog {
                    at_ms: r.killed_ms,
                    outcome: "receiver killed".into(),
                    connection: String::new(),
                    note: format!("--kill-cmd, kill {}", k + 1),
                };
                let healthy = AttemptLog {
                    at_ms: r.healthy_ms,
                    outcome: "receiver healthy again".into(),
                    connection: String::new(),
                    note: format!("{:.0} ms after the kill", r.took_ms()),
                };
                [kill, healthy]
            })
            .collect()
    }

    /// Each attempt's span on the audit's clock, by event: (event, sent, answered, whether it
    /// found no receiver: refused at connect, or its connection cut, as by a kill).
    fn spans(&self) -> Vec<Span> {
        let offset = self.load.offset_ms;
        self.load
            .sent
            .attempts
            .iter()
            .map(|a| {
                let no_receiver = matches!(a.outcome, Fate::NoConnection | Fate::Reset);
                (a.event, offset + a.sent_ms, offset + a.done_ms, no_receiver)
            })
            .collect()
    }
}

/// An attempt: its event, when it was sent and answered (audit's clock), and whether it found no
/// receiver.
type Span = (usize, f64, f64, bool);

/// Whether an attempt sent at `sent` and answered at `done` was in flight while a kill command
/// ran from `kill.0` to `kill.1`: the kill lands somewhere in that stretch.
fn overlaps(kill: (f64, f64), sent: f64, done: f64) -> bool {
    sent <= kill.1 && kill.0 < done
}

/// Whether `span` is one a kill from `kill.0` to `kill.1` could catch half done: in flight then,
/// and not an attempt sent once the kill command had begun that found no receiver (a retry
/// against the dead receiver while a slow kill command ran: counted, they made 11,502 "in
/// flight" at three kills of drf-stripe-subscription). One sent before the kill and cut by it
/// also ends with no connection, and counts.
fn caught(kill: (f64, f64), &(_, sent, done, no_receiver): &Span) -> bool {
    overlaps(kill, sent, done) && !(no_receiver && sent >= kill.0)
}

/// Deliveries in flight at each of `kills` (each the kill command's start and return, audit's
/// clock), from the attempts' `spans` (event, sent, answered): what each kill could catch half
/// done.
fn in_flight_at(kills: &[(f64, f64)], spans: &[Span]) -> Vec<u64> {
    kills.iter().map(|&k| spans.iter().filter(|s| caught(k, s)).count() as u64).collect()
}

/// How many kills it took to find a failure: the first kill (from 1) an attempt of a `failed`
/// event was in flight at, else the first after a failed event's first send, else the last kill.
/// `None` when nothing failed.
fn kills_to_failure(kills: &[(f64, f64)], spans: &[Span], failed: &BTreeSet<usize>) -> Option<u32> {
    if failed.is_empty() {
        return None;
    }
    let ours: Vec<_> = spans.iter().filter(|(e, ..)| failed.contains(e)).collect();
    let caught = kills.iter().position(|&k| ours.iter().any(|&&(_, sent, done, _)| overlaps(k, sent, done)));
    let first_send = ours.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    let after = kills.iter().position(|&k| k.0 >= first_send);
    let k = caught.or(after).unwrap_or(kills.len().saturating_sub(1));
    Some(k as u32 + 1)
}

/// How long each event waited from its first attempt's planned time to its first 2xx, from the
/// load's `attempts`; the events never answered 2xx are left out (they are the verdict's).
fn first_ack_waits(attempts: &[AttemptRecord]) -> Latency {
    let mut planned: BTreeMap<usize, f64> = BTreeMap::new();
    let mut acked: BTreeMap<usize, f64> = BTreeMap::new();
    for a in attempts {
        if a.attempt == 1 {
            planned.insert(a.event, a.planned_ms);
        }
        // A lost ack is the receiver's 2xx: it stored the event then.
        if a.outcome.stored() {
            let first = acked.entry(a.event).or_insert(a.done_ms);
            *first = first.min(a.done_ms);
        }
    }
    let waits = Latency::default();
    for (event, done) in acked {
        if let Some(&at) = planned.get(&event) {
            waits.record(crate::sender::seconds((done - at) / 1e3));
        }
    }
    waits
}

/// A PASS with no delivery in flight at any kill proves nothing of the receiver's crash safety
/// (every kill fell between deliveries): it is not a PASS but SKIPPED, saying so. A FAIL stands
/// whatever was in flight.
fn held_to_its_kills(status: Status, in_flight: &[u64]) -> Status {
    if status == Status::Pass && in_flight.iter().all(|&n| n == 0) { Status::Skipped } else { status }
}

/// The kills in words: "5 kills, 37 deliveries in flight at them (9, 0, 12, 8, 8)".
fn kills_in_words(in_flight: &[u64]) -> String {
    let total: u64 = in_flight.iter().sum();
    let each: Vec<String> = in_flight.iter().map(u64::to_string).collect();
    let kills =
        if in_flight.len() == 1 { "1 kill".to_string() } else { format!("{} kills", in_flight.len()) };
    let empty = in_flight.iter().filter(|&&n| n == 0).count();
    let note = match empty {
        0 => String::new(),
        n => format!(" ({n} with nothing in flight, which prove nothing)"),
    };
    format!("{kills}, {total} deliveries in flight at them ({}){note}", each.join(", "))
}

impl Delivery for Crashed {
    fn book(&self, book: &mut CreditBook) {
        self.load.book(book);
    }

    fn judge(&self, seen: &Snapshot) -> CheckResult {
        let fail: ClassSet = EXACTLY_ONCE.iter().copied().chain([Class::StaleAccount]).collect();
        let rules =
            Rules { fail, warn: ClassSet::EMPTY, require: vec![Needs::Applies], witnesses: WITNESSES };
        let (mut result, load, verdict) = judge_load(&self.load, seen, Check::Crash, &rules, &self.marks());
        let kills: Vec<(f64, f64)> =
            self.restarts.iter().zip(&self.landed_ms).map(|(r, &landed)| (r.killed_ms, landed)).collect();
        let spans = self.spans();
        let in_flight = in_flight_at(&kills, &spans);
        let failed = failed_events(&self.load, &verdict, fail);
        let first = kills_to_failure(&kills, &spans, &failed);
        let took: Vec<String> = self.restarts.iter().map(|r| format!("{:.0}", r.took_ms())).collect();
        let waits = first_ack_waits(&self.load.sent.attempts).percentiles();
        let waited = (waits.count > 0).then(|| {
            format!(
                "; events waited p50 {:.1} ms, p99 {:.1} ms from their planned send to their first 2xx",
                waits.p50 as f64 / 1e3,
                waits.p99 as f64 / 1e3
            )
        });
        let found = match first {
            Some(k) => format!("the first failure at kill {k}"),
            None => format!("{} lost", load.lost),
        };
        result.evidence = format!(
            "{}; {}, {found}; restarts took {} ms{}",
            result.evidence,
            kills_in_words(&in_flight),
            took.join(", "),
            waited.unwrap_or_default()
        );
        let status = held_to_its_kills(result.status, &in_flight);
        if status != result.status {
            result.status = status;
            result.evidence = format!(
                "not a PASS: no kill caught a delivery in flight, so nothing was tested; raise --rate or --kills. {}",
                result.evidence
            );
        }
        let restarts = self
            .restarts
            .iter()
            .zip(&in_flight)
            .map(|(r, &n)| RestartFigure { killed_at_ms: r.killed_ms, took_ms: r.took_ms(), in_flight: n })
            .collect();
        let in_flight = in_flight.iter().sum();
        result.figures = Some(CheckFigures::Crash(Box::new(CrashFigures {
            load,
            restarts,
            in_flight,
            first_ack_wait_us: (waits.count > 0).then_some(waits),
            kills_to_first_loss: first,
        })));
        result
    }
}

/// The load's events the verdict failed on `fail`: each event of such a class, and every event of
/// an account of one (a stale account).
fn failed_events(load: &Load, verdict: &Verdict, fail: ClassSet) -> BTreeSet<usize> {
    let fails = |c: ClassSet| c.iter().any(|c| fail.contains(c));
    let accounts: BTreeSet<i64> =
        verdict.accounts.iter().filter(|a| fails(a.classes)).map(|a| a.account).collect();
    let history = load.history();
    verdict
        .events
        .iter()
        .enumerate()
        .filter(|&(i, c)| fails(*c) || history.events().get(i).is_some_and(|e| accounts.contains(&e.account)))
        .map(|(i, _)| i)
        .collect()
}

#[async_trait::async_trait]
impl AuditCheck for Crash<'_> {
    fn plan(&self, config: &AuditConfig) -> Plan {
        let attempts = config.load.retry.max_attempts.max(attempts_for(self.settings.kills));
        Plan::load(&config.load_workload(), config.layout, attempts).unwrap_or_default()
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let (ctx, config, control) = (run.ctx, run.config, &self.settings.control);
        let client = crate::audit::control::health_client()?;
        control.ensure_healthy(&client).await?;
        let mut sender = config.load_sender(Check::Crash);
        sender.retry.max_attempts = sender.retry.max_attempts.max(attempts_for(self.settings.kills));
        let mut workload = Workload::generate(&config.load_workload())?;
        let wire = Arc::new(ctx.laid_out_load("crash_", &mut workload, sender.retry.max_attempts)?);
        let first = workload.groups.first().map_or(0.0, |g| g.at);
        let last = workload.groups.last().map_or(0.0, |g| g.at);
        let planned = crate::sender::seconds((last - first) / config.load.rate);
        let kills = self.settings.kills;
        let moments: Vec<Duration> = (0..kills).map(|k| kill_at(&workload, k, kills, planned)).collect();
        let start = Instant::now();
        let killer = async {
            let (mut restarts, mut landed) = (Vec::new(), Vec::new());
            for at in moments {
                tokio::time::sleep_until(start + at).await;
                // Not `Control::restart`: the kill command's return is kept too, since a
                // delivery sent while it ran may be the one the kill catches.
                let killed_ms = ctx.probe.now_ms();
                control.kill().await?;
                landed.push(ctx.probe.now_ms());
                control.start(&client).await?;
                let r = Restart { killed_ms, healthy_ms: ctx.probe.now_ms() };
                (run.step)(&format!(
                    "crash: kill {} of {kills}, healthy again after {:.0} ms",
                    restarts.len() + 1,
                    r.took_ms()
                ));
                restarts.push(r);
            }
            Ok::<_, AuditError>((restarts, landed))
        };
        let (load, kills) = tokio::join!(ctx.send_load(&config.target.url, workload, wire, sender), killer);
        let (restarts, landed_ms) = kills?;
        Ok(Box::new(Crashed { load: load?, restarts, landed_ms }) as Box<dyn Delivery>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attempt `attempt` of `event`, planned at `planned`, answered `outcome` at `done` (ms).
    fn attempt(event: usize, attempt: u32, planned: f64, done: f64, outcome: &str) -> AttemptRecord {
        let (target, connection, outcome) = (0, 1, outcome.parse().expect("a fate"));
        AttemptRecord {
            event,
            attempt,
            planned_ms: planned,
            sent_ms: planned,
            done_ms: done,
            target,
            connection,
            outcome,
        }
    }

    #[test]
    fn an_event_waits_from_its_planned_send_to_its_first_2xx_and_one_never_acked_is_left_out() {
        let attempts = [
            // Refused while the receiver was down, then answered 1 s after its plan.
            attempt(0, 1, 0.0, 5.0, "no-connection"),
            attempt(0, 2, 600.0, 1000.0, "200"),
            // A lost ack sent it again: its first 2xx counts.
            attempt(1, 1, 10.0, 20.0, "200 ack lost"),
            attempt(1, 2, 40.0, 50.0, "200"),
            // Never answered 2xx: the verdict's, not a wait.
            attempt(2, 1, 20.0, 30.0, "500"),
        ];
        let waits = first_ack_waits(&attempts).percentiles();
        assert_eq!(waits.count, 2);
        assert!((waits.max as f64 / 1e3 - 1000.0).abs() < 5.0, "{waits:?}");
        assert!((waits.p50 as f64 / 1e3 - 10.0).abs() < 1.0, "{waits:?}");
        assert_eq!(first_ack_waits(&[attempt(2, 1, 0.0, 1.0, "timeout")]).percentiles().count, 0);
        assert_eq!(first_ack_waits(&[]).percentiles().count, 0);
    }

    #[test]
    fn each_kill_buys_its_load_more_retries() {
        assert_eq!(attempts_for(1), 70);
        assert_eq!(attempts_for(5), 230);
        assert_eq!(attempts_for(10), 430);
        assert_eq!(attempts_for(1000), 430, "ten kills' worth at most");
    }

    #[test]
    fn in_flight_counts_the_attempts_sent_and_not_answered_at_each_kill() {
        let spans = [(0, 10.0, 30.0, false), (1, 15.0, 20.0, false), (2, 40.0, 41.0, false)];
        assert_eq!(in_flight_at(&[(18.0, 18.5), (35.0, 36.0), (40.0, 40.0)], &spans), [2, 0, 1]);
        // Answered as the kill began: no longer in flight.
        assert_eq!(in_flight_at(&[(30.0, 30.5)], &spans), [0]);
        // Sent while the kill command ran: the kill may land on it.
        assert_eq!(in_flight_at(&[(38.0, 40.0)], &spans), [1]);
        assert_eq!(in_flight_at(&[], &spans), Vec::<u64>::new());
        assert_eq!(in_flight_at(&[(5.0, 6.0)], &[]), [0]);
    }

    #[test]
    fn a_retry_that_found_the_receiver_dead_was_in_flight_at_no_kill() {
        // Sent before the kill, cut by it: no connection, and caught.
        let cut = (0, 10.0, 21.0, true);
        // Sent while the kill command ran, refused at connect: the receiver was already gone.
        let refused = (1, 25.0, 25.1, true);
        // Sent while the kill command ran and answered: the kill may still land on it.
        let answered = (2, 25.0, 26.0, false);
        assert_eq!(in_flight_at(&[(20.0, 30.0)], &[cut, refused, answered]), [2]);
        // Refused at connect before a later kill began: in flight at neither.
        assert_eq!(in_flight_at(&[(50.0, 51.0)], &[refused]), [0]);
    }

    #[test]
    fn a_pass_with_nothing_in_flight_at_any_kill_is_not_a_pass() {
        assert_eq!(held_to_its_kills(Status::Pass, &[0, 0, 0]), Status::Skipped);
        assert_eq!(held_to_its_kills(Status::Pass, &[0, 3, 0]), Status::Pass);
        assert_eq!(held_to_its_kills(Status::Pass, &[]), Status::Skipped);
        // A failure found stands, whatever was in flight.
        assert_eq!(held_to_its_kills(Status::Fail, &[0, 0]), Status::Fail);
        assert_eq!(held_to_its_kills(Status::Fail, &[4]), Status::Fail);
    }

    #[test]
    fn the_kills_in_words_say_which_proved_nothing() {
        assert_eq!(kills_in_words(&[9, 12, 16]), "3 kills, 37 deliveries in flight at them (9, 12, 16)");
        assert_eq!(
            kills_in_words(&[0, 5]),
            "2 kills, 5 deliveries in flight at them (0, 5) (1 with nothing in flight, which prove nothing)"
        );
        assert_eq!(
            kills_in_words(&[0]),
            "1 kill, 0 deliveries in flight at them (0) (1 with nothing in flight, which prove nothing)"
        );
    }

    #[test]
    fn the_kills_it_took_name_the_first_that_caught_a_failed_event() {
        let spans = [(0, 10.0, 30.0, false), (1, 50.0, 70.0, false), (1, 75.0, 80.0, false)];
        let kills = [(20.0, 21.0), (60.0, 61.0), (90.0, 91.0)];
        assert_eq!(kills_to_failure(&kills, &spans, &BTreeSet::new()), None);
        assert_eq!(kills_to_failure(&kills, &spans, &[1].into()), Some(2));
        assert_eq!(kills_to_failure(&kills, &spans, &[0, 1].into()), Some(1));
        // Failed but in flight at no kill: the first kill after its first send.
        let kills = [(5.0, 6.0), (40.0, 41.0), (72.0, 73.0)];
        assert_eq!(kills_to_failure(&kills, &[(1, 20.0, 30.0, false)], &[1].into()), Some(2));
    }
}
