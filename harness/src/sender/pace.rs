//! How a send kept its plan: each event's first attempt, when it was planned and when it went
//! out. A sender that falls behind (its in-flight cap full of deliveries the receiver is slow to
//! answer, or a machine too slow to send at the rate) sends the events later than planned, and
//! every latency measured from the plan then includes that wait: the rates say so.
//!
//! The planned rate is `--rate`, what the plan's positions are paced at. The achieved rate is that
//! rate scaled by how much longer the events' first attempts took to go out than the plan gave
//! them (from the first to the last): 200/s planned over 5 s and sent over 50 s is 20/s. Only
//! first attempts count, so a retry tail (or a duplicate re-sent later on purpose) does not lower
//! it.

use crate::report::model::{BehindCause, behind};

/// The first and last of some times, milliseconds from the send's start.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    first: f64,
    last: f64,
}

impl Span {
    fn at(t: f64) -> Self {
        Self { first: t, last: t }
    }

    fn add(&mut self, t: f64) {
        self.first = self.first.min(t);
        self.last = self.last.max(t);
    }

    /// Its length in seconds, when it has one.
    fn secs(&self) -> Option<f64> {
        let secs = (self.last - self.first) / 1e3;
        (secs > 0.0).then_some(secs)
    }
}

/// The events' first attempts of a send, and the groups that waited for the in-flight cap.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pace {
    /// Events whose first attempt went out.
    events: u64,
    /// When those first attempts were planned.
    planned: Option<Span>,
    /// When they went out.
    sent: Option<Span>,
    /// Deliveries (first or a later copy) that found every slot of the in-flight cap taken and
    /// waited for one.
    pub waited_for_cap: u64,
    /// The in-flight cap (`--concurrency`).
    pub cap: usize,
    /// The rate the plan's positions are paced at (`None`: as fast as the cap lets).
    rate: Option<f64>,
}

impl Pace {
    /// A send paced at `rate` with `cap` requests in flight at most, nothing sent yet.
    pub fn new(cap: usize, rate: Option<f64>) -> Self {
        Self { cap, rate, ..Self::default() }
    }

    /// An event's first attempt, planned at `planned_ms` and sent at `sent_ms`.
    pub fn first_attempt(&mut self, planned_ms: f64, sent_ms: f64) {
        self.events += 1;
        match (&mut self.planned, &mut self.sent) {
            (Some(p), Some(s)) => {
                p.add(planned_ms);
                s.add(sent_ms);
            }
            _ => (self.planned, self.sent) = (Some(Span::at(planned_ms)), Some(Span::at(sent_ms))),
        }
    }

    /// This send's and `other`'s, as one (lanes of one send).
    #[must_use]
    pub fn and(mut self, other: &Pace) -> Self {
        self.events += other.events;
        for (mine, theirs) in [(&mut self.planned, other.planned), (&mut self.sent, other.sent)] {
            *mine = match (*mine, theirs) {
                (Some(mut a), Some(b)) => {
                    a.add(b.first);
                    a.add(b.last);
                    Some(a)
                }
                (a, b) => a.or(b),
            };
        }
        self.waited_for_cap += other.waited_for_cap;
        self.cap = self.cap.max(other.cap);
        self.rate = self.rate.or(other.rate);
        self
    }

    /// Events a second the plan asked for (`None` for an unpaced send, or under two events sent).
    pub fn planned_rate(&self) -> Option<f64> {
        self.rate.filter(|_| self.events >= 2)
    }

    /// Events a second the first attempts went out at: the planned rate over the stretch of their
    /// sends against that of their plan; unpaced, the events over the stretch of their sends.
    pub fn achieved_rate(&self) -> Option<f64> {
        let sent = self.sent.and_then(|s| s.secs()).filter(|_| self.events >= 2)?;
        match (self.rate, self.planned.and_then(|p| p.secs())) {
            (Some(rate), Some(planned)) => Some(rate * planned / sent),
            (Some(_), None) => None,
            (None, _) => Some((self.events - 1) as f64 / sent),
        }
    }

    /// Whether the send fell behind its plan (the report model's [`behind`]).
    pub fn fell_behind(&self) -> bool {
        behind(self.planned_rate(), self.achieved_rate()).is_some()
    }

