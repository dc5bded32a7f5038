//! What a long run shows while it runs: on a terminal, a progress bar per bench cell and the
//! audit's steps under a live status line; without one (a CI log) or with `--no-progress`, plain
//! lines, never more than [`HEARTBEAT`] apart while a cell or an audit runs, so that a log is never
//! silent for minutes; and messages that do not tear the bars.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::sender::Progress;

/// The run's bars (hidden when not drawing).
#[derive(Debug)]
pub struct Bars {
    multi: MultiProgress,
}

impl Bars {
    /// Bars drawn on stderr when `visible`, else none.
    pub fn new(visible: bool) -> Self {
        let target = if visible { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        Self { multi: MultiProgress::with_draw_target(target) }
    }

    /// Prints a line on stderr without tearing the bars.
    pub fn say(&self, line: &str) {
        self.multi.suspend(|| eprintln!("hookbench: {line}"));
    }

    /// A bar for a cell named `label` of `groups` delivery groups, following `sent`.
    pub fn cell(&self, label: String, groups: u64, sent: Arc<Progress>) -> CellBar {
        let bar = self.multi.add(ProgressBar::new(groups));
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>26} [{bar:30}] {pos}/{len} groups {elapsed_precise} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(label.clone());
        let settling = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (bar, label, settling) = (bar.clone(), label.clone(), settling.clone());
            tokio::spawn(async move {
                let mut said = Instant::now();
                loop {
                    let c = sent.counters.snapshot();
                    let done = sent.counters.groups_done.load(Ordering::Relaxed);
                    bar.set_position(done);
                    let mut message = format!("{} attempts: {}", c.deliveries, c.fates());
                    if settling.load(Ordering::Relaxed) {
                        message = format!("waiting for the receivers to go quiet; {message}");
                    }
                    if bar.is_hidden() && said.elapsed() >= HEARTBEAT {
                        eprintln!("hookbench: {label}: {done}/{groups} groups, {message}");
                        said = Instant::now();
                    }
                    bar.set_message(message);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        CellBar { bar, label, ticker, settling }
    }
}

/// One cell's bar; its ticker stops when the bar is dropped.
#[derive(Debug)]
pub struct CellBar {
    bar: ProgressBar,
    label: String,
    ticker: tokio::task::JoinHandle<()>,
    settling: Arc<AtomicBool>,
}

impl CellBar {
    /// Every group sent; waiting for the receivers to finish.
    pub fn settling(&self) {
        // The ticker keeps going: the wait may be long, and a log must still hear from it.
        self.settling.store(true, Ordering::Relaxed);
    }

    /// The cell stopped short.
    pub fn failed(&self, why: &str) {
        self.ticker.abort();
        self.bar.abandon_with_message(why.to_string());
    }

    /// The cell finished: its one-line summary on the bar, or on stderr when bars are hidden.
    pub fn finished(&self, summary: &str) {
        self.ticker.abort();
        self.bar.finish_with_message(summary.to_string());
        if self.bar.is_hidden() {
            eprintln!("hookbench: {}: {summary}", self.label);
        }
    }
}

impl Drop for CellBar {
    fn drop(&mut self) {
        self.ticker.abort();
    }
}

/// The longest a running cell or audit goes without a line when no bar is drawn: under the 10 s
/// a CI log may sit silent, with room for the tick that notices.
pub const HEARTBEAT: Duration = Duration::from_secs(9);

/// How often the status is looked at.
const TICK: Duration = Duration::from_millis(250);

/// A run's step lines on stderr (`hookbench audit: <step>`) and its status: redrawn live under the
/// steps on a terminal, or printed as a line of its own whenever no line was printed for
/// [`HEARTBEAT`].
#[derive(Debug)]
pub struct StepLines {
    prefix: &'static str,
    live: Option<ProgressBar>,
    said: Mutex<Instant>,
}

impl StepLines {
    /// Lines prefixed `prefix`, with a live status line when `live`.
    pub fn new(prefix: &'static str, live: bool) -> Arc<Self> {
        let live = live.then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        Arc::new(Self { prefix, live, said: Mutex::new(Instant::now()) })
    }

    /// Prints `line`, above the live status when there is one.
    pub fn say(&self, line: &str) {
        let line = format!("{}: {line}", self.prefix);
        match &self.live {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
        *self.said.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// Shows `status()` until the returned guard is dropped: redrawn every tick on a terminal,
    /// else a line whenever nothing was said for [`HEARTBEAT`].
    pub fn keep_showing(self: &Arc<Self>, status: impl Fn() -> String + Send + 'static) -> Showing {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (lines, stop) = (self.clone(), stop.clone());
            std::thread::spawn(move || {
                let started = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    lines.show(&status, started);
                }
            })
        };
        Showing { stop, thread: Some(thread), lines: self.clone() }
    }

    fn show(&self, status: &impl Fn() -> String, started: Instant) {
        if let Some(bar) = &self.live {
            bar.set_message(status());
            bar.tick();
            return;
        }
        let quiet_for = self.said.lock().unwrap_or_else(PoisonError::into_inner).elapsed();
        if quiet_for >= HEARTBEAT {
            self.say(&format!("{} s, {}", started.elapsed().as_secs(), status()));
        }
    }
}

/// The status shown by [`StepLines::keep_showing`]; dropping it stops the showing and clears a
/// live line.
#[derive(Debug)]
pub struct Showing {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    lines: Arc<StepLines>,
}

impl Drop for Showing {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(bar) = &self.lines.live {
            bar.finish_and_clear();
        }
    }
}
