//! The receiver's process, through the user's own commands: `--kill-cmd` to kill it, `--start-cmd`
//! to start it again, `--health-url` polled until it answers. hookbench never learns how the
//! receiver runs (a process, a container, a service): it only runs what it was told and watches
//! the health URL.

use std::process::Stdio;
use std::time::Duration;

use tokio::time::Instant;

use super::AuditError;
use super::config::bounds::{duration, within};

/// How often the health URL is asked while the receiver comes back.
const HEALTH_POLL: Duration = Duration::from_millis(20);

/// How long a restart may take.
const RESTART_TIMEOUT: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(3600);

/// The receiver's own commands, shared by the checks that kill it (crash, retry storm).
#[derive(Debug, Clone, clap::Args)]
pub struct ControlFlags {
    /// Kills the receiver, run through `sh -c`: `kill -9 $(cat app.pid)`, `docker kill app`.
    /// With --start-cmd and --health-url, runs the crash check.
    #[arg(long, value_name = "CMD", requires_all = ["start_cmd", "health_url"])]
    pub kill_cmd: Option<String>,
    /// Starts the receiver again, run through `sh -c` and not waited for (its output is
    /// discarded; redirect it in CMD to keep it): `./run-app.sh`, `docker start app`.
    #[arg(long, value_name = "CMD", requires_all = ["kill_cmd", "health_url"])]
    pub start_cmd: Option<String>,
    /// A URL that answers 2xx once the receiver serves, polled after --start-cmd.
    #[arg(long, value_name = "URL", requires_all = ["kill_cmd", "start_cmd"])]
    pub health_url: Option<String>,
    /// How long a restart may take before the audit gives up (1s to 1h).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub restart_timeout: Duration,
}

impl ControlFlags {
    /// The commands, when all three were given, checked: an http(s) health URL, a restart
    /// timeout within its bounds.
    pub fn control(&self) -> Result<Option<Control>, AuditError> {
        let (Some(kill), Some(start), Some(health)) = (&self.kill_cmd, &self.start_cmd, &self.health_url)
        else {
            return Ok(None);
        };
        if !(health.starts_with("http://") || health.starts_with("https://")) {
            return Err(AuditError::Config("--health-url must be an http:// or https:// URL".into()));
        }
        within("--restart-timeout", self.restart_timeout, &RESTART_TIMEOUT, duration)?;
        Ok(Some(Control {
            kill_cmd: kill.clone(),
            start_cmd: start.clone(),
            health_url: health.clone(),
            restart_timeout: self.restart_timeout,
        }))
    }
}

/// The user's commands and health URL.
#[derive(Debug, Clone)]
pub struct Control {
    /// Kills the receiver (run through `sh -c`, waited for).
    pub kill_cmd: String,
    /// Starts it again (run through `sh -c`; not waited for, since it may run the receiver in the
    /// foreground; its output is discarded).
    pub start_cmd: String,
    /// Answers 2xx once the receiver serves again.
    pub health_url: String,
    /// How long a restart may take before the audit gives up.
    pub restart_timeout: Duration,
}

/// Why the receiver could not be killed or started.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// A command could not be run or failed.
    #[error("{flag} `{command}` {problem}")]
    Command {
        /// `--kill-cmd`, `--start-cmd` or `--retention-cmd`.
        flag: &'static str,
        /// The command.
        command: String,
        /// What happened.
        problem: String,
    },
    /// No HTTP client could be made to ask the health URL.
    #[error("no HTTP client for --health-url: {0}")]
    Client(String),
    /// The health URL did not answer 2xx before the receiver was disturbed.
    #[error("--health-url {url} does not answer 2xx before the first kill (it answered: {last})")]
    NotHealthyBefore {
        /// The URL.
        url: String,
        /// Its answer or the error.
        last: String,
    },
    /// The health URL did not answer 2xx in time.
    #[error("--health-url {url} did not answer 2xx within {} of --start-cmd (last: {last})", humantime::format_duration(*.waited))]
    NotHealthy {
        /// The URL.
        url: String,
        /// How long the audit waited.
        waited: Duration,
        /// The last answer or error.
        last: String,
    },
}

/// One kill and restart, in milliseconds from the audit's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Restart {
    /// When the kill command was run.
    pub killed_ms: f64,
    /// When the health URL answered 2xx again.
    pub healthy_ms: f64,
}

impl Restart {
    /// From the kill to the first healthy answer.
    pub fn took_ms(&self) -> f64 {
        self.healthy_ms - self.killed_ms
    }
}

/// The client the health URL is asked with. It never follows a redirect: a 302 to another server
/// (a login page, a load balancer's default) says nothing of whether the receiver serves.
pub fn health_client() -> Result<reqwest::Client, ControlError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ControlError::Client(e.to_string()))
}

impl Control {
    /// Runs the kill command and waits for it.
    pub async fn kill(&self) -> Result<(), ControlError> {
        run_to_end("--kill-cmd", &self.kill_cmd).await
    }

