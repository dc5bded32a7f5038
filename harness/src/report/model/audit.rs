//! An audit's part of a report: a verdict per check, with its evidence, its witnesses and (for the
//! checks that send a load or ramp or storm) its figures.

use serde::{Deserialize, Serialize};

use crate::judge::Class;
use crate::judge::rate::Rate;
use crate::workload::Layout;

use super::{BehindCause, Percentiles, RetryPolicy};

// The one list of the checks' names: `ALL`, `as_str` (the kebab name `--checks` takes and
// reports show) and the serialized name all derive from the variants; `audit/checks` pairs each
// with its module.
/// The go-live checklist's items, in the article's order.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::EnumProperty,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Check {
    /// The same event twice in a row: applied once.
    SequentialDuplicate,
    /// One change sent as two events under different ids (the same object and type, the second
    /// created later): exactly one applied. Both applied warns, or fails with `--strict`.
    SemanticDuplicate,
    /// K copies released together on separate connections: applied once.
    ConcurrentCopies,
    /// Pairs of copies, the second released 0 to 50 ms after the first (`--race-window`): the
    /// double-apply rate at each spacing, how wide the window between a check and an insert is.
    RaceWindow,
    /// Sent whole, connection dropped before the answer, then retried: applied once.
    LostAck,
    /// Each account's updates in a shuffled order: the final state is the latest version.
    OutOfOrder,
    /// Acknowledged events re-sent after the run with fresh signatures: nothing applied again.
    LateReplay,
    /// Deliveries signed with each secret accepted; one signed with none refused.
    SecretRotation,
    /// Tampered, unsigned, stale, malformed, oversized, replayed-elsewhere, re-bodied, overflowing
    /// and stalled requests: refused, nothing applied, nothing hung.
    HostileInput,
    /// The seeded workload at a rate, with the article's faults: no duplicate, none lost, none stale.
    ParallelLoad,
    /// The receiver killed and restarted during a load (`--kill-cmd`, `--start-cmd`): every event
    /// applied exactly once by the end.
    Crash,
    /// Poison events mixed into a load: never applied, the rest unharmed, dead-lettered.
    #[strum(props(unclassed = "slowed-by-poison"))]
    Poison,
    /// The rate ramped in steps: the highest at which p99 stays under the provider's timeout.
    #[strum(props(unclassed = "too-slow"))]
    Capacity,
    /// A batch failed through an outage, then retried on the provider's schedule: correct and
    /// responsive through the spike.
    #[strum(props(unclassed = "too-slow"))]
    RetryStorm,
}

impl Check {
    /// Every check, in order.
    pub const ALL: &'static [Check] = <Self as strum::VariantArray>::VARIANTS;

    /// The one check a sharded audit runs, and `merge` judges: the parallel load.
    pub const SHARDED: Check = Check::ParallelLoad;

    /// The name `--checks` takes and reports show.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The anchor of the remedy for this check failing on its figures alone (too slow under the
    /// provider's timeout, slowed by poison), when it can; `None`: it fails only with an anomaly
    /// class, each of which has its own remedy.
    pub fn unclassed_remedy(self) -> Option<&'static str> {
        strum::EnumProperty::get_str(&self, "unclassed")
    }
}

/// PASS, FAIL, SKIPPED or WARN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Every expectation held.
    Pass,
    /// One did not; the witnesses show which.
    Fail,
    /// Not run; the evidence says why.
    Skipped,
    /// An advisory finding (a semantic duplicate): reported with its witnesses, the exit status
    /// unchanged unless `--strict`.
    Warn,
}

impl Status {
    /// As printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "PASS",
            Self::Fail => "FAIL",
            Self::Skipped => "SKIPPED",
            Self::Warn => "WARN",
        }
    }
}

