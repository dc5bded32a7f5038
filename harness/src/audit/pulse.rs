//! The audit's live view for whoever shows its progress: the step it is at, every attempt sent
//! so far (the probing checks' and the loads') and how each was answered, and how far the load
//! running now has come. The audit only counts; the command line decides how often to say it,
//! so that a CI log without a terminal is never silent for long.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use crate::history::Fate;
use crate::sender::Progress;
use crate::stats::{CounterSnapshot, Counters};

/// What an audit has done so far.
#[derive(Debug, Default)]
pub struct Pulse {
    step: Mutex<String>,
    probes: Counters,
    // One entry per load the audit has started (a crash check one, a ramp one per step): bounded
    // by the checks' own settings, never by the receiver's answers.
    loads: Mutex<Vec<LoadPulse>>,
}

#[derive(Debug)]
struct LoadPulse {
    progress: Arc<Progress>,
    groups: u64,
}

impl Pulse {
    /// The audit is now at `step` (a check's name, or what it waits for).
    pub fn step(&self, step: &str) {
        step.clone_into(&mut self.step.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// A probing check's attempt ended so.
    pub fn probe_answered(&self, fate: Fate) {
        Counters::bump(&self.probes.deliveries);
        self.probes.count(fate);
    }

    /// A load of `groups` delivery groups started, counting into `progress`.
    pub fn load_started(&self, progress: Arc<Progress>, groups: u64) {
        self.loads.lock().unwrap_or_else(PoisonError::into_inner).push(LoadPulse { progress, groups });
    }

    /// The figures now.
    pub fn now(&self) -> PulseNow {
        let mut attempts = self.probes.snapshot();
        let mut load = None;
        for l in self.loads.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            attempts += l.progress.counters.snapshot();
            let done = l.progress.counters.groups_done.load(Ordering::Relaxed);
            if done < l.groups {
                load = Some((done, l.groups));
            }
        }
        let step = self.step.lock().unwrap_or_else(PoisonError::into_inner).clone();
        PulseNow { step, attempts, load }
    }
}

/// An audit's figures at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct PulseNow {
    /// The step it is at.
    pub step: String,
    /// Every attempt so far.
    pub attempts: CounterSnapshot,
    /// The running load's groups done and planned, when one is running.
    pub load: Option<(u64, u64)>,
}

impl std::fmt::Display for PulseNow {
    /// `crash: load 450/1000 groups; 1203 attempts: 1100 2xx, 3 4xx, 60 5xx, 10 timed out, 20
    /// acks lost, 10 no connection, 0 reset`: a lost ack (an answer cut on purpose) is a 2xx and lost both.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = &self.attempts;
        let step = if self.step.is_empty() { "starting" } else { &self.step };
        write!(f, "{step}: ")?;
        if let Some((done, groups)) = self.load {
            write!(f, "load {done}/{groups} groups; ")?;
        }
        write!(f, "{} attempts: {}", a.deliveries, a.fates())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_sent_says_so() {
        let pulse = Pulse::default();
        assert_eq!(
            pulse.now().to_string(),
            "starting: 0 attempts: 0 2xx, 0 4xx, 0 5xx, 0 timed out, 0 acks lost, 0 no connection, 0 reset"
        );
    }

    #[test]
    fn probes_are_counted_by_answer() {
        let pulse = Pulse::default();
        pulse.step("lost-ack");
        for fate in [
            Fate::Answered(200),
            Fate::Answered(409),
            Fate::Answered(503),
            Fate::TimedOut,
            Fate::NoConnection,
            Fate::Answered(302),
            Fate::Reset,
        ] {
            pulse.probe_answered(fate);
        }
        assert_eq!(
            pulse.now().to_string(),
            "lost-ack: 7 attempts: 1 2xx, 1 4xx, 1 5xx, 1 timed out, 0 acks lost, 1 no connection, 1 reset"
        );
    }

    #[test]
    fn a_running_load_shows_how_far_it_came_and_a_finished_one_only_its_attempts() {
        let pulse = Pulse::default();
        pulse.step("parallel-load");
        let (finished, running) = (Arc::new(Progress::default()), Arc::new(Progress::default()));
        pulse.load_started(finished.clone(), 2);
        pulse.load_started(running.clone(), 10);
        for p in [&finished, &finished, &running] {
            Counters::bump(&p.counters.groups_done);
            Counters::bump(&p.counters.deliveries);
            Counters::bump(&p.counters.status_2xx);
        }
        let now = pulse.now();
        assert_eq!(now.load, Some((1, 10)));
        assert_eq!(now.attempts.deliveries, 3);
        Counters::bump(&running.counters.groups_done);
        for _ in 0..8 {
            Counters::bump(&running.counters.groups_done);
        }
        assert_eq!(pulse.now().load, None, "every load done");
    }
}
