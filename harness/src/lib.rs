//! hookbench: measures whether webhook receivers apply every event exactly once.
//!
//! The article this project grew from compares receiver designs in a one-process simulation.
//! hookbench generates the article's seeded [`workload`] bit for bit, reproduces its [`model`]
//! exactly, and (as it grows) delivers the same workload for real to receiver processes.
//! [`cli`] is the command line; `main.rs` only calls it.

pub mod bench;
pub mod chaos;
pub mod checker;
pub mod cli;
pub mod experiments;
pub mod fleet;
pub mod machine;
pub mod model;
pub mod observer;
pub mod perf;
pub mod progress;
pub mod report;
pub mod sender;
pub mod serve;
pub mod stats;
pub mod workload;
