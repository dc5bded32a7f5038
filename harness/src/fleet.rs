//! The receiver fleet: worker processes of `hookbench serve`, started from hookbench's own
//! executable, health-checked, killed (SIGKILL, a real process death), watched for deaths of
//! their own (an injected abort) and restarted on the same address, so a sender keeps its URLs.
//!
//! Workers listen on ports below the kernel's ephemeral range, which outgoing connections never
//! take, so a restarted worker finds its port free.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::matrix::Design;
use crate::matrix::Isolation;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use receivers::timing::StageTotals;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::serve::Listening;

/// How to start a worker.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    /// The executable holding `hookbench serve` (the running one, in a bench).
    pub exe: PathBuf,
    /// The design.
    pub design: Design,
    /// The database URL.
    pub database_url: String,
    /// Signing secrets (`whsec_...`).
    pub secrets: Vec<String>,
    /// Simulated work per delivery.
    pub work_delay: Duration,
    /// The transactions' isolation; `None`: the database's own default.
    pub isolation: Option<Isolation>,
    /// Inbox claim loops per worker.
    pub inbox_workers: usize,
    /// Pool size per worker.
    pub max_connections: u32,
    /// Where workers' logs go (appended); `None` inherits this process's stderr.
    pub log: Option<PathBuf>,
    /// Start workers with `--inject-faults` (they honour `hookbench-fault`).
    pub inject_faults: bool,
    /// How long a worker's request waits for a database connection before a 503
    /// ([`WORKER_POOL_TIMEOUT`] in a bench).
    pub pool_timeout: Duration,
}

/// The pool timeout of the workers hookbench starts. `serve` defaults to 2 s, so a receiver says
/// quickly that its database is out of reach; a bench loads its workers far past what one
/// receiver sees (several benches at once in the tests, on 2 cores), and there a request waiting
/// its turn for a connection should wait, not be shed, so the figures measure the design rather
/// than the machine's load. 10 s is what the workers had before `--pool-timeout` existed.
pub const WORKER_POOL_TIMEOUT: Duration = Duration::from_secs(10);

/// Applies the receivers' migrations to the database at `url` (creating a SQLite file), once,
/// before any worker starts: workers starting together then find the schema ready, and an
/// observer can connect before the first delivery.
pub async fn ready_schema(url: &str) -> Result<(), SchemaError> {
    let options = receivers::store::StoreOptions {
        max_connections: 1,
        acquire_timeout: Duration::from_secs(30),
        ..receivers::store::StoreOptions::default()
    };
    receivers::store::Store::connect(url, &options).await.map_err(SchemaError)?.close().await;
    Ok(())
}

/// The receivers' schema could not be applied: the store's own error, said as it says it (so that
/// the modules above need not name the receivers' types).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct SchemaError(#[from] pub receivers::store::StoreError);

/// How long a started or restarted worker may take to answer `/healthz` with a 200.
const HEALTHY_WITHIN: Duration = Duration::from_secs(30);

