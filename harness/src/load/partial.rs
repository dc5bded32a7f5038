//! A shard's partial result, `shard.json` in its directory beside its `history.jsonl`: what it
//! sent (counters and the two latency histograms in HdrHistogram's V2 format), the run it belongs
//! to (parameters, a digest of the delivery plan, the design and backend), and no verdict: the
//! checker runs once, in `merge`, over every shard's deliveries together.

use std::path::{Path, PathBuf};

use crate::matrix::Backend;
use crate::matrix::Design;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::report::{AuditParameters, Parameters, ShardSummary};
use crate::sender::{AttemptRecord, SendReport};
use crate::stats::CounterSnapshot;
use crate::wire::Provider;
use crate::workload::{Shard, Workload, WorkloadConfig};

/// The partial result's file name in a shard's directory.
pub const PARTIAL_FILE: &str = "shard.json";
/// The partial format this hookbench writes and reads: 3 since `timeouts` counts only timeouts
/// (lost acks are `acks_lost`) and the actual-send histogram holds answered attempts only, so a
/// shard written before is refused by its format rather than by counters that disagree; 4 since
/// resets are counted apart from connections never made and an attempt's outcome is its fate's
/// word (`200 ack lost`, `reset`).
const FORMAT: u32 = 4;
/// The seal's file name in a shard's directory: HMAC-SHA256, hex, over its shard.json and history.
pub const SEAL_FILE: &str = "shard.hmac";
/// The environment variable holding the key shards seal their files with, and `merge
/// --shard-key` checks them with (a Kubernetes Secret given to every pod).
pub const SHARD_KEY_ENV: &str = "HOOKBENCH_SHARD_KEY";
/// The largest shard.json `merge` reads, bytes (4 GiB). A bench shard's is a few kilobytes; an
/// audit shard's lists its attempts (about 150 bytes each): an audit of `--events 10000000` (its
/// bound) with a few attempts each fits in one shard.
pub const MAX_PARTIAL_BYTES: u64 = 4 << 30;

/// A shard's partial result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Partial {
    /// The format's version.
    pub format: u32,
    /// The hookbench that wrote it (shards of different versions may plan differently).
    pub hookbench: String,
    /// The shard's run id (its directory's name).
    pub run_id: String,
    /// Which shard.
    pub shard: Shard,
    /// What the shard sent to (a bench's receivers or an audited one), and the run's parameters.
    pub target: Target,
    /// Everything that shapes the workload (`merge` generates it again to check the events).
    pub workload: WorkloadConfig,
    /// SHA-256 of the whole delivery plan (every event and group), the same for every shard.
    pub plan_digest: String,
    /// `--start-at`, when given: when the plan's first position was due.
    pub start_at: Option<String>,
    /// How late the shard started for `start_at`, seconds (0 when on time or not given).
    pub late_by_s: f64,
    /// From the planned start to the shard's last answer, seconds.
    pub elapsed_s: f64,
    /// The plan's groups this shard sent.
    pub groups: usize,
    /// The workload's events this shard held.
    pub events: usize,
    /// What the sender counted.
    pub counters: CounterSnapshot,
    /// Latency from each attempt's planned time, µs: an HdrHistogram, V2, base64.
    pub latency_planned_v2: String,
    /// Latency from each attempt's actual send, µs: an HdrHistogram, V2, base64.
    pub latency_actual_v2: String,
}

/// What a shard sent to, and what its merge needs to judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// A bench's `--targets`: receivers of one design on one database.
    Bench {
        /// The database's backend.
        backend: Backend,
        /// The design the receivers implement.
        design: Design,
        /// The database the receivers share, its password left out.
        database: String,
        /// The run's parameters, the same for every shard of one run.
        parameters: Box<Parameters>,
    },
    /// An audit's parallel load against a receiver hookbench did not start.
    Audit(Box<AuditShard>),
}

/// An audit shard's target, and its attempts for the merged verdict's witnesses (how each event
/// was answered is read from the shard's history, as for a bench).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditShard {
    /// What every shard of the audit shares (flattened: shard.json keeps one object).
    #[serde(flatten)]
    pub run: AuditRun,
    /// Every attempt the shard made (for the witnesses).
    pub attempts: Vec<AttemptRecord>,
}

/// What must be the same in every shard of one audit: the receiver, the ids and the queries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRun {
    /// The receiver's URL.
    pub url: String,
    /// The signing scheme.
    pub signing: String,
    /// The provider it is held to.
    pub provider: Option<Provider>,
    /// The payload's name.
    pub payload: String,
    /// The run's id prefix (the same for every shard).
    pub id_prefix: String,
    /// The run's first account.
    pub account_base: i64,
    /// The receiver's database, its password left out.
    pub observe_db: String,
    /// The audit's applied query.
    pub applied_query: Option<String>,
    /// The audit's update applied query (absent from shards recorded before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_applied_query: Option<String>,
    /// The audit's state query.
    pub state_query: Option<String>,
    /// The audit's dead-letter query.
    pub dead_letter_query: Option<String>,
    /// The audit's balance query (absent from shards recorded before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance_query: Option<String>,
    /// The audit's count query (absent from shards recorded before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_query: Option<String>,
    /// The loads' parameters, the same for every shard.
    pub parameters: AuditParameters,
}

