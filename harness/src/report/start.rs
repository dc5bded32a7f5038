//! A run starting now, on this machine: its header (the commit and the machine detected) and an
//! empty report of its kind.

use super::{AuditSection, BenchBody, Header, Parameters, Report, RunBody, SCHEMA, Versions};
use crate::machine::{Machine, git_sha};

impl Header {
    /// The header of a run starting now: its id, this hookbench's version and commit, the
    /// machine, the time.
    pub fn new(run_id: String) -> Self {
        Self {
            run_id,
            schema: SCHEMA,
            started_at: jiff::Timestamp::now().to_string(),
            git_sha: git_sha(),
            versions: Versions { hookbench: env!("CARGO_PKG_VERSION").to_string(), ..Versions::default() },
            machine: Machine::detect(),
            thresholds: Vec::new(),
            history: None,
            shards: None,
        }
    }
}

impl Report {
    /// A bench's report of nothing yet.
    pub fn bench(run_id: String, parameters: Parameters) -> Self {
        Self { header: Header::new(run_id), body: RunBody::Bench(BenchBody::new(parameters)) }
    }

    /// An audit's report.
    pub fn audit(run_id: String, audit: AuditSection) -> Self {
        Self { header: Header::new(run_id), body: RunBody::Audit { audit } }
    }
}