/// One attempt as the audit saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AttemptLog {
    /// Milliseconds from the audit's start to the send.
    pub at_ms: f64,
    /// The HTTP status, or what happened instead (`dropped before the answer`, `timeout`,
    /// `no connection`, `closed`).
    pub outcome: String,
    /// The connection: the audit's local port for probes, the sender's connection number for the
    /// load.
    pub connection: String,
    /// What the attempt was (`copy 2 of 8`, `wrong secret`, `to /webhooks/other`), when it says
    /// more than "a delivery".
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// The note of hostile-input's signed delivery whose body is not JSON: a witness whose attempt
/// says it is that case, which a remedy of its own fits.
pub const MALFORMED_BODY: &str = "malformed JSON, signed";

/// The note of hostile-input's body past the limit `--oversized-bytes` named, after its size in
/// bytes: `hookbench repro` re-sends one of that size.
pub const PAST_THE_LIMIT: &str = " byte body, signed, past the limit --oversized-bytes names";

/// An event that shows a failure: its id, every attempt, and what the observers saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Witness {
    /// The event's id (or the account, for a state witness).
    pub id: String,
    /// What went wrong, in a few words.
    pub problem: String,
    /// Its attempts, in order.
    pub attempts: Vec<AttemptLog>,
    /// What the observers saw (`applied 2 times`, `final version 3 of 6`).
    pub observed: String,
}

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckResult {
    /// Which check.
    pub check: Check,
    /// PASS, FAIL, SKIPPED or WARN.
    pub status: Status,
    /// The evidence in one line (or why it was skipped).
    pub evidence: String,
    /// The anomaly classes found that fail it (for a WARN, the advisory ones found).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<Class>,
    /// For a FAIL (or a WARN), the first witnesses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<Witness>,
    /// The figures of a check that sends a load, a ramp or a storm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<CheckFigures>,
}

impl CheckResult {
    /// A skipped check and why.
    pub fn skipped(check: Check, why: impl Into<String>) -> Self {
        Self {
            check,
            status: Status::Skipped,
            evidence: why.into(),
            anomalies: Vec::new(),
            witnesses: Vec::new(),
            figures: None,
        }
    }
}

/// A check's figures, by the kind of check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckFigures {
    /// The parallel load's.
    Load(Box<LoadFigures>),
    /// The crash check's: its load and each restart.
    Crash(Box<CrashFigures>),
    /// The poison check's: its two loads.
    Poison(Box<PoisonFigures>),
    /// The capacity ramp's.
    Capacity(CapacityFigures),
    /// The retry storm's.
    Storm(StormFigures),
    /// The concurrent copies' trials: how many doubled.
    Trials(TrialsFigures),
    /// The race window: the double-apply rate at each spacing of a pair's two copies.
    #[serde(rename = "race_window")]
    Spacings(SpacingsFigures),
}

/// A race seen in `doubled` of `trials` trials, with Wilson's 95 % interval of its rate. A trial
/// counts only when the observers saw its event applied at least once: one never applied raced
/// nothing (and fails the check as never-applied).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RateFigure {
    /// Trials whose event was seen applied.
    pub trials: u64,
    /// Of them, those applied more than once.
    pub doubled: u64,
    /// doubled / trials (`null`: no trial).
    pub share: Option<f64>,
    /// The interval's lower end, 0 to 1 (`null`: no trial).
    pub low: Option<f64>,
    /// Its upper end.
    pub high: Option<f64>,
}

impl From<Rate> for RateFigure {
    fn from(r: Rate) -> Self {
        let interval = r.interval();
        Self {
            trials: r.n,
            doubled: r.k,
            share: r.share(),
            low: interval.map(|i| i.0),
            high: interval.map(|i| i.1),
        }
    }
}

impl RateFigure {
    /// The rate it holds.
    pub fn rate(&self) -> Rate {
        Rate { k: self.doubled, n: self.trials }
    }
}

/// The concurrent copies' trials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrialsFigures {
    /// Trials sent (`--trials`), each a fresh event.
    pub sent: u64,
    /// Copies of each released together (`--copies`).
    pub copies: u64,
    /// How many of the trials applied doubled.
    pub rate: RateFigure,
}

