//! `hookbench merge` and `hookbench explain` against shards and histories someone edited (issue
//! 24): each finding of the probe reproduced through the real binary, on real SQLite and
//! Postgres. A pair of bench shards and a pair of audit shards are made once, honestly; each test
//! copies them, edits one thing, and merges. An edit must end in exit 2 and a message naming the
//! file and what is wrong, never in a merged report with wrong figures, a panic or a runaway.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer as _, V2Serializer};
use hookbench::matrix::Design;
use receivers::store::Backend;
use serde_json::Value;
use testkit::SECRET;

use super::stub::{Reply, Stub};

const EXE: &str = env!("CARGO_BIN_EXE_hookbench");
/// The bench shards' workload: small and quick, with duplicates, concurrent pairs and lost acks.
const EVENTS: &str = "400";
/// A memory cap for runs that, before their fix, grew without bound: the test then fails on an
/// aborted process instead of exhausting a machine several engineers share.
const DATA_LIMIT: &str = "--data=1073741824";
/// The key the bench shards seal their files with.
const SHARD_KEY: &str = "a-kubernetes-secret";
/// What a refused shard may cost at most: a refusal reads a line or a header, not the file.
const REFUSAL_MIB: f64 = 100.0;

/// Two bench shards (`--shard 1/2`, `--shard 2/2`) of the atomic design on one SQLite file, made
/// once for every test here: `shards/1`, `shards/2` and `atomic.db` under the returned root.
fn bench_shards() -> &'static Path {
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = tempfile::tempdir().expect("tempdir");
        let db_url = format!("sqlite://{}/atomic.db", root.path().display());
        let spec = hookbench::fleet::WorkerSpec {
            inbox_workers: 1,
            max_connections: 8,
            ..crate::bench::receiver_spec(Design::Atomic, &db_url)
        };
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (fleet, targets) = crate::bench::started_by_hand(&rt, spec);
        let start_at = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(2)).to_string();
        let children: Vec<_> = (1..=2)
            .map(|i| {
                Command::new(EXE)
                    .args(["bench", "--no-progress", "--designs", "atomic", "--targets", &targets])
                    .args(["--database-url", &db_url, "--secret", SECRET, "--start-at", &start_at])
                    .args(["--events", EVENTS, "--rate", "2000", "--shard", &format!("{i}/2")])
                    .arg("--out")
                    .arg(root.path().join(format!("shards/{i}")))
                    .env_remove("DATABASE_URL")
                    // Sealed as a Kubernetes run's shards would be (a merge without the key does
                    // not look at the seals).
                    .env("HOOKBENCH_SHARD_KEY", SHARD_KEY)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("the shard starts")
            })
            .collect();
        for c in children {
            let c = c.wait_with_output().expect("the shard ends");
            assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
        }
        rt.block_on(fleet.stop()).expect("stop");
        root
    })
    .path()
}

/// A copy of the honest bench shards to edit, with a directory for the merge's output.
struct Copy {
    root: tempfile::TempDir,
}

impl Copy {
    fn of_bench() -> Self {
        Self::of(&bench_shards().join("shards"))
    }

