//! `--query-timeout` and `--max-rows`: the limits every observer query runs under, shared by
//! `audit` and `merge` (the two commands that query a receiver's database).

use std::time::Duration;

use super::flags::duration_within;
use crate::observe::QueryLimits;

/// The shortest `--query-timeout`: a real query of a few thousand rows takes longer.
const MIN_TIMEOUT: Duration = Duration::from_millis(100);
/// The longest: past it a query is not observing, it is hung.
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// The observer's query limits, as flags.
#[derive(Debug, Clone, clap::Args)]
pub struct QueryLimitArgs {
    /// How long one observer query may run (100ms to 1h); past it the query is stopped (on
    /// Postgres by the server itself: statement_timeout) and the run stops naming this flag.
    #[arg(long, default_value = "30s", value_parser = duration_within(MIN_TIMEOUT, MAX_TIMEOUT))]
    pub query_timeout: Duration,
    /// How many rows one observer query may return (1 to 10000000000), counted as they stream in
    /// (other runs' rows too: they cost time, not memory).
    #[arg(long, default_value_t = 100_000_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000_000))]
    pub max_rows: u64,
}

impl QueryLimitArgs {
    /// The limits the flags say.
    pub fn limits(&self) -> QueryLimits {
        QueryLimits { timeout: self.query_timeout, max_rows: self.max_rows }
    }
}