/// The race window: pairs of copies, the second released a spacing after the first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "RaceWindowFigures")]
pub struct SpacingsFigures {
    /// Pairs sent per spacing (`--trials`).
    pub pairs: u64,
    /// Each spacing, in increasing order.
    pub spacings: Vec<SpacingFigure>,
}

/// One spacing of the race window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpacingFigure {
    /// How long after the first copy the second was released, milliseconds.
    pub spacing_ms: f64,
    /// The median of the measured gaps between the two copies' sends, milliseconds.
    pub measured_ms: f64,
    /// How many of the pairs applied doubled.
    pub rate: RateFigure,
}

/// The parallel load's figures, as `bench` reports them for a cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadFigures {
    /// Logical events sent.
    pub events: u64,
    /// Attempts sent.
    pub deliveries: u64,
    /// Attempts answered 2xx (lost acks included: the receiver did answer).
    pub status_2xx: u64,
    /// Attempts answered 4xx.
    pub status_4xx: u64,
    /// Attempts answered 5xx.
    pub status_5xx: u64,
    /// Attempts timed out: no answer within the timeout.
    pub timeouts: u64,
    /// Attempts answered 2xx whose answer hookbench dropped on purpose (the workload's lost
    /// acks), so that the event is sent again; counted in `status_2xx` too, never in `timeouts`.
    #[serde(default)]
    pub acks_lost: u64,
    /// Attempts that found no receiver: no connection could be made (since schema 3).
    #[serde(default)]
    pub connect_errors: u64,
    /// Attempts whose connection broke before a whole answer came (since schema 3).
    #[serde(default)]
    pub resets: u64,
    /// Credit events applied more than once.
    pub dup_events: u64,
    /// Applies beyond the first.
    pub extra_applies: u64,
    /// Credit events acknowledged with a 2xx and never applied.
    pub lost: u64,
    /// Events never acknowledged (refused, failed or given up) and never applied.
    pub never_applied: u64,
    /// Accounts whose final plan version is below the latest acknowledged (`null` without a
    /// state query).
    pub stale_accounts: Option<u64>,
    /// Of the load's accounts, those the state query returned (`null` without one).
    pub accounts_observed: Option<u64>,
    /// Events refused with a 4xx and applied anyway.
    pub refused_applied: u64,
    /// Events acknowledged with a 2xx.
    pub acked: u64,
    /// Events seen applied.
    pub applied: u64,
    /// Deliveries given up on after the retry budget: an event's first delivery and each later
    /// duplicate or concurrent copy count apart, so this can exceed the events never
    /// acknowledged (`never_applied` counts events).
    pub gave_up: u64,
    /// Latency from each attempt's planned time (coordinated omission corrected), microseconds.
    pub latency_us: Percentiles,
    /// How long the receiver took to answer: each answered attempt from its send to its answer,
    /// microseconds; attempts with no answer (timed out, refused, reset) are left out and
    /// counted apart (`null` when none was answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_latency_us: Option<Percentiles>,
    /// Attempts per second.
    pub throughput_per_s: f64,
    /// Events a second the plan is paced at (`--rate`; `null`: under two events sent, or not
    /// measured, as in a merged sharded audit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_rate: Option<f64>,
    /// The rate the plan was kept at: the planned rate times the events' first attempts' planned
    /// span over their sent span. Under the planned rate when the sender fell behind its plan,
    /// and every latency from the plan then includes that wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rate: Option<f64>,
    /// Why it fell behind its plan, when it did (`null`: it kept the plan, or not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_cause: Option<BehindCause>,
    /// Of the events whose first delivery went as concurrent copies, how many applied doubled
    /// (`null`: not counted, as in a merged sharded audit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<RateFigure>,
}

