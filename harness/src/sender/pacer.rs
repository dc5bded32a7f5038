//! Waiting for a group's planned send time to within tens of microseconds.
//!
//! tokio's timer counts in whole milliseconds and rounds a deadline up to the next one, and the
//! reactor's `epoll_wait` sleeps in milliseconds too: a group released by `sleep_until` left up
//! to two milliseconds after its planned time, about 1.2 ms on the median at 30,000 requests/s
//! here (reports/performance-history.md). Latency is measured from the plan, so every such millisecond was
//! added to what the receiver was charged with. A Linux `timerfd` set to the exact wait wakes
//! the shard's reactor itself, with the kernel's high-resolution timer.

use std::os::fd::{AsFd as _, AsRawFd, RawFd};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

/// A timerfd, as tokio's reactor wants it.
struct Timer(TimerFd);

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// `timer` in the current runtime's reactor.
// `AsyncFd::new` is deprecated (tokio#8587) because a type could hand out a descriptor it does
// not own, or a different one later; its replacement is `unsafe`, which this workspace forbids.
// `Timer` owns its timerfd for as long as the `AsyncFd` holds it and always names the same one,
// which is the condition the replacement asks its caller to promise.
#[allow(deprecated)]
fn register(timer: Timer) -> Option<AsyncFd<Timer>> {
    AsyncFd::new(timer).ok()
}

/// One shard's pacer: waits on its own timerfd, or on tokio's timer where none can be had.
pub struct Pacer {
    timer: Option<AsyncFd<Timer>>,
}

impl Pacer {
    /// A pacer for the current runtime's reactor.
    pub fn new() -> Self {
        let flags = TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC;
        let timer = TimerFd::new(ClockId::CLOCK_MONOTONIC, flags).ok().and_then(|t| register(Timer(t)));
        Self { timer }
    }

    /// Returns at `at`, or at once when it has passed.
    pub async fn until(&mut self, at: Instant) {
        let now = Instant::now();
        if at <= now {
            return;
        }
        if self.precise(at - now).await.is_err() {
            tokio::time::sleep_until(at).await;
        }
    }

    /// Waits `wait` on the timerfd; an error when there is none or it failed.
    async fn precise(&mut self, wait: std::time::Duration) -> Result<(), ()> {
        let timer = self.timer.as_ref().ok_or(())?;
        let expiration = Expiration::OneShot(TimeSpec::from_duration(wait));
        timer.get_ref().0.set(expiration, TimerSetTimeFlags::empty()).map_err(drop)?;
        loop {
            let mut ready = timer.readable().await.map_err(drop)?;
            // Reading the expiry count rearms readiness; WouldBlock means the wake was stale.
            match ready.try_io(|t| t.get_ref().0.wait().map_err(std::io::Error::from)) {
                Ok(result) => return result.map_err(drop),
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_pacer_returns_at_the_planned_time_and_not_before() {
        let mut pacer = Pacer::new();
        assert!(pacer.timer.is_some(), "a timerfd on Linux");
        for micros in [300, 1_500, 4_000] {
            let at = Instant::now() + std::time::Duration::from_micros(micros);
            pacer.until(at).await;
            assert!(Instant::now() >= at, "returned before {micros} us had passed");
        }
        // A time already past returns at once.
        pacer.until(Instant::now()).await;
    }
}
