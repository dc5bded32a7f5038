//! `hookbench serve` as a real process, for the tests that need one (a worker of another user,
//! its resident memory).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A worker process, stopped with SIGTERM when dropped.
pub struct Worker {
    pub addr: SocketAddr,
    child: Child,
}

impl Worker {
    /// Starts `exe serve` (the `hookbench` executable) with `args` (besides `--listen` and
    /// `--secret`).
    pub fn spawn(exe: &str, args: &[&str]) -> Self {
        Self::start(std::path::Path::new(exe), args, None)
    }

    /// Starts it as user `uid`, from a copy of the executable in `dir` (which `uid` can read: the
    /// build directory may sit where other users cannot reach, such as /root).
    pub fn spawn_as(exe: &str, uid: u32, dir: &std::path::Path, args: &[&str]) -> Self {
        let copy = dir.join("hookbench");
        std::fs::copy(exe, &copy).expect("copy the executable");
        std::os::unix::fs::chown(&copy, Some(uid), Some(uid)).expect("chown the executable");
        Self::start(&copy, args, Some(uid))
    }

    fn start(exe: &std::path::Path, args: &[&str], uid: Option<u32>) -> Self {
        let mut cmd = Command::new(exe);
        cmd.env_remove("DATABASE_URL")
            .env_remove("HOOKBENCH_SECRET")
            .args(["serve", "--listen", "127.0.0.1:0", "--secret", super::SECRET])
            .args(args)
            .stdout(Stdio::piped());
        if let Some(uid) = uid {
            std::os::unix::process::CommandExt::uid(&mut cmd, uid);
            std::os::unix::process::CommandExt::gid(&mut cmd, uid);
        }
        let mut child = cmd.spawn().expect("spawn hookbench serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("listening line");
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("no listening line ({e}): {line:?}"));
        let addr = v["listening"].as_str().expect("address").parse().expect("socket address");
        Self { addr, child }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self) -> String {
        format!("http://{}/webhooks/acme", self.addr)
    }

    pub fn health_url(&self) -> String {
        format!("http://{}/healthz", self.addr)
    }

    /// Resident memory in KiB, from /proc.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("/proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
        let _ = self.child.wait();
    }
}