/// The crash check: its load, and each kill and restart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CrashFigures {
    /// The load's figures.
    pub load: LoadFigures,
    /// For each kill: milliseconds from the audit's start to the kill command, and from the kill
    /// to the health URL's first 2xx after the start command.
    pub restarts: Vec<RestartFigure>,
    /// Deliveries in flight at the kills, added up.
    #[serde(default)]
    pub in_flight: u64,
    /// How long events waited from their first attempt's planned time to their first 2xx,
    /// microseconds (the events never answered 2xx left out; `null` when none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_ack_wait_us: Option<Percentiles>,
    /// How many kills it took to find a failure: the first kill (from 1) that an event which
    /// failed had an attempt in flight at, else the first after such an event's first send
    /// (`null`: none failed).
    #[serde(default)]
    pub kills_to_first_loss: Option<u32>,
}

/// One kill and restart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RestartFigure {
    /// When the kill command ran, milliseconds from the audit's start.
    pub killed_at_ms: f64,
    /// From the kill to the health URL's first 2xx.
    pub took_ms: f64,
    /// Deliveries of the load sent and not yet answered when the kill command ran: what the kill
    /// could catch half done.
    #[serde(default)]
    pub in_flight: u64,
}

/// The poison check: the poisoned load beside the same load without poison.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PoisonFigures {
    /// How the poison was made (`account 42`, the template's path).
    pub poison: String,
    /// Poison events sent.
    pub poison_events: u64,
    /// Poison events that produced a side effect (must be 0).
    pub poison_applied: u64,
    /// Poison events found in the dead-letter store (`null` without `--dead-letter-query`).
    pub dead_lettered: Option<u64>,
    /// The other events' p99 without poison, milliseconds (intended).
    pub baseline_p99_ms: f64,
    /// Their p99 with poison mixed in.
    pub poisoned_p99_ms: f64,
    /// The factor the poisoned p99 may be of the baseline's.
    pub p99_factor: f64,
    /// The poisoned load's figures.
    pub load: LoadFigures,
    /// The clean load's figures (the same workload without poison, judged too).
    pub clean: LoadFigures,
}

/// One step of the capacity ramp.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapacityStep {
    /// The rate asked for, events per second.
    pub rate_per_s: f64,
    /// Deliveries sent (one attempt each: no retries within a step).
    pub deliveries: u64,
    /// Median latency from the planned send, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest (a delivery cut at the timeout counts as the timeout).
    pub max_ms: f64,
    /// Share of deliveries slower than the timeout: each a retry, and a duplicate risk, with the
    /// provider.
    pub over_timeout: f64,
    /// Share answered with anything but a 2xx (a 429 shed included), or not answered at all.
    pub errors: f64,
    /// Events a second the step was sent at: `rate_per_s` kept, or less when the sender fell
    /// behind (`null`: under two events, or a report from before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rate: Option<f64>,
    /// Why the step fell behind its rate, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_cause: Option<BehindCause>,
    /// Median of the answered deliveries' own times, send to answer, milliseconds (`null`: none
    /// answered, or a report from before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_p50_ms: Option<f64>,
    /// Their 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_p99_ms: Option<f64>,
    /// Whether p99 stayed under the timeout and errors under 1 %.
    pub held: bool,
}

/// The capacity ramp.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapacityFigures {
    /// The provider whose timeout was held (`null`: `--timeout` alone).
    pub provider: Option<Provider>,
    /// The timeout held, milliseconds.
    pub timeout_ms: f64,
    /// Each step, in order; the ramp stops after the first step that does not hold.
    pub steps: Vec<CapacityStep>,
    /// The highest rate that held (`null`: none did).
    pub capacity_per_s: Option<f64>,
    /// Whether the ramp's top rate held, so the capacity is at least that, not that.
    #[serde(default)]
    pub at_least: bool,
    /// Whether each step was shorter than the timeout, so no backlog as long as the timeout could
    /// build within a step.
    #[serde(default)]
    pub steps_shorter_than_timeout: bool,
}

