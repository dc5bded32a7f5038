//! What hookbench writes into a CI, held to what the CI does with it, through the real binary:
//! no secret's value in any output or file; a JUnit file that Python's `xml.etree` and
//! junitparser read whatever the receiver answered; a step summary that GitHub's own renderer
//! (cmark-gfm, `scripts/ci-readers/render_markdown.py`) shows without a link, an image or HTML from
//! the receiver; `--junit` and the step summary never written through a symlink or blocked on a
//! FIFO; a config file's `url` never read as a flag; a receiver's redirect quoted cut.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testkit::SECRET;

use super::junit::{SCRIPTS, junitparser};
use super::stub::{Reply, Stub, free_addr};

/// What a run of the binary gave.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Ran {
    fn said(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `hookbench ARGS` with `env` added, its output into files in `dir` (a pipe would fill with
/// a long answer quoted), killed after `limit` (`code` is then `None`).
fn hookbench(dir: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Ran {
    let (out, err) = (dir.join("stdout.txt"), dir.join("stderr.txt"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookbench"));
    cmd.args(args).stdin(Stdio::null());
    cmd.stdout(std::fs::File::create(&out).expect("stdout file"));
    cmd.stderr(std::fs::File::create(&err).expect("stderr file"));
    cmd.env_remove("GITHUB_STEP_SUMMARY").env_remove("HOOKBENCH_SECRET").env_remove("HOOKBENCH_AUDIT_SECRET");
    cmd.envs(env.iter().copied());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("hookbench starts");
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).expect("output")).into_owned();
    Ran { code, stdout: read(&out), stderr: read(&err), took: start.elapsed() }
}

/// Every file under `dir`, with its bytes.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            found.push((path, bytes));
        }
    }
    found
}

/// Asserts `value` is nowhere in `ran`'s output nor in any file under `dir`.
fn nowhere(value: &str, ran: &Ran, dir: &Path, what: &str) {
    assert!(!ran.said().contains(value), "{what}: the value is printed:\n{}", ran.said());
    for (path, bytes) in files_under(dir) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(value), "{what}: the value is in {}", path.display());
    }
}

#[test]
fn no_secret_variable_s_value_is_printed_or_written_whatever_reads_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let config = d.join("e.toml");
    std::fs::write(&config, "events = 100\n").expect("config");
    let config = config.to_str().expect("utf-8");
    let audit_config = d.join("a.toml");
    std::fs::write(&audit_config, "url = \"http://127.0.0.1:9/w\"\nsecret = [\"whsec_YWJj\"]\n")
        .expect("config");
    let audit_config = audit_config.to_str().expect("utf-8");
    let out = d.join("out");
    let out_s = out.to_str().expect("utf-8");
    let sqlite = format!("sqlite://{}", d.join("x.db").display());
    let sink = free_addr();
    // Each variable set to a value its readers refuse, and each command that reads it.
    let secret = "SENTINEL-my-github-webhook-secret";
    let bench_print = ["bench", "--print-config"];
    let bench_config = ["bench", "--config", config, "--print-config"];
    let bench_run = ["bench", "--config", config, "--out", out_s];
    let serve = ["serve", "--design", "atomic", "--database-url", &sqlite, "--listen", "127.0.0.1:0"];
    let sign = ["sign", "--id", "evt_1", config];
    let audit_print = ["audit", "http://127.0.0.1:9/w", "--print-config"];
    let audit_file = ["audit", "--config", audit_config, "--print-config"];
    let audit_run = ["audit", "http://127.0.0.1:9/w", "--sink", &sink, "--out", out_s, "--no-progress"];
    let discover = ["discover", "http://127.0.0.1:9/w", "--observe-db", &sqlite];
    let merge = ["merge", out_s, "--out", out_s];
    let serve_db = ["serve", "--design", "atomic", "--secret", SECRET, "--listen", "127.0.0.1:0"];
    let runs: [(&str, &str, &[&str]); 13] = [
        ("HOOKBENCH_SECRET", secret, &bench_print),
        ("HOOKBENCH_SECRET", secret, &bench_config),
        ("HOOKBENCH_SECRET", secret, &bench_run),
        ("HOOKBENCH_SECRET", secret, &serve),
        ("HOOKBENCH_SECRET", secret, &sign),
        ("HOOKBENCH_AUDIT_SECRET", secret, &audit_print),
        ("HOOKBENCH_AUDIT_SECRET", secret, &audit_file),
        ("HOOKBENCH_AUDIT_SECRET", secret, &audit_run),
        ("HOOKBENCH_AUDIT_SECRET", secret, &discover),
        ("HOOKBENCH_SHARD_KEY", secret, &merge),
        ("DATABASE_URL", secret, &serve_db),
        ("DATABASE_URL", "mysql://app:SENTINEL-password@127.0.0.1:9/app", &serve_db),
        (
            "DATABASE_URL",
            secret,
            &["bench", "--events", "20", "--designs", "atomic", "--backends", "postgres", "--out", out_s],
        ),
    ];
    for (var, value, args) in runs {
        let _ = std::fs::remove_dir_all(&out);
        let ran = hookbench(d, args, &[(var, value)], Duration::from_secs(120));
        let what = format!("{var}={value} hookbench {}", args.join(" "));
        let sentinel = &value[value.find("SENTINEL").expect("a sentinel")..][..16];
        nowhere(sentinel, &ran, d, &what);
        assert!(
            ran.code.is_some_and(|c| c != 0) || args.contains(&"--print-config"),
            "{what}: {:?}\n{}",
            ran.code,
            ran.said()
        );
    }
    // The refusal names the variable and what is wrong, not the value: and not the file's key.
    let ran = hookbench(d, &bench_config, &[("HOOKBENCH_SECRET", secret)], Duration::from_secs(30));
    assert_eq!(ran.code, Some(2), "{}", ran.said());
    assert_eq!(
        ran.stderr.trim(),
        "hookbench: error: HOOKBENCH_SECRET: a signing secret starts with `whsec_`"
    );
    let ran = hookbench(d, &["bench", "--secret", secret], &[], Duration::from_secs(30));
    assert_eq!(ran.stderr.trim(), "hookbench: error: --secret: a signing secret starts with `whsec_`");
    // An empty variable is as unset: the file's secret stands.
    let ran = hookbench(d, &audit_file, &[("HOOKBENCH_AUDIT_SECRET", "")], Duration::from_secs(30));
    assert_eq!(ran.code, Some(0), "{}", ran.said());
    assert!(ran.stdout.contains("secret = [\"whsec_YWJj\"]"), "{}", ran.stdout);
}

