//! Check 5, the late replay: after every other check, up to 10 events the earlier checks saw
//! acknowledged and applied exactly once (spread over the checks) are re-sent with fresh
//! signatures; `--retention-cmd` runs first (the receiver's purge job) and `--replay-after` waits.
//! PASS: none applied again (each still applied once: not a duplicate).

use std::collections::BTreeMap;

use std::time::Duration;

use super::{AuditCheck, CheckSettings, Delivery, Info, Judged, Phase, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::config::bounds::{DAY, duration, s, within};
use crate::audit::control;
use crate::audit::ctx::{Delivered, Probes};
use crate::judge::{Class, CreditBook, Expect, Needs};
use crate::observe::Snapshot;
use crate::report::{Check, CheckResult};
use crate::wire::Fields;

/// Events re-sent at most.
const SAMPLE: usize = 10;

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::LateReplay, phase: Phase::After, build };

/// The wait before the late replay (Stripe retries for three days).
const REPLAY_AFTER: std::ops::RangeInclusive<Duration> = s(0)..=s(7 * DAY);

/// The check's flags, which are also its settings.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "late-replay")]
pub struct Flags {
    /// How long after the run the late replay is sent (0s to 7 days).
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub replay_after: Duration,
    /// A shell command run before the late replay (your purge job), e.g. `./purge-old-keys.sh`.
    #[arg(long, value_name = "CMD")]
    pub retention_cmd: Option<String>,
}

impl Flags {
    /// The settings, the wait within its bounds.
    pub fn settings(&self) -> Result<Flags, AuditError> {
        within("--replay-after", self.replay_after, &REPLAY_AFTER, duration)?;
        Ok(self.clone())
    }
}

/// Builds the check with `--replay-after` and `--retention-cmd`.
fn build<'a>(_: &'a AuditConfig, checks: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    Ok(Box::new(LateReplay { settings: &checks.late_replay }))
}

struct LateReplay<'a> {
    settings: &'a Flags,
}

/// The replay sample: events acknowledged and applied exactly once, up to `n`, taken from each
/// earlier check in turn.
fn sample(earlier: &[Judged], n: usize) -> Vec<Fields> {
    let by_check: BTreeMap<Check, Vec<Fields>> = earlier
        .iter()
        .map(|j| (j.check, j.sent.replayable(&j.seen)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let mut sample = Vec::new();
    for round in 0.. {
        if sample.len() >= n || by_check.values().all(|v| v.len() <= round) {
            break;
        }
        sample.extend(by_check.values().filter_map(|v| v.get(round).cloned()).take(n - sample.len()));
    }
    sample
}

/// The replays, or why there were none.
struct Replayed {
    probes: Probes,
    /// Why nothing was replayed, when nothing was.
    none: Option<String>,
}

impl Delivery for Replayed {
    fn book(&self, book: &mut CreditBook) {
        self.probes.book(book);
    }

    fn judge(&self, seen: &Snapshot) -> CheckResult {
        match &self.none {
            Some(why) => CheckResult::skipped(Check::LateReplay, why.clone()),
            None => self.probes.judge(seen),
        }
    }
}

#[async_trait::async_trait]
impl AuditCheck for LateReplay<'_> {
    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let p = self.settings;
        let replay = sample(run.earlier, SAMPLE);
        if let Some(cmd) = &p.retention_cmd {
            (run.step)("running --retention-cmd");
            control::run_to_end("--retention-cmd", cmd).await?;
        }
        if !p.replay_after.is_zero() {
            (run.step)(&format!(
                "waiting {} before the late replay",
                humantime::format_duration(p.replay_after)
            ));
            tokio::time::sleep(p.replay_after).await;
        }
        // The baseline is what the observers see now, after the purge: an event whose evidence
        // went (a purge of the rows the applied query counts) would look applied once again
        // after a replay that applied it again, so only events still seen applied once are
        // replayed and judged.
        let before = run.observers.snapshot().await?.resolve(run.book);
        let (kept, changed): (Vec<Fields>, Vec<Fields>) =
            replay.into_iter().partition(|f| before.applied(&f.id) == (1, 1));
        (run.step)("late-replay");
        let fail = [Class::Duplicate, Class::UnexplainedChange];
        let mut probes = Probes::new(Check::LateReplay, &fail, &[Needs::Applies]);
        for f in kept {
            let mut sent = Delivered::new(f, Expect::Once);
            sent.push(run.ctx.deliver(&sent.fields, "late replay").await);
            probes.events.push(sent);
        }
        let gone = if changed.is_empty() {
            String::new()
        } else {
            format!(
                "; {} sampled events no longer seen applied once before the replay (their evidence purged?) not replayed",
                changed.len()
            )
        };
        probes.note = format!(
            "re-sent after {}{}; each seen applied once just before{gone}",
            humantime::format_duration(p.replay_after),
            if p.retention_cmd.is_some() { " and --retention-cmd" } else { "" }
        );
        let none = match (probes.events.is_empty(), changed.is_empty()) {
            (false, _) => None,
            (true, true) => Some("no event was acknowledged and applied once to replay".to_string()),
            (true, false) => Some(format!(
                "every sampled event's evidence changed before the replay ({} no longer seen applied once: purged by --retention-cmd?), so a re-apply could not be told",
                changed.len()
            )),
        };
        Ok(Box::new(Replayed { probes, none }) as Box<dyn Delivery>)
    }
}