    fn of(shards: &Path) -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        for entry in std::fs::read_dir(shards).expect("the shards") {
            let from = entry.expect("an entry").path();
            let to = root.path().join("shards").join(from.file_name().expect("a name"));
            std::fs::create_dir_all(&to).expect("mkdir");
            for file in std::fs::read_dir(&from).expect("a shard") {
                let file = file.expect("a file").path();
                std::fs::copy(&file, to.join(file.file_name().expect("a name"))).expect("copy");
            }
        }
        Self { root }
    }

    fn shards(&self) -> PathBuf {
        self.root.path().join("shards")
    }

    fn shard(&self, i: usize) -> PathBuf {
        self.shards().join(i.to_string())
    }

    fn out(&self) -> PathBuf {
        self.root.path().join("merged")
    }

    /// Edits shard `i`'s shard.json as JSON.
    fn edit(&self, i: usize, change: impl FnOnce(&mut Value)) {
        let path = self.shard(i).join("shard.json");
        let mut json: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        change(&mut json);
        std::fs::write(&path, serde_json::to_vec_pretty(&json).expect("encode")).expect("write");
    }

    /// Edits every attempt line of shard `i`'s history.
    fn edit_history(&self, i: usize, mut change: impl FnMut(usize, &mut Value)) {
        let path = self.shard(i).join("history.jsonl");
        let text = std::fs::read_to_string(&path).expect("an uncompressed history");
        let mut lines = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let mut json: Value = serde_json::from_str(line).expect("a line");
            change(n, &mut json);
            lines.push(serde_json::to_string(&json).expect("encode"));
        }
        std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    }

    /// `hookbench merge` of the bench shards into `out`, with `extra` flags.
    fn merge_bench(&self, extra: &[&str]) -> Ran {
        let db = format!("sqlite://{}/atomic.db", bench_shards().display());
        let mut args = vec!["merge", "--database-url", &db, "--quiet-timeout", "10s"];
        args.extend(extra);
        self.merge(&args)
    }

    fn merge(&self, args: &[&str]) -> Ran {
        let out = self.out();
        let (shards, out) = (self.shards(), out.to_str().expect("utf-8").to_string());
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--out", &out, shards.to_str().expect("utf-8")]);
        Ran::from(Command::new(EXE).args(&all).env_remove("DATABASE_URL").output().expect("merge runs"))
    }
}

