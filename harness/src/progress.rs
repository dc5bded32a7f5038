//! What a long run shows while it runs: a progress bar per bench cell on a terminal, one line per
//! finished cell otherwise, and messages that do not tear the bars.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

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
        let ticker = {
            let bar = bar.clone();
            tokio::spawn(async move {
                loop {
                    let c = sent.counters.snapshot();
                    bar.set_position(sent.counters.groups_done.load(Ordering::Relaxed));
                    bar.set_message(format!(
                        "{} attempts, {} 5xx, {} timeouts",
                        c.deliveries, c.status_5xx, c.timeouts
                    ));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        CellBar { bar, label, ticker }
    }
}

/// One cell's bar; its ticker stops when the bar is dropped.
#[derive(Debug)]
pub struct CellBar {
    bar: ProgressBar,
    label: String,
    ticker: tokio::task::JoinHandle<()>,
}

impl CellBar {
    /// Every group sent; waiting for the receivers to finish.
    pub fn settling(&self) {
        self.ticker.abort();
        self.bar.set_position(self.bar.length().unwrap_or(0));
        self.bar.set_message("waiting for the receivers to go quiet");
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
