//! hookbench as its users run it, through the real command line (`cli::run` with parsed
//! arguments) and real worker processes, on real Postgres (one server for this binary:
//! `DATABASE_URL`, or a container) and real SQLite. The time-scaled jitter test has a binary of
//! its own (`tests/jitter.rs`), so nothing else shares the machine with its clock. Support lives
//! in the `testkit` crate, shared with the receivers' tests.

mod aggregates;
mod audit;
mod audit_faults;
mod audit_report;
mod bench;
mod ci_outputs;
mod config_file;
mod experiments;
mod flag_bounds;
mod fleet;
mod hardening;
mod hostile;
mod hostile_reports;
mod hostile_shards;
mod judge;
mod junit;
mod model;
mod observe_limits;
mod observe_mysql;
mod outcomes;
mod pace;
mod preflight_evidence;
mod progress_lines;
mod provider_bodies;
mod providers;
mod provision;
mod rates;
mod reports;
mod repro;
mod serve_cli;
mod shards;
mod sign;
mod stub;
mod update_and_semantic;
mod verdicts;
mod worker_process;