/// Why a worker could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The process could not be spawned.
    #[error("cannot start {exe}")]
    Spawn {
        /// The executable.
        exe: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It exited or said nothing useful before listening.
    #[error("worker {index} did not start: {reason}")]
    Start {
        /// Which worker.
        index: usize,
        /// What happened.
        reason: String,
    },
    /// It listens but `/healthz` does not answer 200.
    #[error("worker {index} at {addr} is not healthy: {reason}")]
    Unhealthy {
        /// Which worker.
        index: usize,
        /// Its address.
        addr: SocketAddr,
        /// What `/healthz` said.
        reason: String,
    },
    /// Sending a signal failed.
    #[error("cannot signal worker {index}")]
    Signal {
        /// Which worker.
        index: usize,
        /// Why.
        #[source]
        source: nix::Error,
    },
    /// Waiting for a process failed.
    #[error("waiting for worker {index}")]
    Wait {
        /// Which worker.
        index: usize,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A worker's `GET /stats`.
#[derive(Debug, serde::Deserialize)]
struct WorkerStats {
    stages: BTreeMap<String, StageTotals>,
}

/// One running worker process.
#[derive(Debug)]
pub struct Worker {
    /// Its index in the fleet.
    pub index: usize,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its process id.
    pub pid: u32,
    child: Child,
}

impl Worker {
    /// Its webhook URL for `source`.
    pub fn webhook_url(&self, source: &str) -> String {
        format!("http://{}/webhooks/{source}", self.addr)
    }
}

/// How long a worker may take to connect, migrate and listen.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a worker may take to stop after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// A set of worker processes of one design on one database.
#[derive(Debug)]
pub struct Fleet {
    spec: WorkerSpec,
    workers: Vec<Worker>,
    http: reqwest::Client,
}

impl Fleet {
    /// Starts `n` workers concurrently and waits until each answers `/healthz`.
    pub async fn start(spec: WorkerSpec, n: usize) -> Result<Self, FleetError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| FleetError::Start { index: 0, reason: format!("HTTP client: {e}") })?;
        let mut fleet = Self { spec, workers: Vec::with_capacity(n), http };
        let mut starting = tokio::task::JoinSet::new();
        for i in 0..n {
            let spec = fleet.spec.clone();
            starting.spawn(async move { spawn_worker(&spec, i, None).await });
        }
        let mut first_error = None;
        while let Some(started) = starting.join_next().await {
            match started {
                Ok(Ok(w)) => fleet.workers.push(w),
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(e) => {
                    first_error.get_or_insert(FleetError::Start { index: 0, reason: e.to_string() });
                }
            }
        }
        fleet.workers.sort_by_key(|w| w.index);
        if let Some(e) = first_error {
            fleet.stop().await.ok();
            return Err(e);
        }
        for i in 0..fleet.workers.len() {
            if let Err(e) = fleet.wait_healthy(i).await {
                fleet.stop().await.ok();
                return Err(e);
            }
        }
        Ok(fleet)
    }

    /// The running workers.
    pub fn workers(&self) -> &[Worker] {
        &self.workers
    }

    /// Checks worker `i`'s `/healthz`.
    pub async fn health(&self, i: usize) -> Result<(), FleetError> {
        let w = &self.workers[i];
        let url = format!("http://{}/healthz", w.addr);
        let unhealthy = |reason: String| FleetError::Unhealthy { index: i, addr: w.addr, reason };
        let response = self.http.get(&url).send().await.map_err(|e| unhealthy(e.to_string()))?;
        if response.status().is_success() {
            Ok(())
        } else {
            let status = response.status();
            Err(unhealthy(format!("{status}: {}", response.text().await.unwrap_or_default())))
        }
    }

    /// Every worker's `GET /stats` added up: where their time has gone, per stage of a delivery.
    pub async fn stages(&self) -> Result<BTreeMap<String, StageTotals>, FleetError> {
        let mut total: BTreeMap<String, StageTotals> = BTreeMap::new();
        for (i, w) in self.workers.iter().enumerate() {
            let unhealthy = |reason: String| FleetError::Unhealthy { index: i, addr: w.addr, reason };
            let url = format!("http://{}/stats", w.addr);
            let response = self.http.get(&url).send().await.map_err(|e| unhealthy(e.to_string()))?;
            let stats: WorkerStats = response.json().await.map_err(|e| unhealthy(format!("/stats: {e}")))?;
            for (stage, t) in stats.stages {
                total.entry(stage).or_default().add(&t);
            }
        }
        Ok(total)
    }

    /// Waits until worker `i` answers `/healthz` with a 200; a worker just started on a loaded
    /// machine may answer 503 while its first database connection opens. The last answer after
    /// `HEALTHY_WITHIN`.
    pub async fn wait_healthy(&self, i: usize) -> Result<(), FleetError> {
        let deadline = tokio::time::Instant::now() + HEALTHY_WITHIN;
        loop {
            match self.health(i).await {
                Ok(()) => return Ok(()),
                Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// SIGKILLs worker `i` (no cleanup, no goodbye) and reaps it.
    pub async fn kill(&mut self, i: usize) -> Result<(), FleetError> {
        let w = &mut self.workers[i];
        signal(w, Signal::SIGKILL)?;
        w.child.wait().await.map_err(|source| FleetError::Wait { index: i, source })?;
        Ok(())
    }

    /// Waits up to `timeout` for worker `i` to exit on its own; its exit status, or `None` if it
    /// is still running.
    pub async fn wait_exit(&mut self, i: usize, timeout: Duration) -> Result<Option<ExitStatus>, FleetError> {
        let w = &mut self.workers[i];
        match tokio::time::timeout(timeout, w.child.wait()).await {
            Ok(status) => Ok(Some(status.map_err(|source| FleetError::Wait { index: i, source })?)),
            Err(_) => Ok(None),
        }
    }

    /// Starts a new process in worker `i`'s place (after a kill or a crash), on the same address.
    pub async fn restart(&mut self, i: usize) -> Result<(), FleetError> {
        let _ = self.workers[i].child.start_kill();
        let _ = self.workers[i].child.wait().await;
        let addr = self.workers[i].addr;
        let mut tries = 0;
        self.workers[i] = loop {
            match spawn_worker(&self.spec, i, Some(addr)).await {
                Ok(w) => break w,
                // The port may still be held for a moment by the dead process's sockets.
                Err(FleetError::Start { .. }) if tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        };
        self.wait_healthy(i).await
    }

    /// Stops every worker: SIGTERM, then SIGKILL for any still running after a grace period.
    pub async fn stop(mut self) -> Result<(), FleetError> {
        for w in &self.workers {
            // A worker that already died cannot be signalled; that is fine.
            let _ = signal(w, Signal::SIGTERM);
        }
        for w in &mut self.workers {
            match tokio::time::timeout(STOP_TIMEOUT, w.child.wait()).await {
                Ok(r) => {
                    r.map_err(|source| FleetError::Wait { index: w.index, source })?;
                }
                Err(_) => {
                    let _ = w.child.start_kill();
                    let _ = w.child.wait().await;
                }
            }
        }
        Ok(())
    }
}

fn signal(w: &Worker, sig: Signal) -> Result<(), FleetError> {
    let pid = i32::try_from(w.pid)
        .map_err(|_| FleetError::Signal { index: w.index, source: nix::Error::EINVAL })?;
    kill(Pid::from_raw(pid), sig).map_err(|source| FleetError::Signal { index: w.index, source })
}

/// The first port of the kernel's ephemeral range (what outgoing connections are given).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// A free port on 127.0.0.1 below the ephemeral range, or 0 (any) if none is found.
fn listen_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let top = u32::from(ephemeral_start());
    let bottom = 10_000u32.min(top.saturating_sub(1));
    let span = top - bottom;
    if span < 100 {
        return 0;
    }
    // Start somewhere different in each process, then walk.
    let offset = std::process::id().wrapping_mul(7919);
    for _ in 0..200 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = bottom + (offset.wrapping_add(n.wrapping_mul(7))) % span;
        let Ok(port) = u16::try_from(port) else { continue };
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    0
}

async fn spawn_worker(
    spec: &WorkerSpec,
    index: usize,
    addr: Option<SocketAddr>,
) -> Result<Worker, FleetError> {
    let listen = addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], listen_port())));
    let mut cmd = Command::new(&spec.exe);
    cmd.arg("serve")
        .args(["--design", spec.design.as_str()])
        .args(["--listen", &listen.to_string()])
        .args(["--work-delay", &humantime::format_duration(spec.work_delay).to_string()])
        .args(spec.isolation.iter().flat_map(|level| ["--isolation", level.as_str()]))
        .args(["--inbox-workers", &spec.inbox_workers.to_string()])
        .args(["--max-connections", &spec.max_connections.to_string()])
        .args(["--pool-timeout", &humantime::format_duration(spec.pool_timeout).to_string()])
        .args(spec.inject_faults.then_some("--inject-faults"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    // Through the environment, not argv, so the secrets and the database's password do not show
    // in `ps` or /proc/PID/cmdline (`serve --database-url` reads DATABASE_URL; the parent's own
    // DATABASE_URL, the server bench provisions on, is replaced).
    cmd.env("HOOKBENCH_SECRET", spec.secrets.join(" "));
    cmd.env("DATABASE_URL", &spec.database_url);
    match &spec.log {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| FleetError::Spawn { exe: path.display().to_string(), source })?;
            cmd.stderr(file);
        }
        None => {
            cmd.stderr(Stdio::inherit());
        }
    }
    let mut child =
        cmd.spawn().map_err(|source| FleetError::Spawn { exe: spec.exe.display().to_string(), source })?;
    let start_error = |reason: String| FleetError::Start { index, reason };
    let stdout = child.stdout.take().ok_or_else(|| start_error("no stdout".into()))?;
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(START_TIMEOUT, lines.next_line()).await;
    let line = match first {
        Ok(Ok(Some(line))) => line,
        Ok(Ok(None)) => {
            let status = child.wait().await.map(|s| s.to_string()).unwrap_or_default();
            return Err(start_error(format!("exited before listening ({status}); see its log")));
        }
        Ok(Err(e)) => return Err(start_error(e.to_string())),
        Err(_) => {
            let _ = child.start_kill();
            return Err(start_error(format!("not listening after {}s", START_TIMEOUT.as_secs())));
        }
    };
    let listening: Listening = serde_json::from_str(&line)
        .map_err(|e| start_error(format!("unexpected first line {line:?}: {e}")))?;
    // Keep draining stdout so the worker never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Worker { index, addr: listening.listening, pid: listening.pid, child })
}

#[cfg(test)]
mod tests {
    use receivers::signature::Secret;

    use crate::wire::Whsec;

    /// The secret a bench starts its workers with is read by the harness as the workers read it:
    /// the same secrets taken, the same refused in the same words.
    #[test]
    fn a_bench_secret_is_read_as_the_receivers_read_it() {
        for s in ["whsec_a2V5", "  whsec_a2V5\n", "key", "whsec_!!", "whsec_"] {
            let ours = s.parse::<Whsec>().map(|w| w.as_str().to_string()).map_err(|e| e.to_string());
            let theirs = s.parse::<Secret>().map(|w| w.to_whsec()).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{s:?}");
        }
        assert_eq!(Whsec::from_key(b"k").as_str(), Secret::from_bytes(b"k".to_vec()).to_whsec());
    }
}