/// The retry storm: a batch failed through an outage, then retried on the provider's schedule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StormFigures {
    /// Whose schedule.
    pub provider: Option<Provider>,
    /// Events in the batch.
    pub events: u64,
    /// The outage, in the provider's time (seconds).
    pub outage_s: f64,
    /// How much faster than the provider's clock the audit ran.
    pub time_scale: f64,
    /// Attempts sent in all.
    pub attempts: u64,
    /// Attempts in each tenth of a second of the audit's clock, from the kill on.
    pub arrivals_per_100ms: Vec<u64>,
    /// Retries that arrived after the receiver answered its health URL again (what the figures
    /// after the recovery are of; none: every retry was sent before the health URL answered again).
    pub after_recovery: u64,
    /// Most attempts sent within any one second (of the audit's clock) after the recovery
    /// (`null`: no attempt arrived after it).
    pub peak_per_s: Option<u64>,
    /// When the receiver was healthy again, milliseconds from the kill.
    pub recovered_ms: f64,
    /// p99 of the answers after recovery, milliseconds (`null`: no attempt arrived after it).
    pub p99_after_ms: Option<f64>,
    /// Of the attempts sent after the recovery, the most the provider's schedule planned within
    /// one second: the storm's planned rate, attempts a second (`null`: none after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_rate: Option<f64>,
    /// The most of them sent within one second (`peak_per_s`): under `planned_rate` when the
    /// sender fell behind the schedule, and the storm was weaker than the provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rate: Option<f64>,
    /// Events applied more than once.
    pub dup_events: u64,
    /// Events acknowledged and never applied.
    pub lost: u64,
    /// Events never acknowledged by the schedule's end.
    pub unacknowledged: u64,
}

/// The parameters of an audit's loads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditParameters {
    /// Seed of every draw.
    pub seed: u32,
    /// Logical events of the parallel load.
    pub events: usize,
    /// Accounts they are spread over.
    pub accounts: u32,
    /// Chance an event is a credit (1 when no `--state-query` can see plan updates applied).
    pub p_credit: f64,
    /// Events per second.
    pub rate: f64,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Per-attempt timeout.
    pub timeout: String,
    /// Retries.
    pub retry: RetryPolicy,
    /// Chance of a duplicate delivery.
    pub p_duplicate: f64,
    /// Chance a 2xx is lost.
    pub p_ack_lost: f64,
    /// Chance of concurrent copies.
    pub p_concurrent: f64,
    /// Chance of a shuffle.
    pub p_shuffle: f64,
    /// How credits were laid out over accounts (absent from runs made before it was recorded:
    /// the load's accounts).
    #[serde(default)]
    pub layout: Layout,
}

/// The audit section of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditSection {
    /// The receiver's URL.
    pub url: String,
    /// The signing scheme.
    pub signing: String,
    /// The provider whose rules, timeout and schedule it was held to.
    pub provider: Option<Provider>,
    /// The payload (`hookbench`, `stripe` or the template's path).
    pub payload: String,
    /// The observers that judged it (`sql`, `sink`, and what each sees).
    pub observers: Vec<String>,
    /// The prefix every id of this audit carries.
    pub id_prefix: String,
    /// Added to every account number.
    pub account_base: i64,
    /// The loads' parameters.
    pub parameters: AuditParameters,
    /// One verdict per check, in the checklist's order.
    pub checks: Vec<CheckResult>,
    /// The audit's wall time.
    pub wall_s: f64,
    /// Why the audit stopped before it finished, when it did (its checks are those that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// What `hookbench repro` reads besides the verdicts: the queries the audit judged with and
    /// the flags its checks ran with (flattened: each is a key of the section itself).
    #[serde(flatten)]
    pub repro: ReproInputs,
}