/// How a run of the binary ended.
#[derive(Debug)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl From<Output> for Ran {
    fn from(o: Output) -> Self {
        Self {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Ran {
    /// Asserts exit 2 with every one of `words` in the error.
    fn refused(&self, words: &[&str]) {
        // Said, so that `--nocapture` shows what each edit now ends in.
        eprintln!("exit {:?}: {}", self.code, self.stderr.trim_end());
        assert_eq!(self.code, Some(2), "{self:?}");
        for w in words {
            assert!(self.stderr.contains(w), "no {w:?} in {}", self.stderr);
        }
    }
}

/// `program args`, its memory capped at [`DATA_LIMIT`], measured.
fn measured(args: &[&str]) -> testkit::measure::Measured {
    let mut all = vec![DATA_LIMIT, EXE];
    all.extend(args);
    let m = testkit::measure::peak_rss("prlimit", &all, Duration::from_secs(120));
    eprintln!("exit {:?}, peak RSS {:.1} MiB: {}", m.code, m.peak_rss_mib(), m.stderr().trim_end());
    m
}

fn deliveries(json: &Value) -> u64 {
    json["counters"]["deliveries"].as_u64().expect("deliveries")
}

#[test]
fn honest_shards_merge_and_every_figure_is_checked_against_the_history() {
    let copy = Copy::of_bench();
    let ran = copy.merge_bench(&[]);
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert!(ran.stdout.contains("merged 2 shards"), "{ran:?}");
}

#[test]
fn a_deliveries_count_edited_is_refused() {
    let copy = Copy::of_bench();
    let mut was = 0;
    copy.edit(1, |j| {
        was = deliveries(j);
        j["counters"]["deliveries"] = (was + 1000).into();
    });
    let ran = copy.merge_bench(&[]);
    let (said, lines) = (format!("deliveries {}", was + 1000), format!("{was} attempt lines"));
    ran.refused(&["shards/1", &said, &lines]);
}

#[test]
fn a_status_count_edited_is_refused() {
    let copy = Copy::of_bench();
    copy.edit(2, |j| j["counters"]["status_2xx"] = 1_000_000_000u64.into());
    copy.merge_bench(&[]).refused(&["shards/2", "status_2xx 1000000000"]);
}

#[test]
fn counters_at_u64_max_are_refused_not_wrapped() {
    let copy = Copy::of_bench();
    for i in [1, 2] {
        copy.edit(i, |j| {
            for counter in ["deliveries", "status_2xx", "timeouts", "retries"] {
                j["counters"][counter] = u64::MAX.into();
            }
        });
    }
    let ran = copy.merge_bench(&[]);
    ran.refused(&["deliveries 18446744073709551615"]);
    assert!(!ran.stdout.contains("18446744073709551614"), "{ran:?}");
}

/// A V2 histogram in the sender's bounds with `count` samples at `us`.
fn crafted_histogram(us: u64, count: u64) -> String {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
    h.record_n(us, count).expect("in bounds");
    let mut bytes = Vec::new();
    V2Serializer::new().serialize(&h, &mut bytes).expect("serialize");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn a_histogram_of_2_62_samples_at_zero_is_refused_and_does_not_hide_a_breached_p99() {
    let copy = Copy::of_bench();
    for i in [1, 2] {
        copy.edit(i, |j| j["latency_planned_v2"] = crafted_histogram(0, 1 << 62).into());
    }
    let ran = copy.merge_bench(&["--fail-on", "p99_ms>0.001"]);
    ran.refused(&["shards/1", "latency_planned_v2", "4611686018427387904 samples"]);
}

#[test]
fn a_histogram_with_the_right_count_and_wrong_latencies_is_refused() {
    let copy = Copy::of_bench();
    copy.edit(1, |j| {
        let n = deliveries(j);
        j["latency_planned_v2"] = crafted_histogram(1, n).into();
    });
    copy.merge_bench(&[]).refused(&["shards/1", "latency_planned_v2", "p99", "its history"]);
}

#[test]
fn a_shard_deleted_and_the_other_relabelled_whole_is_refused() {
    let copy = Copy::of_bench();
    std::fs::remove_dir_all(copy.shard(2)).expect("delete shard 2");
    // As careful an edit as the file allows: the shard, its groups and its events all say 1/1.
    let plan = hookbench::workload::Workload::generate(&hookbench::workload::WorkloadConfig {
        events: EVENTS.parse().expect("a number"),
        ..Default::default()
    })
    .expect("the plan");
    copy.edit(1, |j| {
        j["shard"] = serde_json::json!({"index": 1, "count": 1});
        j["groups"] = plan.groups.len().into();
        j["events"] = plan.events.len().into();
    });
    copy.merge_bench(&[]).refused(&["shards/1", "groups", "never sent"]);
}

#[test]
fn a_shard_count_of_zero_is_refused() {
    let copy = Copy::of_bench();
    for i in [1, 2] {
        copy.edit(i, |j| j["shard"] = serde_json::json!({"index": 0, "count": 0}));
    }
    let ran = copy.merge_bench(&[]);
    ran.refused(&["shards/1/shard.json", "shards are numbered from 1 to N"]);
    assert!(!ran.stdout.contains("Merged from 0 shards") && !copy.out().join("report.json").exists());
}

#[test]
fn a_shard_count_of_2_62_is_refused_at_once() {
    let copy = Copy::of_bench();
    for i in [1, 2] {
        copy.edit(i, |j| j["shard"] = serde_json::json!({"index": i, "count": 1u64 << 62}));
    }
    let db = format!("sqlite://{}/atomic.db", bench_shards().display());
    let (out, shards) = (copy.out(), copy.shards());
    let args = ["merge", "--database-url", &db, "--out", out.to_str().expect("utf-8")];
    let m = measured(&[&args[..], &[shards.to_str().expect("utf-8")]].concat());
    assert_eq!(m.code, Some(2), "{}", m.stderr());
    assert!(m.stderr().contains("at most 256 shards"), "{}", m.stderr());
    assert!(m.peak_rss_mib() < REFUSAL_MIB, "{} MiB", m.peak_rss_mib());
}

#[test]
fn an_elapsed_time_of_1e300_seconds_is_refused_not_a_panic() {
    let copy = Copy::of_bench();
    copy.edit(1, |j| j["elapsed_s"] = 1e300.into());
    copy.merge_bench(&[]).refused(&["shards/1", "elapsed_s"]);
}

#[test]
fn an_attempts_status_edited_in_the_history_is_refused() {
    let copy = Copy::of_bench();
    // The first acknowledged attempt refused instead: the event would count as refused.
    let mut edited = false;
    copy.edit_history(1, |_, line| {
        if !edited && line["status"] == 200 && line["outcome"] == "ok" {
            line["status"] = 409.into();
            line["outcome"] = "fail".into();
            edited = true;
        }
    });
    assert!(edited);
    copy.merge_bench(&[]).refused(&["shards/1", "status_4xx"]);
}

#[test]
fn an_attempt_of_an_event_the_shard_does_not_hold_is_refused() {
    let copy = Copy::of_bench();
    // Shard 1 holds the even events: its first line names an odd one instead.
    copy.edit_history(1, |n, line| {
        if n == 0 {
            line["event"] = "evt_000001".into();
        }
    });
    copy.merge_bench(&[]).refused(&["shards/1/history.jsonl", "line 1", "evt_000001", "not shard 1/2's"]);
}

#[test]
fn a_history_linked_to_dev_zero_is_refused() {
    let copy = Copy::of_bench();
    let history = copy.shard(1).join("history.jsonl");
    std::fs::remove_file(&history).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", &history).expect("symlink");
    let db = format!("sqlite://{}/atomic.db", bench_shards().display());
    let (out, shards) = (copy.out(), copy.shards());
    let args = ["merge", "--database-url", &db, "--out", out.to_str().expect("utf-8")];
    let m = measured(&[&args[..], &[shards.to_str().expect("utf-8")]].concat());
    assert_eq!(m.code, Some(2), "{}", m.stderr());
    assert!(m.stderr().contains("history.jsonl: not a regular file"), "{}", m.stderr());
    assert!(m.peak_rss_mib() < REFUSAL_MIB, "{} MiB", m.peak_rss_mib());
    let m = measured(&["explain", copy.shard(1).to_str().expect("utf-8"), "evt_000000"]);
    assert_eq!(m.code, Some(2), "{}", m.stderr());
    assert!(m.stderr().contains("not a regular file"), "{}", m.stderr());
    assert!(m.peak_rss_mib() < REFUSAL_MIB, "{} MiB", m.peak_rss_mib());
}

/// A compressed history of one line of `mib` MiB.
fn one_long_line(dir: &Path, mib: usize) {
    use std::io::Write;
    std::fs::create_dir_all(dir).expect("mkdir");
    let file = std::fs::File::create(dir.join("history.jsonl.zst")).expect("create");
    let mut z = zstd::Encoder::new(file, 1).expect("encoder");
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..mib {
        z.write_all(&chunk).expect("write");
    }
    z.finish().expect("finish");
}

#[test]
fn one_long_line_in_a_small_compressed_history_is_refused_within_a_line() {
    let copy = Copy::of_bench();
    let dir = copy.root.path().join("long");
    one_long_line(&dir, 512);
    let size = std::fs::metadata(dir.join("history.jsonl.zst")).expect("stat").len();
    assert!(size < 1 << 20, "{size} bytes compressed");
    let m = measured(&["explain", dir.to_str().expect("utf-8"), "evt_000000"]);
    assert_eq!(m.code, Some(2), "{}", m.stderr());
    assert!(m.stderr().contains("line 1 is longer than 1048576 bytes"), "{}", m.stderr());
    assert!(m.peak_rss_mib() < REFUSAL_MIB, "{} MiB", m.peak_rss_mib());
    // The same history as a shard's.
    std::fs::remove_file(copy.shard(2).join("history.jsonl")).expect("rm");
    std::fs::rename(dir.join("history.jsonl.zst"), copy.shard(2).join("history.jsonl.zst")).expect("mv");
    let db = format!("sqlite://{}/atomic.db", bench_shards().display());
    let (out, shards) = (copy.out(), copy.shards());
    let args = ["merge", "--database-url", &db, "--out", out.to_str().expect("utf-8")];
    let m = measured(&[&args[..], &[shards.to_str().expect("utf-8")]].concat());
    assert_eq!(m.code, Some(2), "{}", m.stderr());
    assert!(m.stderr().contains("line 1 is longer than 1048576 bytes"), "{}", m.stderr());
    assert!(m.peak_rss_mib() < REFUSAL_MIB, "{} MiB", m.peak_rss_mib());
}

#[test]
fn merge_does_not_write_through_a_symlink_planted_in_out() {
    let copy = Copy::of_bench();
    let victim = copy.root.path().join("victim");
    std::fs::write(&victim, "keep").expect("write");
    std::fs::create_dir_all(copy.out()).expect("mkdir");
    std::os::unix::fs::symlink(&victim, copy.out().join("history.jsonl")).expect("symlink");
    let ran = copy.merge_bench(&[]);
    ran.refused(&["history.jsonl"]);
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
    // --metrics too.
    let copy = Copy::of_bench();
    let metrics = copy.root.path().join("metrics.prom");
    std::os::unix::fs::symlink(&victim, &metrics).expect("symlink");
    let ran = copy.merge_bench(&["--metrics", metrics.to_str().expect("utf-8")]);
    ran.refused(&["metrics.prom"]);
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
}

#[test]
fn explain_escapes_the_control_characters_a_history_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cell = "sqlite/\u{1b}[2Jatomic";
    let id = "evt_\u{1b}]0;owned\u{7}";
    let lines = [
        serde_json::json!({"type": "attempt", "cell": cell, "event": id, "kind": "credit", "group": 0,
            "copy": 0, "attempt": 1, "planned_ms": 0.0, "sent_ms": 1.0, "answered_ms": 2.0, "worker": 0,
            "connection": 1, "status": null, "outcome": "info", "detail": "time\rout\u{9b}2J"}),
        serde_json::json!({"type": "event", "cell": cell, "event": id, "kind": "cred\u{1b}[31mit",
            "account": 1, "applied": 2, "anomalies": ["duplicate"]}),
        serde_json::json!({"type": "verdict", "cell": cell, "outcome": "fail",
            "summary": "\u{1b}[1mfail", "found": {"duplicate": 1}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("history.jsonl"), text).expect("write");
    let d = dir.path().to_str().expect("utf-8");
    for args in [vec!["explain", d, "--anomaly", "duplicate"], vec!["explain", d, id]] {
        let ran = Ran::from(Command::new(EXE).args(&args).output().expect("explain runs"));
        assert_eq!(ran.code, Some(0), "{ran:?}");
        assert!(!ran.stdout.chars().any(|c| c.is_control() && c != '\n'), "{:?}", ran.stdout);
        assert!(ran.stdout.contains("evt_\\u{1b}]0;owned\\u{7}"), "{}", ran.stdout);
        assert!(ran.stdout.contains("time\\u{d}out"), "{}", ran.stdout);
    }
}

#[test]
fn a_shard_index_past_the_bound_is_refused_on_the_command_line() {
    let ran = Ran::from(
        Command::new(EXE)
            .args(["bench", "--designs", "atomic", "--shard", "1/18446744073709551615"])
            .args(["--targets", "http://127.0.0.1:9/webhooks/x", "--secret", SECRET])
            .args(["--database-url", "sqlite:///nonexistent.db"])
            .output()
            .expect("bench runs"),
    );
    assert_eq!(ran.code, Some(2), "{ran:?}");
    assert!(ran.stderr.contains("at most 256 shards"), "{ran:?}");
}

/// What the audit shards' receiver applies, as the operator asks it.
const APPLIED: &str = "SELECT event_id FROM applied";

/// Two audit shards, into `root/shards`, of a receiver that refuses everything with a 500,
/// observed through `db_url` with [`APPLIED`].
fn audit_shards(db_url: &str, root: &Path) -> Stub {
    let stub = Stub::start(|_| Reply::Status(500));
    let url = format!("http://{}/webhooks", stub.addr);
    let flags = ["--events", "60", "--observe-db", db_url, "--applied-query", APPLIED];
    crate::audit::audit_shards(&url, &flags, &root.join("shards"));
    stub
}

/// An SQLite file with the receiver's one table, for the audit shards to observe.
fn sqlite_receiver_db(path: &Path) -> String {
    let setup = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import sqlite3; sqlite3.connect('{}').execute('CREATE TABLE applied (event_id TEXT)')",
                path.display()
            ),
        ])
        .status()
        .expect("python3");
    assert!(setup.success());
    format!("sqlite://{}", path.display())
}

#[test]
fn merge_runs_only_the_queries_on_its_own_command_line_sqlite() {
    let root = tempfile::tempdir().expect("tempdir");
    let db = sqlite_receiver_db(&root.path().join("app.db"));
    let _stub = audit_shards(&db, root.path());
    let copy = Copy::of(&root.path().join("shards"));
    let stolen = root.path().join("stolen.db");
    let vacuum = format!("VACUUM INTO '{}'", stolen.display());
    for i in [1, 2] {
        copy.edit(i, |j| j["target"]["applied_query"] = vacuum.clone().into());
    }
    // The operator gives the database alone, as in the probe: the shards' query is not run.
    let ran = copy.merge(&["merge", "--observe-db", &db, "--quiet", "300ms"]);
    ran.refused(&["--applied-query", &vacuum, "merge was given none"]);
    assert!(!stolen.exists(), "the shard's query ran");
    // Given their own query, different from the shards': refused, naming both.
    let ran = copy.merge(&["merge", "--observe-db", &db, "--quiet", "300ms", "--applied-query", APPLIED]);
    ran.refused(&["--applied-query", &vacuum, APPLIED]);
    assert!(!stolen.exists(), "the shard's query ran");
    // The honest shards, given the query they recorded, merge and are judged.
    let honest = Copy::of(&root.path().join("shards"));
    let ran = honest.merge(&["merge", "--observe-db", &db, "--quiet", "300ms", "--applied-query", APPLIED]);
    // Judged, not refused: the stub answers 500 to everything, so the verdict is FAIL (exit 1).
    assert_eq!(ran.code, Some(1), "{ran:?}");
    assert!(ran.stdout.contains("merged 2 shards"), "{ran:?}");
}

#[test]
fn merge_runs_only_the_queries_on_its_own_command_line_postgres() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let db = rt.block_on(testkit::Db::fresh(Backend::Postgres));
    rt.block_on(db.execute("CREATE TABLE applied (event_id text)"));
    let root = tempfile::tempdir().expect("tempdir");
    let _stub = audit_shards(&db.url, root.path());
    let copy = Copy::of(&root.path().join("shards"));
    // The server runs on this machine as another user: a file it would write where both can.
    let planted = std::env::temp_dir().join(format!("hookbench-copy-to-program-{}", std::process::id()));
    let _ = std::fs::remove_file(&planted);
    let copy_to = format!("COPY (SELECT 1) TO PROGRAM 'id > {}'", planted.display());
    for i in [1, 2] {
        copy.edit(i, |j| j["target"]["applied_query"] = copy_to.clone().into());
    }
    let ran = copy.merge(&["merge", "--observe-db", &db.url, "--quiet", "300ms"]);
    ran.refused(&["--applied-query", &copy_to, "merge was given none"]);
    assert!(!planted.exists(), "the shard's query ran on the server");
    rt.block_on(db.cleanup());
}

