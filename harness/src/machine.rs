//! What machine a run happened on, for report headers.

/// The report's type: the machine as a report's header records it.
pub use crate::report::model::Machine;

impl Machine {
    /// Reads this machine's description (Linux `/proc` where available).
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|rest| rest.split_once(':')))
            .map_or_else(|| "unknown CPU".to_string(), |(_, name)| name.trim().to_string());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = meminfo.lines().find_map(|l| {
            let kb = l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?.trim();
            kb.parse::<u64>().ok().map(|kb| kb * 1024)
        });
        Self {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            memory_bytes,
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
        }
    }

    /// One line: `<cpu> <os> <arch>`, as the article's script prints its machine.
    pub fn summary(&self) -> String {
        format!("{} {} {}", self.cpu, self.os, self.arch)
    }
}

/// The short git commit of the working directory, if it is a git checkout.
pub fn git_sha() -> Option<String> {
    let out = std::process::Command::new("git").args(["rev-parse", "--short", "HEAD"]).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The default run id: `<UTC timestamp>-<short sha>`.
pub fn default_run_id() -> String {
    let ts = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
    format!("{ts}-{}", git_sha().unwrap_or_else(|| "nogit".to_string()))
}