/// A receiver's answer holding what XML forbids and what GitHub would make links, an image or HTML of.
const HOSTILE: &str = "bad \u{ffff} here http://127.0.0.1:9/autolink www.evil.example foo@evil.example ![i](http://127.0.0.1:9/i.png) <b>bold</b>";

/// The step summary rendered as GitHub renders it, with cmark-gfm.
fn rendered(summary: &Path) -> String {
    let python = format!("{SCRIPTS}/.venv/bin/python");
    assert!(Path::new(&python).exists(), "cmarkgfm is not installed: run scripts/ci-readers/install.sh");
    let out = Command::new(&python)
        .arg(format!("{SCRIPTS}/render_markdown.py"))
        .arg(summary)
        .output()
        .expect("python runs");
    assert!(out.status.success(), "cmark-gfm: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("HTML")
}

/// The tags `html` holds, by name: a summary of hookbench's has paragraphs, a heading, a table,
/// code spans and bold verdicts, and nothing else.
fn foreign_tags(html: &str) -> Vec<String> {
    let ours = ["p", "h2", "table", "thead", "tbody", "tr", "th", "td", "code", "strong"];
    html.split('<')
        .skip(1)
        .map(|t| t.trim_start_matches('/').split([' ', '>', '/']).next().unwrap_or_default().to_string())
        .filter(|name| !ours.contains(&name.as_str()))
        .collect()
}

/// An audit of `url` writing `--junit` and the step summary in `dir`: the run, the JUnit file's and
/// the summary's paths.
fn audit_for_ci(dir: &Path, url: &str) -> (Ran, std::path::PathBuf, std::path::PathBuf) {
    let (junit, summary) = (dir.join("junit.xml"), dir.join("summary.md"));
    let sink = free_addr();
    let out = dir.join("audit");
    let args = [
        "audit",
        url,
        "--secret",
        SECRET,
        "--sink",
        &sink,
        "--no-progress",
        "--out",
        out.to_str().expect("utf-8"),
        "--junit",
        junit.to_str().expect("utf-8"),
    ];
    let env = [("GITHUB_STEP_SUMMARY", summary.to_str().expect("utf-8"))];
    (hookbench(dir, &args, &env, Duration::from_secs(120)), junit, summary)
}

#[test]
fn a_hostile_answer_leaves_the_junit_file_well_formed_and_the_summary_inert() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stub = Stub::start(|_| Reply::Said(400, HOSTILE.to_string()));
    let (ran, junit, summary) = audit_for_ci(dir.path(), &format!("http://{}/webhooks", stub.addr));
    assert_eq!(ran.code, Some(2), "the preflight stops it: {}", ran.said());
    // Python's own XML parser and a CI's JUnit reader both read the file.
    let etree = Command::new("python3")
        .args(["-c", "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])"])
        .arg(&junit)
        .output()
        .expect("python3 runs");
    assert!(etree.status.success(), "xml.etree: {}", String::from_utf8_lossy(&etree.stderr));
    let suite = junitparser(&junit);
    let stopped = suite["cases"].as_array().expect("cases").iter().find(|c| c["name"] == "stopped");
    let message = stopped.and_then(|c| c["message"].as_str()).unwrap_or_else(|| panic!("{suite}"));
    assert!(message.contains("bad \u{fffd} here http://127.0.0.1:9/autolink"), "{message}");
    // GitHub's renderer shows the answer as text: no link, image or HTML of the receiver's.
    let html = rendered(&summary);
    assert_eq!(foreign_tags(&html), Vec::<String>::new(), "{html}");
    assert!(!html.contains("href") && !html.contains("src="), "{html}");
    assert!(html.contains("www.evil.example") && html.contains("evil.example ![i](http"), "quoted: {html}");
    assert!(html.contains("&lt;b&gt;bold&lt;/b&gt;"), "{html}");
}

