//! hookbench measures whether webhook receivers apply every event exactly once, under real
//! parallel at-least-once delivery, and puts beside each real figure the one the article
//! "Webhook Idempotency and Retries: 4 Receiver Handlers Tested" (docs/article.md) simulates for
//! the same seed. `audit` runs the article's go-live checklist against anyone's receiver.
//!
//! # Layout
//!
//! Layers, from the bottom. A module imports only from the layers below its own, never from one
//! of its layer or above (`layout_tests` holds the code to this list, and every module to being
//! named in it):
//!
//! 0. [`judge`], [`workload`], [`matrix`], `reason`, [`files`], [`printable`]: what needs
//!    nothing else. The judge: from what was sent and answered and what was observed to a
//!    verdict, every anomaly class defined once. The article's seeded events and delivery plan,
//!    bit for bit, and a shard as a slice of it; the designs, backends and isolation levels by
//!    the harness's own names; an error as a report keeps it; files read to a size limit and
//!    written without following symlinks; outside text made safe to print.
//! 1. [`report::model`]: a run's report as plain data: a header and a bench's or an audit's
//!    body, and every figure they record, whoever produces it (latency percentiles, buckets and
//!    spectra, chaos asked for and done, the retry policy, the provider, the machine, the
//!    thresholds' outcomes, the experiments' rows, the witnesses and their history lines). It
//!    imports only the judge, the workload and the matrix; the producers above re-export the
//!    types they fill in, and their behaviour (`impl` blocks) stays with them.
//! 2. `stats`, `machine`, [`threshold`]: latency histograms and delivery counters; the machine
//!    and commit a run ran on; `--fail-on` expressions and their outcomes.
//! 3. `serve`, [`model`], [`history`], [`wire`], [`observe`]: one receiver worker (`hookbench
//!    serve`); the article's one-process simulation; history.jsonl's lines; what one attempt
//!    carries (payloads, the providers' signing schemes and verification rules as data);
//!    evidence from the world through one observer trait (hookbench's tables, the user's SQL, a
//!    sink).
//! 4. [`fleet`], `sender`, [`explain`]: worker processes started, killed and restarted; the plan
//!    as signed parallel HTTP deliveries; an event's timeline and an anomaly's witnesses read
//!    from the verdict a history records.
//! 5. `chaos`, `progress`: workers killed and connections ended during a bench; progress bars.
//! 6. `experiments`, `perf`: crash, jitter and retention for real; hookbench beside pgbench, wrk
//!    and oha.
//! 7. [`report`]: the rest of it: report.json read and written, with its schema, a new run's
//!    header, the thresholds' subjects, and the renderers: report.md, report.html, the terminal
//!    tables, `--metrics`, the index and `report compare`.
//! 8. [`load`]: a sent workload as the judge reads it and as the history keeps its verdict; a
//!    bench cell's row; an audit load's figures; a shard's partial result.
//! 9. [`audit`], `bench`, [`merge`], [`repro`]: the three kinds of run, peers: the checklist
//!    against anyone's receiver, the matrix of backend x design cells, and shards merged into one
//!    run; and an audit's FAIL written as a script that reproduces it without hookbench.
//! 10. [`cli`]: the command line; `main.rs` only calls [`cli::main`].
//!
//! The receivers on trial are the `receivers` crate: only the code that runs one imports it
//! (`serve` and the command line's `serve`, `fleet`, `perf`, `experiments`; a test holds the rest
//! to that), and the harness keeps its own names ([`matrix`]), secrets ([`wire::Whsec`]), bodies
//! and constants, held to the receivers' by tests. Databases come from the `provision` crate.

pub mod audit;
mod bench;
mod chaos;
pub mod cli;
mod experiments;
pub mod explain;
pub mod files;
pub mod fleet;
pub mod history;
pub mod judge;
pub mod load;
mod machine;
pub mod matrix;
pub mod merge;
pub mod model;
pub mod observe;
mod perf;
pub mod printable;
mod progress;
mod reason;
pub mod report;
pub mod repro;
mod sender;
mod serve;
mod stats;
pub mod threshold;
pub mod wire;
pub mod workload;

#[cfg(test)]
mod layout_tests;