#[test]
fn more_shard_directories_than_a_run_has_shards_are_refused_before_they_are_read() {
    let copy = Copy::of_bench();
    for i in 3..=257 {
        let dir = copy.shard(i);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::copy(copy.shard(1).join("shard.json"), dir.join("shard.json")).expect("copy");
    }
    copy.merge_bench(&[]).refused(&["257 shard directories", "at most 256 shards"]);
}

#[test]
fn shard_files_too_large_together_are_refused_before_they_are_read() {
    let copy = Copy::of_bench();
    // Sparse files: 5 x 2 GiB on paper, nothing on disk; reading them would be 10 GiB.
    for i in 1..=5 {
        let dir = copy.shard(i);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let file = std::fs::File::create(dir.join("shard.json")).expect("create");
        file.set_len(2 << 30).expect("set_len");
    }
    let (out, shards) = (copy.out(), copy.shards());
    let args = ["merge", "--database-url", "sqlite:///nonexistent.db", "--out", out.to_str().expect("utf-8")];
    let m = measured(&[&args[..], &[shards.to_str().expect("utf-8")]].concat());
    assert_eq!(m.code, Some(2), "{}", m.stderr());
    assert!(m.stderr().contains("merge reads at most 8589934592"), "{}", m.stderr());
    assert!(m.peak_rss_mib() < REFUSAL_MIB, "{} MiB", m.peak_rss_mib());
}