    /// Why the send fell behind its plan, when it did: deliveries waited for the in-flight cap,
    /// or (the cap never full) the sender could not keep the pace.
    pub fn behind_cause(&self) -> Option<BehindCause> {
        self.fell_behind().then_some(if self.waited_for_cap > 0 {
            BehindCause::InFlightCap { cap: self.cap as u64 }
        } else {
            BehindCause::Machine
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` first attempts planned every `every_ms`, each sent `lag(i)` ms after its plan.
    fn pace(n: u32, every_ms: f64, lag: impl Fn(u32) -> f64) -> Pace {
        let mut p = Pace::new(16, (every_ms > 0.0).then(|| 1e3 / every_ms));
        for i in 0..n {
            let planned = f64::from(i) * every_ms;
            p.first_attempt(planned, planned + lag(i));
        }
        p
    }

    #[test]
    fn a_send_on_its_plan_achieves_the_planned_rate() {
        let p = pace(201, 5.0, |_| 0.3);
        let (planned, achieved) = (p.planned_rate().expect("planned"), p.achieved_rate().expect("achieved"));
        assert!((planned - 200.0).abs() < 1e-9, "{planned}");
        assert!((achieved - 200.0).abs() < 1e-9, "{achieved}");
        assert!(!p.fell_behind());
    }

    #[test]
    fn the_planned_rate_is_the_pace_even_where_the_plan_spaces_its_first_attempts_wider() {
        // Duplicates take positions of the plan between first attempts: at 200 positions a
        // second, first attempts 10 ms apart. Sent on time, the achieved rate is the planned one.
        let mut p = Pace::new(16, Some(200.0));
        for i in 0..50u32 {
            let t = f64::from(i) * 10.0;
            p.first_attempt(t, t + 1.0);
        }
        assert_eq!(p.planned_rate(), Some(200.0));
        assert!((p.achieved_rate().expect("achieved") - 200.0).abs() < 1e-9);
    }

    #[test]
    fn a_send_whose_sends_lag_more_and_more_fell_behind() {
        // Planned at 200/s, sent at 16/s: each first attempt 1/16 s after the one before.
        let p = pace(201, 5.0, |i| f64::from(i) * (62.5 - 5.0));
        let achieved = p.achieved_rate().expect("achieved");
        assert!((achieved - 16.0).abs() < 1e-9, "{achieved}");
        assert!(p.fell_behind());
    }

    #[test]
    fn nothing_or_one_event_sent_has_no_rate_and_never_fell_behind() {
        for p in [Pace::new(16, Some(200.0)), pace(1, 5.0, |_| 100.0)] {
            assert_eq!((p.planned_rate(), p.achieved_rate()), (None, None));
            assert!(!p.fell_behind());
        }
        // All planned at once (an unpaced send): no planned rate, so nothing to fall behind; the
        // achieved rate is the sends' own, ten over 9 ms here.
        let unpaced = pace(10, 0.0, f64::from);
        assert_eq!(unpaced.planned_rate(), None);
        assert!((unpaced.achieved_rate().expect("achieved") - 1000.0).abs() < 1e-9);
        assert!(!unpaced.fell_behind());
    }

    #[test]
    fn lanes_add_up_to_the_send() {
        let (mut a, mut b) = (Pace::new(8, Some(200.0)), Pace::new(8, Some(200.0)));
        for i in 0..100u32 {
            let t = f64::from(i) * 5.0;
            if i % 2 == 0 { a.first_attempt(t, t) } else { b.first_attempt(t, t) }
        }
        a.waited_for_cap = 3;
        let whole = a.and(&b);
        assert_eq!((whole.achieved_rate(), whole.planned_rate()), {
            let one = pace(100, 5.0, |_| 0.0);
            (one.achieved_rate(), one.planned_rate())
        });
        assert_eq!((whole.waited_for_cap, whole.cap), (3, 8));
        assert!((whole.achieved_rate().expect("rate") - 200.0).abs() < 1e-9);
        assert_eq!(Pace::new(8, Some(200.0)).and(&b).achieved_rate(), b.achieved_rate());
    }
}