#[test]
fn a_redirect_s_long_location_is_quoted_cut_and_never_a_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let to = format!("http://127.0.0.1:9/autolink/{}", "x".repeat(60_000));
    let stub = Stub::start(move |_| Reply::RedirectTo(to.clone()));
    let (ran, junit, summary) = audit_for_ci(dir.path(), &format!("http://{}/webhooks", stub.addr));
    assert_eq!(ran.code, Some(2), "{}", ran.said());
    assert!(ran.stderr.contains("redirecting to http://127.0.0.1:9/autolink/xxx"), "{}", ran.stderr);
    // Twice 200 bytes and the words around them, not twice 60 KB.
    assert!(ran.stderr.len() < 4_000, "{} bytes on stderr", ran.stderr.len());
    for file in [&junit, &summary] {
        let size = std::fs::metadata(file).expect("written").len();
        assert!(size < 8_000, "{}: {size} bytes", file.display());
    }
    let html = rendered(&summary);
    assert_eq!(foreign_tags(&html), Vec::<String>::new(), "{html}");
    assert!(!html.contains("href"), "{html}");
}

#[test]
fn junit_and_the_step_summary_refuse_a_symlink_or_a_fifo_before_anything_is_sent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let target = d.join("elsewhere");
    std::fs::write(&target, "keep").expect("the target");
    let link = d.join("link.xml");
    std::os::unix::fs::symlink(&target, &link).expect("a planted link");
    let fifo = d.join("fifo.xml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    // No receiver listens: a refusal that waited for the run would say it is unreachable instead.
    let url = "http://127.0.0.1:9/webhooks";
    let sink = free_addr();
    let base = ["audit", url, "--secret", SECRET, "--sink", &sink, "--no-progress", "--out"];
    for (path, kind) in [(&link, "a symbolic link"), (&fifo, "a FIFO")] {
        let p = path.to_str().expect("utf-8");
        let out = d.join(format!("out-{}", path.file_name().expect("a name").to_string_lossy()));
        let out = out.to_str().expect("utf-8");
        let as_junit: Vec<&str> = base.iter().copied().chain([out, "--junit", p]).collect();
        let ran = hookbench(d, &as_junit, &[], Duration::from_secs(30));
        assert_eq!(ran.code, Some(2), "--junit {kind}: {}", ran.said());
        assert!(ran.stderr.contains("--junit") && ran.stderr.contains(kind), "{}", ran.stderr);
        assert!(!ran.stderr.contains("unreachable"), "refused before sending: {}", ran.stderr);
        let as_summary: Vec<&str> = base.iter().copied().chain([out]).collect();
        let ran = hookbench(d, &as_summary, &[("GITHUB_STEP_SUMMARY", p)], Duration::from_secs(30));
        assert_eq!(ran.code, Some(2), "GITHUB_STEP_SUMMARY {kind}: {}", ran.said());
        assert!(ran.stderr.contains("GITHUB_STEP_SUMMARY") && ran.stderr.contains(kind), "{}", ran.stderr);
        assert!(ran.took < Duration::from_secs(20), "refused at once, not at the deadline: {:?}", ran.took);
    }
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep", "the link's target is untouched");
}

#[test]
fn a_config_s_url_is_never_a_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("hookbench.toml");
    std::fs::write(&config, "url = \"--strict\"\n").expect("config");
    let ran = hookbench(
        dir.path(),
        &["audit", "--config", config.to_str().expect("utf-8")],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(ran.code, Some(2), "{}", ran.said());
    assert!(
        ran.stderr.contains(":1: key \"url\"") && ran.stderr.contains("not http://host"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("required"), "not read as --strict, then missing a URL: {}", ran.stderr);
}