#[test]
fn a_shards_text_reaches_merges_errors_escaped() {
    let copy = Copy::of_bench();
    copy.edit(2, |j| j["hookbench"] = "0.1.0\u{1b}]0;owned\u{7}".into());
    let ran = copy.merge_bench(&[]);
    ran.refused(&["hookbench version", "0.1.0\\u{1b}]0;owned\\u{7}"]);
    assert!(!ran.stderr.contains('\u{1b}'), "{:?}", ran.stderr);
    let copy = Copy::of_bench();
    copy.edit_history(1, |n, line| {
        if n == 0 {
            line["event"] = "evt_\u{1b}[2J".into();
        }
    });
    let ran = copy.merge_bench(&[]);
    ran.refused(&["line 1", "evt_\\u{1b}[2J", "not an event of this workload"]);
    assert!(!ran.stderr.contains('\u{1b}'), "{:?}", ran.stderr);
}

#[test]
fn with_the_shard_key_sealed_shards_merge_and_an_edited_one_is_refused() {
    let copy = Copy::of_bench();
    let ran = copy.merge_bench(&["--shard-key", SHARD_KEY]);
    assert_eq!(ran.code, Some(0), "{ran:?}");
    // An edit every other check lets through: shard 2 started half a second late.
    let copy = Copy::of_bench();
    copy.edit(2, |j| j["late_by_s"] = 0.5.into());
    assert_eq!(copy.merge_bench(&[]).code, Some(0), "the edit passes without the key");
    let ran = copy.merge_bench(&["--shard-key", SHARD_KEY]);
    ran.refused(&["shards/2", "its seal is not the --shard-key's"]);
    // Another key, and a shard whose seal was removed.
    let copy = Copy::of_bench();
    copy.merge_bench(&["--shard-key", "another"]).refused(&["shards/1", "its seal is not"]);
    std::fs::remove_file(copy.shard(1).join("shard.hmac")).expect("rm");
    copy.merge_bench(&["--shard-key", SHARD_KEY]).refused(&["shards/1", "no shard.hmac"]);
}

#[test]
fn an_audit_shards_attempt_records_edited_are_refused() {
    let root = tempfile::tempdir().expect("tempdir");
    let db = sqlite_receiver_db(&root.path().join("app.db"));
    let _stub = audit_shards(&db, root.path());
    let copy = Copy::of(&root.path().join("shards"));
    // Every refused attempt of shard 1 recorded as acknowledged instead.
    copy.edit(1, |j| {
        for a in j["target"]["attempts"].as_array_mut().expect("attempts") {
            a["outcome"] = "200".into();
        }
    });
    let ran = copy.merge(&["merge", "--observe-db", &db, "--quiet", "300ms", "--applied-query", APPLIED]);
    ran.refused(&["shards/1", "its attempts in shard.json differ from its history's", "200 against 500"]);
}
