//! hookbench measures whether webhook receivers apply every event exactly once, under real
//! parallel at-least-once delivery, and puts beside each real figure the one the article
//! "Webhook Idempotency and Retries: 4 Receiver Handlers Tested" (docs/article.md) simulates for
//! the same seed. `audit` runs the article's go-live checklist against anyone's receiver.
//!
//! # Layout
//!
//! In the order data flows through a bench:
//!
//! - [`workload`]: the article's seeded events and delivery plan, bit for bit (its rng, events,
//!   duplicates, lost acks, concurrent copies, shuffles).
//! - [`model`]: the article's one-process simulation of the same workload, reproduced exactly.
//! - `sender`: the plan sent as signed, parallel HTTP deliveries, open loop, retried with backoff.
//! - the receivers on trial are the `receivers` crate; [`fleet`] starts them as worker processes
//!   of `hookbench serve` (`serve`), kills and restarts them; `chaos` does so during a bench.
//! - [`observer`]: what a receiver applied, read from where it keeps it, with connections of its
//!   own; [`checker`]: the correctness figures from those answers and the workload alone.
//! - `stats`: latency histograms and delivery counters; [`threshold`]: `--fail-on` expressions
//!   and their outcomes against a report's rows.
//! - [`report`]: report.json (with its schema), report.md, report.html, the terminal table, the
//!   history index and `report compare`.
//!
//! [`audit`] sends the checklist to a receiver hookbench did not start, over the same [`wire`]
//! (payloads and the providers' signing schemes), and judges it through observers of its own.
//!
//! [`shard`] splits one bench over processes or pods (`bench --shard I/N`, each writing a partial
//! result) and merges them (`hookbench merge`): histograms added exactly, the checker run once.
//!
//! Around them: `bench` (the matrix of backend × design cells, each a `Cell` of named steps),
//! `experiments` (crash, jitter, retention for real), `perf` (hookbench beside pgbench and wrk),
//! `progress` (bars while a run runs), `reason` (an error as a report keeps it), `machine` (what a
//! run ran on), and [`cli`], the command line; `main.rs` only calls [`cli::main`]. Databases come from the `provision` crate.

pub mod audit;
mod bench;
mod chaos;
pub mod cli;
mod experiments;
pub mod explain;
pub mod fleet;
pub mod history;
pub mod judge;
pub mod load;
mod machine;
pub mod merge;
pub mod model;
pub mod observe;
mod perf;
mod progress;
mod reason;
pub mod report;
mod sender;
mod serve;
mod stats;
pub mod threshold;
pub mod wire;
pub mod workload;
