//! A process's peak resident memory, measured from outside it: the command runs as the only child
//! of a small Python wrapper, which reads `getrusage(RUSAGE_CHILDREN).ru_maxrss` once it is reaped
//! (the kernel's own high-water mark, in KiB on Linux). Measured in the test process itself, the
//! figure would mix in every other child the test binary starts.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

const WRAPPER: &str = r#"
import resource, subprocess, sys
try:
    code = subprocess.run(sys.argv[2:], timeout=float(sys.argv[1])).returncode
except subprocess.TimeoutExpired:
    code = "timeout"
sys.stderr.write("\npeak-rss-kib %d exit %s\n" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code))
"#;

/// What a measured run gave: its output, its exit code (`None`: killed at the time limit or by a
/// signal) and its peak resident memory.
pub struct Measured {
    pub output: Output,
    pub code: Option<i32>,
    pub peak_rss_kib: u64,
}

impl Measured {
    /// Its stderr, without the wrapper's line.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).to_string()
    }

    /// Peak resident memory in MiB.
    pub fn peak_rss_mib(&self) -> f64 {
        self.peak_rss_kib as f64 / 1024.0
    }
}

/// Runs `program` with `args` to completion, or kills it after `limit`, and measures its peak
/// resident memory.
pub fn peak_rss(program: &str, args: &[&str], limit: Duration) -> Measured {
    let mut output = Command::new("python3")
        .arg("-c")
        .arg(WRAPPER)
        .arg(limit.as_secs_f64().to_string())
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let (rest, last) = stderr.trim_end().rsplit_once('\n').unwrap_or(("", stderr.trim_end()));
    let mut words = last.split_whitespace();
    assert_eq!(words.next(), Some("peak-rss-kib"), "the wrapper's line in {stderr}");
    let peak_rss_kib = words.next().and_then(|w| w.parse().ok()).expect("a figure");
    let code = words.nth(1).and_then(|w| w.parse::<i32>().ok()).filter(|c| *c >= 0);
    output.stderr = rest.as_bytes().to_vec();
    Measured { output, code, peak_rss_kib }
}