/// What an audit recorded for `hookbench repro`, so that a reproduction judges and sends as the
/// audit did; each absent in reports written before it was recorded, and when not given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReproInputs {
    /// The applied query the SQL observer judged with (`--applied-query`), so that `hookbench
    /// repro` judges a reproduction the same way; absent in reports before it was recorded and
    /// when no such query was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_query: Option<String>,
    /// The state query (`--state-query`), recorded for the same reason: an out-of-order
    /// reproduction reads each account's version with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_query: Option<String>,
    /// The balance query (`--balance-query`): a reproduction judged by each account's balance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance_query: Option<String>,
    /// The count query (`--count-query`): a reproduction judged by each account's effect rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_query: Option<String>,
    /// The dead-letter query (`--dead-letter-query`): a poison reproduction reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_letter_query: Option<String>,
    /// The account the poison check's events credited (`--poison-account`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poison_account: Option<i64>,
    /// How long hostile-input let a stalled body be held (`--stall-wait`), in milliseconds: a
    /// reproduction holds its own that long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_wait_ms: Option<u64>,
}

/// The signing schemes `hookbench repro`'s scripts sign as, so far.
pub const REPRODUCIBLE_SIGNING: [&str; 15] = [
    "standard-webhooks",
    "stripe",
    "github",
    "shopify",
    "slack",
    "twilio",
    "square",
    "paddle",
    "sendgrid",
    "discord",
    "linear",
    "gitlab",
    "zoom",
    "twitch",
    "none",
];

/// The checks whose FAIL `hookbench repro` writes a script for, so far.
pub const REPRODUCIBLE: [Check; 10] = [
    Check::ConcurrentCopies,
    Check::SequentialDuplicate,
    Check::LostAck,
    Check::RaceWindow,
    Check::OutOfOrder,
    Check::SemanticDuplicate,
    Check::LateReplay,
    Check::HostileInput,
    Check::Crash,
    Check::Poison,
];

impl AuditSection {
    /// The failed checks `hookbench repro` can write a script for: [`REPRODUCIBLE`] ones, of an
    /// audit signed by a scheme its scripts sign ([`REPRODUCIBLE_SIGNING`]).
    pub fn reproducible_fails(&self) -> Vec<Check> {
        if !REPRODUCIBLE_SIGNING.contains(&self.signing.as_str()) {
            return Vec::new();
        }
        // A semantic duplicate warns unless --strict made it fail: a finding either way.
        let found = |c: &&CheckResult| {
            c.status == Status::Fail || (c.status == Status::Warn && c.check == Check::SemanticDuplicate)
        };
        // A poison template's body is not one a script rebuilds; a poison account is.
        let written = |c: &&CheckResult| c.check != Check::Poison || self.repro.poison_account.is_some();
        let fails = self.checks.iter().filter(found).filter(|c| REPRODUCIBLE.contains(&c.check));
        fails.filter(written).map(|c| c.check).collect()
    }

    /// Whether a check that ran failed.
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.status == Status::Fail)
    }

    /// The checks that failed.
    pub fn failed_checks(&self) -> Vec<Check> {
        self.checks.iter().filter(|c| c.status == Status::Fail).map(|c| c.check).collect()
    }

    /// The figures of `check`, when it ran and has some.
    pub fn figures(&self, check: Check) -> Option<&CheckFigures> {
        self.checks.iter().find(|c| c.check == check).and_then(|c| c.figures.as_ref())
    }
}

/// A webhook provider.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Provider {
    /// Stripe.
    Stripe,
    /// GitHub.
    Github,
    /// Shopify.
    Shopify,
    /// Svix and the Standard Webhooks senders that follow its schedule.
    StandardWebhooks,
    /// Slack's Events API.
    Slack,
    /// Twilio's status callbacks.
    Twilio,
    /// Square.
    Square,
    /// Paddle Billing.
    Paddle,
    /// SendGrid's Event Webhook.
    Sendgrid,
    /// Discord's interactions endpoint.
    Discord,
    /// Linear.
    Linear,
    /// GitLab.
    Gitlab,
    /// Zoom.
    Zoom,
    /// Twitch EventSub.
    Twitch,
}