    /// Runs the start command and waits until the health URL answers 2xx.
    pub async fn start(&self, client: &reqwest::Client) -> Result<(), ControlError> {
        let fail = |problem: String| ControlError::Command {
            flag: "--start-cmd",
            command: self.start_cmd.clone(),
            problem,
        };
        let mut child = shell(&self.start_cmd).spawn().map_err(|e| fail(format!("could not run: {e}")))?;
        let deadline = Instant::now() + self.restart_timeout;
        loop {
            // A start command that fails at once says so, rather than a timeout later.
            if let Ok(Some(status)) = child.try_wait()
                && !status.success()
            {
                return Err(fail(format!("exited with {status}")));
            }
            let last = match client.get(&self.health_url).timeout(Duration::from_secs(1)).send().await {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => not_healthy(r.status()),
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(ControlError::NotHealthy {
                    url: self.health_url.clone(),
                    waited: self.restart_timeout,
                    last,
                });
            }
            tokio::time::sleep(HEALTH_POLL).await;
        }
    }

    /// Refuses to start disturbing a receiver that does not answer its health URL now.
    pub async fn ensure_healthy(&self, client: &reqwest::Client) -> Result<(), ControlError> {
        let answer = client.get(&self.health_url).timeout(Duration::from_secs(2)).send().await;
        let last = match answer {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) => not_healthy(r.status()),
            Err(e) => e.to_string(),
        };
        Err(ControlError::NotHealthyBefore { url: self.health_url.clone(), last })
    }

    /// Kills the receiver, waits `down`, starts it and waits until it is healthy.
    pub async fn restart(
        &self,
        client: &reqwest::Client,
        down: Duration,
        clock: impl Fn() -> f64,
    ) -> Result<Restart, ControlError> {
        let killed_ms = clock();
        self.kill().await?;
        tokio::time::sleep(down).await;
        self.start(client).await?;
        Ok(Restart { killed_ms, healthy_ms: clock() })
    }
}

/// What a health answer that is not 2xx says.
fn not_healthy(status: reqwest::StatusCode) -> String {
    let redirect = if status.is_redirection() { ", a redirect (not followed)" } else { "" };
    format!("status {}{redirect}", status.as_u16())
}

/// Runs `command` (given as `flag`) through the shell and waits for it; a failure says how it
/// ended and what it wrote on stderr.
pub async fn run_to_end(flag: &'static str, command: &str) -> Result<(), ControlError> {
    let fail = |problem: String| ControlError::Command { flag, command: command.to_string(), problem };
    let mut child =
        shell(command).stderr(Stdio::piped()).spawn().map_err(|e| fail(format!("could not run: {e}")))?;
    let mut reader = tokio::spawn(start_of(child.stderr.take()));
    let status = child.wait().await.map_err(|e| fail(format!("could not run: {e}")))?;
    if status.success() {
        reader.abort();
        return Ok(());
    }
    // A process the command left running may hold its stderr open: what came by now is enough.
    let kept = match tokio::time::timeout(Duration::from_secs(1), &mut reader).await {
        Ok(read) => read.unwrap_or_default(),
        Err(_) => {
            reader.abort();
            Vec::new()
        }
    };
    let lossy = String::from_utf8_lossy(&kept);
    let said = crate::printable::line(lossy.trim());
    Err(fail(format!(
        "exited with {status}{}",
        if said.is_empty() { String::new() } else { format!(": {said}") }
    )))
}

/// What a command's stderr says that is quoted in an error: its start.
const STDERR_KEPT: usize = 2048;

/// The first [`STDERR_KEPT`] bytes of `stderr`, read to its end so the command never blocks on a
/// full pipe, and the rest discarded: a command that writes without end costs nothing.
async fn start_of(stderr: Option<tokio::process::ChildStderr>) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let Some(mut stderr) = stderr else { return Vec::new() };
    let (mut kept, mut buf) = (Vec::new(), [0u8; 8192]);
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = STDERR_KEPT.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    kept
}

/// `sh -c command`, with no input and its output discarded: a receiver it starts must not hold
/// the audit's own output open.
fn shell(command: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failing_commands_endless_stderr_is_quoted_short_and_escaped() {
        // 10 MB of escape sequences on stderr, then failure: once all kept and printed raw.
        let command =
            "printf '\\033[31mred' >&2; yes \"$(printf '\\033[2J')\" | head -c 10000000 >&2; exit 3";
        let err = run_to_end("--kill-cmd", command).await.expect_err("exit 3");
        let said = err.to_string();
        assert!(said.contains("exit status: 3: \\u{1b}[31mred"), "{said}");
        assert!(!said.contains('\u{1b}'), "no raw escape reaches the terminal");
        assert!(said.len() < 4 * STDERR_KEPT + command.len() + 200, "{} bytes", said.len());
    }

    #[tokio::test]
    async fn a_command_that_succeeds_is_ok() {
        assert!(run_to_end("--kill-cmd", "echo fine >&2").await.is_ok());
        assert!(run_to_end("--kill-cmd", "exit 1").await.is_err());
    }
}