impl Target {
    /// What must be the same in every shard of one run, as text: all of it for a bench, the
    /// [`AuditRun`] (not the shard's own acknowledgements and attempts) for an audit.
    pub fn run_identity(&self) -> String {
        match self {
            Self::Bench { .. } => serde_json::to_string(self),
            Self::Audit(a) => serde_json::to_string(&a.run),
        }
        .unwrap_or_default()
    }

    /// `bench postgres/atomic` or `audit http://...`.
    pub fn describe(&self) -> String {
        match self {
            Self::Bench { backend, design, .. } => format!("bench {backend}/{design}"),
            Self::Audit(a) => format!("audit {}", a.run.url),
        }
    }
}

/// Why a partial result could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum PartialError {
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file could not be read within its limit, or is not a regular file.
    #[error(transparent)]
    Read(#[from] crate::files::ReadError),
    /// A field holds what no shard writes (a shard numbered past its count, a time that is not
    /// one).
    #[error("{}: {what}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        what: String,
    },
    /// The file is not a partial result.
    #[error("{} is not a hookbench shard result: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A seal missing or not the key's.
    #[error("{}: {what}", dir.display())]
    Seal {
        /// The shard's directory.
        dir: PathBuf,
        /// What is wrong.
        what: &'static str,
    },
    /// Written by a format this hookbench does not read.
    #[error("{} is shard format {found}; this hookbench reads format {FORMAT}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// Its format.
        found: u32,
    },
}

impl Partial {
    /// A shard's partial result from what its sender did.
    pub fn new(
        run: (String, Shard, Target),
        workload: &Workload,
        start_at: Option<jiff::Timestamp>,
        sent: &SendReport,
    ) -> Self {
        let (run_id, shard, target) = run;
        Self {
            format: FORMAT,
            hookbench: env!("CARGO_PKG_VERSION").to_string(),
            run_id,
            shard,
            target,
            workload: workload.config.clone(),
            plan_digest: plan_digest(workload),
            start_at: start_at.map(|t| t.to_string()),
            late_by_s: sent.late_by.as_secs_f64(),
            elapsed_s: sent.elapsed.as_secs_f64(),
            groups: workload.groups.iter().filter(|g| shard.holds(g.event)).count(),
            events: (0..workload.events.len()).filter(|&i| shard.holds(i as u32)).count(),
            counters: sent.counters,
            latency_planned_v2: sent.histograms.intended.to_v2_base64(),
            latency_actual_v2: sent.histograms.actual.to_v2_base64(),
        }
    }

    /// Writes `shard.json` into `dir` (whole or not at all: written beside it, then renamed, so
    /// a `merge --wait` never reads half of it); its path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, PartialError> {
        let path = dir.join(PARTIAL_FILE);
        let io = |source| PartialError::Io { path: path.clone(), source };
        std::fs::create_dir_all(dir).map_err(io)?;
        let json = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        let partly = dir.join(format!("{PARTIAL_FILE}.part"));
        std::fs::write(&partly, json).map_err(io)?;
        // The seal is whole before shard.json appears: a `merge --wait` that sees shard.json
        // finds its seal complete.
        if let Some(key) = std::env::var_os(SHARD_KEY_ENV).filter(|k| !k.is_empty()) {
            seal_as(dir, &partly, key.as_encoded_bytes())?;
        }
        std::fs::rename(&partly, &path).map_err(io)?;
        Ok(path)
    }

    /// Reads `shard.json` from `dir` (at most [`MAX_PARTIAL_BYTES`]), refusing fields no shard
    /// writes: a shard outside 1..=N or N past `MAX_SHARDS`, times that are not durations.
    pub fn read(dir: &Path) -> Result<Self, PartialError> {
        let path = dir.join(PARTIAL_FILE);
        let bytes = crate::files::read_capped(&path, MAX_PARTIAL_BYTES, "a shard's result")?;
        let partial: Self = serde_json::from_slice(&bytes)
            .map_err(|source| PartialError::Json { path: path.clone(), source })?;
        if partial.format != FORMAT {
            return Err(PartialError::Format { path, found: partial.format });
        }
        let invalid = |what: String| PartialError::Invalid { path: path.clone(), what };
        Shard::new(partial.shard.index, partial.shard.count)
            .map_err(|e| invalid(format!("its shard: {e}")))?;
        partial.elapsed().map_err(|e| invalid(format!("elapsed_s {:?}: {e}", partial.elapsed_s)))?;
        partial.late_by().map_err(|e| invalid(format!("late_by_s {:?}: {e}", partial.late_by_s)))?;
        Ok(partial)
    }

    /// `elapsed_s` as a duration; an error for what is not one (negative, NaN, past
    /// `Duration::MAX`).
    pub fn elapsed(&self) -> Result<std::time::Duration, std::time::TryFromFloatSecsError> {
        std::time::Duration::try_from_secs_f64(self.elapsed_s)
    }

    /// `late_by_s` as a duration, as [`Partial::elapsed`].
    pub fn late_by(&self) -> Result<std::time::Duration, std::time::TryFromFloatSecsError> {
        std::time::Duration::try_from_secs_f64(self.late_by_s)
    }

    /// The shard as the merged report lists it.
    pub fn summary(&self) -> ShardSummary {
        ShardSummary {
            shard: self.shard,
            run_id: self.run_id.clone(),
            groups: self.groups,
            deliveries: self.counters.deliveries,
            late_by_s: self.late_by_s,
            elapsed_s: self.elapsed_s,
        }
    }
}

