//! `hookbench crash`: the article's crash test with real process deaths.
//!
//! One worker process of `hookbench serve --inject-faults` per cell. The article's 2,000 credit
//! events are delivered one at a time, as its script's queue does; attempt `n` of event `id`
//! carries `hookbench-fault: crash-after-key` when the article's draw `keyed("crash", id, n)` is
//! below 0.01, and the worker then aborts (SIGABRT) after writing the key and before the side
//! effect. The experiment waits for the process to exit, counts the exit if it was SIGABRT,
//! restarts the worker on the same address and sends attempt `n + 1`. Keys, applied events, lost
//! events and the ledger are then read from the database.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::Duration;

use crate::matrix::Backend;
use crate::matrix::Design;
use receivers::event::{CREDIT_TYPE, Event};
use receivers::fault::{Fault, HEADER_FAULT};
use receivers::signature::Secret;

use super::ExperimentError;
use crate::fleet::{Fleet, WorkerSpec};
use crate::model::crash::{self, CrashDesign, crash_event_id, crashes};
use crate::observe::{Observers, Tables};
/// The report's type: a row of the real crash table.
pub use crate::report::model::CrashRow;
use crate::wire::Wire;
use crate::wire::signing::{Attempt, Signer};

/// The designs the crash table shows: the key committed apart, with the side effect, and the inbox.
pub const DESIGNS: [Design; 3] = [Design::Split, Design::Atomic, Design::Inbox];

/// How long a worker may take to die once it should have.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts of one event before the experiment gives up on it.
const MAX_ATTEMPTS: u32 = 100;

/// What a crash run needs.
#[derive(Debug, Clone)]
pub struct CrashConfig {
    /// The article's seed.
    pub seed: u32,
    /// Events (the article's 2,000 by default).
    pub events: usize,
    /// The executable whose `serve` runs the worker.
    pub exe: PathBuf,
    /// Where the worker's log goes (appended).
    pub log: Option<PathBuf>,
}

/// The model's design for a real one.
fn model_design(design: Design) -> Option<CrashDesign> {
    match design {
        Design::Split => Some(CrashDesign::Split),
        Design::Atomic => Some(CrashDesign::Atomic),
        _ => None,
    }
}

/// Crash event `i` as it goes on the wire: 100 credits to account `i % 500`.
fn body(i: usize) -> String {
    let event = Event::Credit {
        id: crash_event_id(i),
        account: (i % 500) as i64,
        amount: 100,
        created: 1_790_000_000 + i as i64,
    };
    serde_json::to_string(&event).unwrap_or_default()
}

/// Runs the crash test for `design` on the (fresh) database at `url`.
pub async fn run(
    config: &CrashConfig,
    backend: Backend,
    design: Design,
    url: &str,
) -> Result<CrashRow, ExperimentError> {
    crate::fleet::ready_schema(url).await.map_err(|e| e.0)?;
    let tables = Tables::connect(url).await?;
    let secret = Secret::from_bytes(format!("hookbench-crash-{}", std::process::id()).into_bytes());
    let spec = WorkerSpec {
        exe: config.exe.clone(),
        design,
        database_url: url.to_string(),
        secrets: vec![secret.to_whsec()],
        work_delay: Duration::ZERO,
        isolation: None,
        inbox_workers: 1,
        max_connections: 4,
        log: config.log.clone(),
        inject_faults: true,
        pool_timeout: crate::fleet::WORKER_POOL_TIMEOUT,
    };
    let mut fleet = Fleet::start(spec, 1).await?;
    let signer = Wire::hookbench(&secret.to_whsec()).map_err(|e| ExperimentError::Run(e.to_string()))?.signer;
    let result = drive(config, design, &mut fleet, &signer).await;
    let quiet = Observers::new(vec![Box::new(tables.clone())]).drained(Duration::from_secs(60)).await;
    fleet.stop().await?;
    let (crashes, other_exits, attempts) = result?;
    if let Err(pending) = quiet {
        return Err(ExperimentError::Run(format!("{pending} inbox rows still pending after 60 s")));
    }
    let applied = tables.applied_events().await?;
    let events = config.events as u64;
    let row = CrashRow {
        backend,
        design,
        events,
        crashes,
        other_exits,
        keys: tables.dedupe_keys().await?,
        applied,
        lost: events.saturating_sub(applied),
        ledger: tables.credits_total().await?,
        expected: events as i64 * 100,
        attempts,
        model: model_design(design).map(|d| crash::run_events(config.seed, d, config.events)),
    };
    tables.close().await;
    Ok(row)
}

/// Sends every event, one at a time; returns (SIGABRT exits, other exits, attempts).
async fn drive(
    config: &CrashConfig,
    design: Design,
    fleet: &mut Fleet,
    signer: &Signer,
) -> Result<(u64, u64, u64), ExperimentError> {
    // A fresh connection per request: a pooled one may belong to a process that just died.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| ExperimentError::Run(format!("HTTP client: {e}")))?;
    let url = fleet.workers()[0].webhook_url("crash");
    let (mut crashes_seen, mut other_exits, mut attempts) = (0, 0, 0);
    for i in 0..config.events {
        let id = crash_event_id(i);
        let body = body(i);
        let mut n = 1u32;
        loop {
            let crash = crashes(config.seed, i, n);
            let ts = jiff::Timestamp::now().as_second();
            let mut request = client.post(&url).header("content-type", "application/json").body(body.clone());
            let attempt = Attempt {
                id: &id,
                event_type: CREDIT_TYPE,
                timestamp: ts,
                body: body.as_bytes(),
                query: crate::wire::PathQuery::Plain,
            };
            for (name, value) in signer.headers(&attempt) {
                request = request.header(name, value);
            }
            if crash {
                request = request.header(HEADER_FAULT, Fault::CrashAfterKey.as_str());
            }
            attempts += 1;
            let answered = request.send().await;
            // The inbox acknowledges first; its worker dies when it claims the row.
            let died = match &answered {
                Ok(r) if r.status().is_success() => crash && design == Design::Inbox,
                Ok(r) if r.status().is_client_error() => {
                    return Err(ExperimentError::Run(format!("{id} refused: {}", r.status())));
                }
                Ok(_) => false,
                Err(_) => true,
            };
            if died {
                match fleet.wait_exit(0, EXIT_TIMEOUT).await? {
                    Some(status) if status.signal() == Some(nix::libc::SIGABRT) => crashes_seen += 1,
                    Some(_) => other_exits += 1,
                    None if answered.is_ok() => {
                        return Err(ExperimentError::Run(format!(
                            "{id}: the worker was to crash when its inbox row was claimed, and is still running"
                        )));
                    }
                    None => {
                        let e = answered.err().map(|e| e.to_string()).unwrap_or_default();
                        return Err(ExperimentError::Run(format!(
                            "{id}: no answer ({e}) from a running worker"
                        )));
                    }
                }
                fleet.restart(0).await?;
            }
            if matches!(&answered, Ok(r) if r.status().is_success()) {
                break;
            }
            n += 1;
            if n > MAX_ATTEMPTS {
                return Err(ExperimentError::Run(format!(
                    "{id}: not acknowledged after {MAX_ATTEMPTS} attempts"
                )));
            }
            if !died {
                tokio::time::sleep(Duration::from_millis(10)).await; // a 5xx: back off a little
            }
        }
    }
    Ok((crashes_seen, other_exits, attempts))
}