/// HMAC-SHA256 with `key` over the shard's files in `dir` (shard.json, then its history), each
/// preceded by its name and length so that no bytes can move from one to the other.
fn seal_of(dir: &Path, json: &Path, key: &[u8]) -> Result<hmac::Hmac<Sha256>, PartialError> {
    use hmac::{KeyInit, Mac};
    use std::io::Read;
    // HMAC takes keys of any length, so this cannot fail.
    let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(b"hookbench shard seal 1\n");
    let (history, _) = crate::history::path_in(dir)
        .map_err(|e| PartialError::Invalid { path: dir.to_path_buf(), what: e.to_string() })?;
    // Each file is sealed under its final name, whatever it is read from.
    let files = [
        (json.to_path_buf(), PARTIAL_FILE.as_ref(), MAX_PARTIAL_BYTES),
        (history.clone(), history.file_name().unwrap_or_default(), crate::history::MAX_HISTORY_BYTES),
    ];
    for (path, name, limit) in files {
        let io = |source| PartialError::Io { path: path.clone(), source };
        let file = crate::files::open_regular(&path)?;
        let len = file.metadata().map_err(io)?.len();
        if len > limit {
            let what = "a shard's file to seal";
            return Err(crate::files::ReadError::TooLarge { path: path.clone(), limit, what }.into());
        }
        let name = std::ffi::OsStr::as_encoded_bytes(name);
        mac.update(&(name.len() as u64).to_le_bytes());
        mac.update(name);
        mac.update(&len.to_le_bytes());
        let mut reader = file.take(len);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = reader.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            mac.update(&buf[..n]);
        }
    }
    Ok(mac)
}

/// Seals the shard's files in `dir` with `key`: `shard.hmac` beside them; its path.
pub fn seal(dir: &Path, key: &[u8]) -> Result<PathBuf, PartialError> {
    seal_as(dir, &dir.join(PARTIAL_FILE), key)
}

/// [`seal`], with the shard.json about to be renamed into place read from `json`; the seal is
/// written beside, then renamed, so it is never seen half-written.
fn seal_as(dir: &Path, json: &Path, key: &[u8]) -> Result<PathBuf, PartialError> {
    use hmac::Mac;
    let path = dir.join(SEAL_FILE);
    let io = |source| PartialError::Io { path: path.clone(), source };
    let hex = hex::encode(seal_of(dir, json, key)?.finalize().into_bytes());
    let partly = dir.join(format!("{SEAL_FILE}.part"));
    crate::files::write_nofollow(&partly, hex.as_bytes()).map_err(io)?;
    std::fs::rename(&partly, &path).map_err(io)?;
    Ok(path)
}

/// Refuses the shard in `dir` unless its seal is `key`'s over its files as they are.
pub fn verify_seal(dir: &Path, key: &[u8]) -> Result<(), PartialError> {
    use hmac::Mac;
    let refuse = |what| PartialError::Seal { dir: dir.to_path_buf(), what };
    let path = dir.join(SEAL_FILE);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(refuse(
            "no shard.hmac: the shard was not sealed (set HOOKBENCH_SHARD_KEY for every shard)",
        ));
    }
    let text = crate::files::read_text_capped(&path, 1024, "a shard's seal")?;
    let Ok(said) = hex::decode(text.trim()) else { return Err(refuse("shard.hmac is not hex")) };
    // verify_slice compares in constant time.
    seal_of(dir, &dir.join(PARTIAL_FILE), key)?
        .verify_slice(&said)
        .map_err(|_| refuse("its seal is not the --shard-key's over its shard.json and history: the files were edited, or sealed with another key"))
}

/// SHA-256 of the delivery plan: every event (its kind, account, amount or version) and every
/// group (position, event, copies), and which events are poison. Two shards with the same digest
/// sent parts of one plan.
pub fn plan_digest(workload: &Workload) -> String {
    let mut h = Sha256::new();
    for e in &workload.events {
        h.update(format!("{e:?}\n").as_bytes());
    }
    for g in &workload.groups {
        h.update(g.at.to_bits().to_le_bytes());
        h.update(g.event.to_le_bytes());
        h.update([g.copies]);
    }
    for &p in &workload.poisoned {
        h.update([u8::from(p)]);
    }
    hex::encode(h.finalize())
}
