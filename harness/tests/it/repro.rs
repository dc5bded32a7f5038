//! `hookbench repro` end to end: the Python example's check-then-act mode fails concurrent-copies;
//! the script `repro` writes for that FAIL, run with `python3 -I` in an empty directory with no
//! hookbench on its PATH and only the secret in its environment, reproduces it against a fresh
//! instance (exit 1) and does not against the safe mode (exit 0); the script holds no secret. Its
//! pytest form (`--pytest`) fails against the first and passes against the second; its Node form
//! (`--node`) does the same against hookbench's naive and atomic workers on Postgres.

use std::path::Path;
use std::process::Command;

use receivers::store::Backend;
use testkit::{Db, SECRET};

use super::audit::{COUNTS, SECRET_2, TEMPLATE, python_receiver_holding};

/// `hookbench` with `args`: its exit code and what it printed.
fn hookbench(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hookbench")).args(args).output().expect("hookbench runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), said)
}

/// Runs `script` as a user would: `python3 -I` in an empty directory, PATH without hookbench,
/// the secret in HOOKBENCH_SECRET; its exit code and what it printed.
fn run_script(script: &Path, url: &str, db: &Path) -> (i32, String) {
    run_script_with("python3", script, url, db.to_str().expect("utf-8"), SECRET)
}

/// [`run_script`] with the interpreter `python`, any `--db` and `secret`.
fn run_script_with(python: &str, script: &Path, url: &str, db: &str, secret: &str) -> (i32, String) {
    run_script_args(python, script, url, db, secret, &[])
}

/// [`run_script_with`] with `extra` flags.
fn run_script_args(
    python: &str,
    script: &Path,
    url: &str,
    db: &str,
    secret: &str,
    extra: &[&str],
) -> (i32, String) {
    let empty = tempfile::tempdir().expect("tempdir");
    let out = Command::new("/usr/bin/env")
        .arg(python)
        .args(["-I", script.to_str().expect("utf-8"), "--url", url, "--db", db])
        .args(["--trials", "10"])
        .args(extra)
        .current_dir(empty.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOOKBENCH_SECRET", secret)
        .output()
        .expect("python3 runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), said)
}

/// `hookbench repro` of `run`'s `check` into `out` with `extra` flags, which must succeed.
fn write_repro(run: &Path, check: &str, out: &Path, extra: &[&str]) -> std::path::PathBuf {
    let (run_dir, file) = (run.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    let (code, said) = hookbench(&[&["repro", run_dir, "--check", check, "--out", file][..], extra].concat());
    assert_eq!(code, 0, "{said}");
    out.to_path_buf()
}

/// `hookbench audit` of the Python example at `url` (its template, its database `db` observed
/// with [`COUNTS`]) running `checks` with `extra` flags into `run`: its exit code and what it said.
fn audit_example(url: &str, db: &Path, checks: &str, extra: &[&str], run: &Path) -> (i32, String) {
    let observe = format!("sqlite://{}", db.display());
    let run_dir = run.to_str().expect("utf-8");
    let args = [
        &["audit", url, "--secret", SECRET, "--payload", TEMPLATE, "--observe-db", &observe][..],
        &["--applied-query", COUNTS, "--checks", checks, "--no-progress", "--out", run_dir],
        extra,
    ];
    hookbench(&args.concat())
}

/// Runs the Python `script` against `url` and `db` with `extra` flags, and holds it to exit
/// `expected` with a line starting with `words`.
fn expect_script(script: &Path, (url, db): (&str, &str), extra: &[&str], (expected, words): (i32, &str)) {
    let (code, said) = run_script_args("python3", script, url, db, SECRET, extra);
    assert_eq!(code, expected, "{url} {extra:?}: {said}");
    assert!(said.starts_with(words), "{url} {extra:?}: {said}");
}

const PYTEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/pytest/.venv/bin/python");

/// Runs the pytest `module` in an empty directory with the receiver's URL, database and secret in
/// its environment, as a user's CI would; pytest's exit code and what it printed.
fn run_pytest(module: &Path, url: &str, db: &Path) -> (i32, String) {
    assert!(
        Path::new(PYTEST).exists(),
        "{PYTEST} is missing: run scripts/pytest/install.sh (PyPI, pinned) first"
    );
    let empty = tempfile::tempdir().expect("tempdir");
    let copy = empty.path().join("test_repro.py");
    std::fs::copy(module, &copy).expect("the module copied");
    let out = Command::new(PYTEST)
        .args(["-I", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_repro.py"])
        .current_dir(empty.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOOKBENCH_REPRO_URL", url)
        .env("HOOKBENCH_REPRO_DB", db)
        .env("HOOKBENCH_SECRET", SECRET)
        .env("HOOKBENCH_REPRO_TRIALS", "10")
        .output()
        .expect("pytest runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), said)
}

#[test]
fn a_concurrent_copies_fail_is_reproduced_by_its_script_and_a_safe_receiver_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("audited.db");
    let receiver = python_receiver_holding(&db, "unsafe", None, &[SECRET, SECRET_2]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let run = dir.path().join("audit");
    let extra = ["--secret", SECRET_2, "--copies", "4"];
    let (code, said) = audit_example(&url, &db, "concurrent-copies", &extra, &run);
    assert_eq!(code, 1, "the unsafe mode fails concurrent-copies: {said}");
    assert!(
        said.contains("reproduce it without hookbench: hookbench repro "),
        "the last lines name it: {said}"
    );
    for page in ["report.md", "report.html"] {
        let text = std::fs::read_to_string(run.join(page)).expect(page);
        let named =
            text.contains("Reproduce it without hookbench") && text.contains("--check concurrent-copies");
        assert!(named, "{page} names the repro command");
    }
    drop(receiver);

    // The applied query is the one report.json records.
    let script = write_repro(&run, "concurrent-copies", &dir.path().join("repro.py"), &[]);
    let text = std::fs::read_to_string(&script).expect("the script");
    assert!(text.contains("GROUP BY event_id"), "the recorded query is the script's");
    for secret in [SECRET, SECRET_2, &SECRET[6..], &SECRET_2[6..]] {
        assert!(!text.contains(secret), "the script holds no secret");
    }
    let (code, said) = hookbench(&[
        "repro",
        run.to_str().expect("utf-8"),
        "--check",
        "out-of-order",
        "--applied-query",
        COUNTS,
        "--out",
        "/dev/null/x",
    ]);
    assert_eq!(code, 2, "a check it cannot reproduce is a usage error: {said}");

    for (mode, expected, words) in
        [("unsafe", 1, "reproduced: "), ("safe", 0, "not reproduced in 10 trials (under ")]
    {
        let db = dir.path().join(format!("{mode}.db"));
        let fresh = python_receiver_holding(&db, mode, None, &[SECRET]);
        let (code, said) = run_script(&script, &format!("http://{}/webhooks", fresh.addr), &db);
        assert_eq!(code, expected, "{mode}: {said}");
        assert!(said.starts_with(words), "{mode}: {said}");
    }
    // The same as a pytest module: it fails while the receiver doubles and passes on the safe mode.
    let module = write_repro(&run, "concurrent-copies", &dir.path().join("test_repro.py"), &["--pytest"]);
    let node = write_repro(&run, "concurrent-copies", &dir.path().join("repro.js"), &["--node"]);
    for written in [&module, &node] {
        let text = std::fs::read_to_string(written).expect("the written file");
        for secret in [SECRET, SECRET_2, &SECRET[6..], &SECRET_2[6..]] {
            assert!(!text.contains(secret), "{} holds no secret", written.display());
        }
    }
    for (mode, expected) in [("unsafe", 1), ("safe", 0)] {
        let db = dir.path().join(format!("pytest-{mode}.db"));
        let fresh = python_receiver_holding(&db, mode, None, &[SECRET]);
        let (code, said) = run_pytest(&module, &format!("http://{}/webhooks", fresh.addr), &db);
        assert_eq!(code, expected, "pytest on the {mode} mode: {said}");
        assert!(said.contains(if expected == 0 { "1 passed" } else { "1 failed" }), "{mode}: {said}");
    }

    // No receiver: it cannot run, and says so.
    let db = dir.path().join("safe.db");
    let (code, said) = run_script(&script, "http://127.0.0.1:9/webhooks", &db);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("no answer"), "{said}");
}

/// Where a sequential-duplicate reproduction's workers keep their data: a fresh SQLite file, or
/// a fresh Postgres database; the URL the worker, the audit and the script are given.
fn fresh_db(rt: &tokio::runtime::Runtime, backend: Backend, dir: &Path, name: &str) -> (String, Option<Db>) {
    match backend {
        Backend::Sqlite => (format!("sqlite://{}", dir.join(format!("{name}.db")).display()), None),
        Backend::Postgres => {
            let db = rt.block_on(Db::fresh(Backend::Postgres));
            (db.url.clone(), Some(db))
        }
        Backend::Mysql => unreachable!("the repro scripts read Postgres and SQLite"),
    }
}

/// hookbench's own naive receiver (`serve --design naive`) applies a sequential duplicate, and a
/// retry after a lost acknowledgement, twice; the script written for `check`'s FAIL reproduces it
/// against a fresh naive worker (exit 1) and not against an atomic one (exit 0), its observer on
/// `backend`: SQLite through the standard library, Postgres through psycopg2 (the balances
/// example's venv, which has it). The late replay re-sends events earlier checks saw applied
fn reproduced_against_naive_not_atomic(backend: Backend, check: &str) {
    reproduced_by(backend, check, Interpreter::Python);
}

/// What runs the written script: Python (`hookbench repro`'s default form) or Node (`--node`).
#[derive(Clone, Copy, PartialEq)]
enum Interpreter {
    Python,
    Node,
}

/// Where `scripts/repro-node/install.sh` puts pg, which the Node scripts find through NODE_PATH.
const NODE_MODULES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/repro-node/node_modules");

/// Runs the Node `script` as a user would: `node` in an empty directory, PATH without hookbench,
/// pg found through NODE_PATH, the secret in HOOKBENCH_SECRET; its exit code and what it printed.
fn run_node_script(script: &Path, url: &str, db: &str) -> (i32, String) {
    assert!(
        Path::new(NODE_MODULES).join("pg").exists(),
        "pg is missing: run scripts/repro-node/install.sh (npm, pinned) first"
    );
    let empty = tempfile::tempdir().expect("tempdir");
    let out = Command::new("/usr/bin/env")
        .args(["node", script.to_str().expect("utf-8"), "--url", url, "--db", db, "--trials", "10"])
        .current_dir(empty.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin:/usr/local/bin")
        .env("NODE_PATH", NODE_MODULES)
        .env("HOOKBENCH_SECRET", SECRET)
        .output()
        .expect("node runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), said)
}

/// [`reproduced_against_naive_not_atomic`] with the script in `interpreter`'s form.
fn reproduced_by(backend: Backend, check: &str, interpreter: Interpreter) {
    reproduced_between(backend, check, interpreter, ("naive", "atomic"), &[]);
}

/// [`reproduced_by`] with the design that fails and the one that must not, and `extra` audit flags.
fn reproduced_between(
    backend: Backend,
    check: &str,
    interpreter: Interpreter,
    (failing, passing): (&str, &str),
    extra: &[&str],
) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let worker = |design: &str, url: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookbench"));
        cmd.args(["serve", "--design", design, "--database-url", url, "--listen", "127.0.0.1:0"]);
        cmd.args(["--secret", SECRET]);
        super::audit::start(cmd)
    };
    let (db, _keep) = fresh_db(&rt, backend, dir.path(), "audited");
    let receiver = worker(failing, &db);
    let run = dir.path().join("audit");
    let url = format!("http://{}/webhooks/repro", receiver.addr);
    let args = [
        &["audit", &url, "--secret", SECRET, "--observe-db", &db, "--applied-query", super::audit::APPLIED][..],
        &["--checks", check, "--no-progress", "--out", run.to_str().expect("utf-8")],
        extra,
    ];
    let (code, said) = hookbench(&args.concat());
    assert_eq!(code, 1, "{failing} fails {check}: {said}");
    drop(receiver);
    let script = match interpreter {
        Interpreter::Python => write_repro(&run, check, &dir.path().join("repro.py"), &[]),
        Interpreter::Node => write_repro(&run, check, &dir.path().join("repro.js"), &["--node"]),
    };
    let text = std::fs::read_to_string(&script).expect("the script");
    assert!(!text.contains(SECRET) && !text.contains(&SECRET[6..]), "the script holds no secret");
    let python = match backend {
        Backend::Sqlite => "python3".to_string(),
        Backend::Postgres => {
            let venv =
                concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/balances/.venv/bin/python");
            assert!(
                Path::new(venv).exists(),
                "psycopg2: run examples/receivers/balances/install.sh ({venv})"
            );
            venv.to_string()
        }
        Backend::Mysql => unreachable!("the repro scripts read Postgres and SQLite"),
    };
    for (design, expected, words) in [(failing, 1, "reproduced: "), (passing, 0, "not reproduced in 10 ")] {
        let (db, _keep) = fresh_db(&rt, backend, dir.path(), design);
        let fresh = worker(design, &db);
        let url = format!("http://{}/webhooks/repro", fresh.addr);
        let (code, said) = match interpreter {
            Interpreter::Python => run_script_with(&python, &script, &url, &db, SECRET),
            Interpreter::Node => run_node_script(&script, &url, &db),
        };
        assert_eq!(code, expected, "{design} on {backend:?}: {said}");
        assert!(said.starts_with(words), "{design} on {backend:?}: {said}");
        if design == passing && backend == Backend::Postgres {
            // A database that refuses the connection: it cannot run, and says so.
            let refused = "postgres://postgres@127.0.0.1:9/none";
            let (code, said) = match interpreter {
                Interpreter::Python => run_script_with(&python, &script, &url, refused, SECRET),
                Interpreter::Node => run_node_script(&script, &url, refused),
            };
            assert_eq!(code, 2, "{said}");
            assert!(said.contains("cannot connect"), "{said}");
        }
    }
}

#[test]
fn a_sequential_duplicate_fail_is_reproduced_against_naive_and_not_atomic_on_sqlite() {
    reproduced_against_naive_not_atomic(Backend::Sqlite, "sequential-duplicate");
}

#[test]
fn a_sequential_duplicate_fail_is_reproduced_against_naive_and_not_atomic_on_postgres() {
    reproduced_against_naive_not_atomic(Backend::Postgres, "sequential-duplicate");
}

/// The Node form (`--node`) of the same reproduction, its observer on Postgres through pg: for the
/// receivers written in JavaScript, whose teams keep their tests in Node.
#[test]
fn a_sequential_duplicate_fail_is_reproduced_by_the_node_script_on_postgres() {
    reproduced_by(Backend::Postgres, "sequential-duplicate", Interpreter::Node);
}

/// Concurrent copies from Node: each copy on a connection of its own (`agent: false`).
#[test]
fn a_concurrent_copies_fail_is_reproduced_by_the_node_script_on_postgres() {
    reproduced_by(Backend::Postgres, "concurrent-copies", Interpreter::Node);
}

/// naive overwrites an account's plan with whichever version arrives last; the out-of-order
/// script, sending versions as the audit did and reading each account's version with the state
/// query report.json records, reproduces it against naive and not against version-guard, in
/// Python on SQLite and in Node on Postgres.
#[test]
fn an_out_of_order_fail_is_reproduced_against_naive_and_not_version_guard() {
    let state = ["--state-query", super::audit::STATE];
    let designs = ("naive", "version-guard");
    reproduced_between(Backend::Sqlite, "out-of-order", Interpreter::Python, designs, &state);
    reproduced_between(Backend::Postgres, "out-of-order", Interpreter::Node, designs, &state);
}

/// The Python example's check-then-act mode overwrites a plan whatever its version; its safe mode
/// guards by version.
#[test]
fn an_out_of_order_fail_of_the_python_example_is_reproduced_until_it_guards_versions() {
    python_example_repro(
        ("unsafe", "out-of-order", &["--state-query", "SELECT customer, version FROM subscriptions"], 1),
        "out-of-order",
        [("unsafe", 1, "reproduced: "), ("safe", 0, "not reproduced in 10 accounts")],
    );
}

#[test]
fn a_lost_ack_fail_is_reproduced_against_naive_and_not_atomic() {
    reproduced_against_naive_not_atomic(Backend::Sqlite, "lost-ack");
}

/// Audits the Python example in `mode` with its template and `checks` (and `extra` flags), expecting
/// `audit_exit`; writes the repro script of `check`; runs it against a fresh instance of each of
/// `cases` (mode, expected exit, the words it must start with).
fn python_example_repro(
    (mode, checks, extra, audit_exit): (&str, &str, &[&str], i32),
    check: &str,
    cases: [(&str, i32, &str); 2],
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("audited.db");
    let receiver = python_receiver_holding(&db, mode, None, &[SECRET]);
    let run = dir.path().join("audit");
    let url = format!("http://{}/webhooks", receiver.addr);
    let (code, said) = audit_example(&url, &db, checks, extra, &run);
    assert_eq!(code, audit_exit, "the {mode} mode's {checks}: {said}");
    drop(receiver);
    let script = write_repro(&run, check, &dir.path().join("repro.py"), &[]);
    for (mode, expected, words) in cases {
        let db = dir.path().join(format!("{mode}.db"));
        let fresh = python_receiver_holding(&db, mode, None, &[SECRET]);
        let (code, said) = run_script(&script, &format!("http://{}/webhooks", fresh.addr), &db);
        assert_eq!(code, expected, "{mode}: {said}");
        assert!(said.starts_with(words), "{mode}: {said}");
    }
}

/// The Python example's check-then-act mode doubles pairs released up to its 50 ms window apart:
/// the race-window FAIL's script, sending pairs at the spacings that doubled, reproduces it
/// against a fresh unsafe instance (exit 1) and not against the safe mode (exit 0).
#[test]
fn a_race_window_fail_is_reproduced_at_its_spacings() {
    python_example_repro(
        ("unsafe", "race-window", &["--race-window", "--trials", "3"], 1),
        "race-window",
        [("unsafe", 1, "reproduced: "), ("safe", 0, "not reproduced in 10 trials")],
    );
}

/// The Python example's safe mode dedupes on the event id, so one change sent under two ids is
/// applied twice (a semantic duplicate, WARN); the script for that finding reproduces it against
/// a fresh safe instance (exit 1) and not against the mode that dedupes on the object (exit 0).
#[test]
fn a_semantic_duplicate_is_reproduced_until_the_receiver_dedupes_on_the_object() {
    python_example_repro(
        ("safe", "semantic-duplicate", &[], 0),
        "semantic-duplicate",
        [("safe", 1, "reproduced: "), ("dedupe-object", 0, "not reproduced in 10 pairs")],
    );
}

/// Stripe Events as a template: what a Stripe handler reads (`data.object.customer`,
/// `data.object.amount`), signed as Stripe signs.
const STRIPE_TEMPLATE: &str = r#"{
  "credit": {"id": "{{id}}", "object": "event", "type": "payment_intent.succeeded", "created": "{{created}}",
             "data": {"object": {"id": "pi_{{object}}", "object": "payment_intent",
                                 "customer": "cus_{{account}}", "amount": "{{amount}}"}}},
  "update": {"id": "{{id}}", "object": "event", "type": "customer.updated", "created": "{{created}}",
             "data": {"object": {"id": "cus_{{account}}", "object": "customer"}}}
}"#;

/// The Stripe example receiver (Stripe's signature, Stripe Events) in check-then-act mode fails
/// concurrent-copies under `--signing stripe`; the script, signing as Stripe does with the
/// secret from HOOKBENCH_SECRET, reproduces it against a fresh unsafe instance and not the safe one.
#[test]
fn a_stripe_signed_fail_is_reproduced_signed_as_stripe() {
    const STRIPE_SECRET: &str = "whsec_stripe-repro-secret";
    let dir = tempfile::tempdir().expect("tempdir");
    let template = dir.path().join("stripe-template.json");
    std::fs::write(&template, STRIPE_TEMPLATE).expect("the template");
    let stripe = |db: &Path, mode: &str| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/stripe-sqlite/receiver.py");
        let mut cmd = Command::new("python3");
        cmd.arg(script).args(["--db", db.to_str().expect("utf-8"), "--mode", mode, "--port", "0"]);
        cmd.args(["--secret", STRIPE_SECRET]);
        super::audit::start(cmd)
    };
    let db = dir.path().join("audited.db");
    let receiver = stripe(&db, "unsafe");
    let run = dir.path().join("audit");
    let observe = format!("sqlite://{}", db.display());
    let applied = "SELECT event_id, count(*) FROM payments GROUP BY event_id";
    let (code, said) = hookbench(&[
        "audit",
        &format!("http://{}/webhooks", receiver.addr),
        "--signing",
        "stripe",
        "--secret",
        STRIPE_SECRET,
        "--payload",
        template.to_str().expect("utf-8"),
        "--observe-db",
        &observe,
        "--applied-query",
        applied,
        "--checks",
        "concurrent-copies",
        "--no-progress",
        "--out",
        run.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "the unsafe Stripe handler fails concurrent-copies: {said}");
    drop(receiver);
    let script = write_repro(&run, "concurrent-copies", &dir.path().join("repro.py"), &[]);
    assert!(!std::fs::read_to_string(&script).expect("script").contains(STRIPE_SECRET), "no secret");
    for (mode, expected, words) in [("unsafe", 1, "reproduced: "), ("safe", 0, "not reproduced in 10 trials")]
    {
        let db = dir.path().join(format!("{mode}.db"));
        let fresh = stripe(&db, mode);
        let url = format!("http://{}/webhooks", fresh.addr);
        let (code, said) =
            run_script_with("python3", &script, &url, db.to_str().expect("utf-8"), STRIPE_SECRET);
        assert_eq!(code, expected, "{mode}: {said}");
        assert!(said.starts_with(words), "{mode}: {said}");
    }
}

/// A purge job that forgets every key the Python example's safe mode dedupes on: the audit's late
/// replay, after it as `--retention-cmd`, applies events again. The script, given the same purge
/// of a fresh instance's database as its own `--retention-cmd`, reproduces that (exit 1), and
/// without a purge it does not (exit 0).
#[test]
fn a_late_replay_after_an_eager_purge_is_reproduced_with_the_purge() {
    let purge = |db: &Path| {
        format!(
            "python3 -c \"import sqlite3; c = sqlite3.connect('{}'); c.execute('DELETE FROM handled_events'); c.commit()\"",
            db.display()
        )
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("audited.db");
    let receiver = python_receiver_holding(&db, "safe", None, &[SECRET]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let (run, purged) = (dir.path().join("audit"), purge(&db));
    let extra = ["--replay-after", "100ms", "--retention-cmd", &purged];
    let (code, said) = audit_example(&url, &db, "sequential-duplicate,late-replay", &extra, &run);
    assert_eq!(code, 1, "the eager purge lets the late replay apply again: {said}");
    drop(receiver);
    let script = write_repro(&dir.path().join("audit"), "late-replay", &dir.path().join("repro.py"), &[]);
    for (purged, expected, words) in
        [(true, 1, "reproduced: 10 of 10 trials applied twice"), (false, 0, "not reproduced in 10 trials")]
    {
        let db = dir.path().join(format!("fresh-{purged}.db"));
        let fresh = python_receiver_holding(&db, "safe", None, &[SECRET]);
        let url = format!("http://{}/webhooks", fresh.addr);
        let purge = purge(&db);
        let extra: &[&str] = if purged { &["--retention-cmd", &purge] } else { &[] };
        expect_script(&script, (&url, db.to_str().expect("utf-8")), extra, (expected, words));
    }
}

/// Audits the Python example, started through shell commands with `receiver_args`, in unsafe
/// mode with `check` and `audit_extra` (its kill and start commands too when `killed`); writes the
/// FAIL's script; runs it with `script_extra` (and the commands when `killed`) against a fresh
/// instance of each of `cases` (mode, expected exit, the words it must start with).
fn supervised_example_repro(
    (receiver_args, killed): (&str, bool),
    (check, audit_extra): (&str, &[&str]),
    script_extra: &[&str],
    cases: [(&str, i32, &str); 2],
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("audited.db");
    let receiver = super::audit_faults::python(&db, "unsafe", receiver_args);
    let run = dir.path().join("audit");
    let commands = if killed { receiver.flags() } else { Vec::new() };
    let (code, said) = audit_example(&receiver.url, &db, check, &[audit_extra, &commands].concat(), &run);
    assert_eq!(code, 1, "the unsafe mode fails {check}: {said}");
    drop(receiver);
    let script = write_repro(&run, check, &dir.path().join("repro.py"), &[]);
    for (mode, expected, words) in cases {
        let db = dir.path().join(format!("{mode}.db"));
        let fresh = super::audit_faults::python(&db, mode, receiver_args);
        let commands = if killed { fresh.commands() } else { Vec::new() };
        let flags = [&commands[..], script_extra].concat();
        expect_script(&script, (&fresh.url, db.to_str().expect("utf-8")), &flags, (expected, words));
    }
}

/// The Python example's check-then-act mode doubles copies the crash check's load sends while it
/// is killed and restarted: the crash script, sending its events as that load does (a share as
/// copies) under `--kills 2` through the same shell commands, reproduces it against a fresh
/// unsafe instance (exit 1) and not against the safe mode (exit 0).
#[test]
fn a_crash_fail_is_reproduced_with_the_users_kill_and_start_commands() {
    supervised_example_repro(
        ("", true),
        ("crash", &[]),
        &["--kills", "2", "--trials", "500"],
        [("unsafe", 1, "reproduced: "), ("safe", 0, "not reproduced in 500 events")],
    );
}

/// The Python example refuses credits to account 7 (`--refuse-account 7`): its safe mode parks
/// them in dead_letters and answers 422, its check-then-act mode answers 500 and parks nothing.
/// The poison FAIL's script, crediting the audit's poison account and reading the recorded
/// dead-letter query, reproduces it against a fresh unsafe instance (exit 1) and not the safe one.
#[test]
fn a_poison_fail_is_reproduced_until_the_receiver_dead_letters() {
    let poison = ["--poison-account", "7", "--dead-letter-query", "SELECT event_id FROM dead_letters"];
    supervised_example_repro(
        ("--refuse-account 7", false),
        ("poison", &[&poison[..], &["--poison-p99-factor", "50"]].concat()),
        &["--trials", "40"],
        [
            ("unsafe", 1, "reproduced: 8 of 8 poison events not dead-lettered"),
            ("safe", 0, "not reproduced with 8 poison events among 40"),
        ],
    );
}

/// The Python example drops a stalled body after 5 s: an audit allowing 2 s (`--stall-wait 2s`)
/// finds it held open. The script holds its stalled bodies the audit's 2 s and reproduces that
/// (exit 1); given `--stall-wait 8` it finds each closed in time (exit 0).
#[test]
fn a_stalled_body_held_past_the_audits_wait_is_reproduced_with_that_wait() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("audited.db");
    let receiver = python_receiver_holding(&db, "safe", None, &[SECRET]);
    let (url, run) = (format!("http://{}/webhooks", receiver.addr), dir.path().join("audit"));
    let (code, said) = audit_example(&url, &db, "hostile-input", &["--stall-wait", "2s"], &run);
    assert_eq!(code, 1, "held open past 2 s: {said}");
    let script = write_repro(&run, "hostile-input", &dir.path().join("repro.py"), &[]);
    let db = db.to_str().expect("utf-8");
    for (extra, expected, words) in [
        (&[][..], 1, "reproduced: stalled: 10 of 10 ("),
        (&["--stall-wait", "8"][..], 0, "not reproduced in 10 trials of stalled"),
    ] {
        expect_script(&script, (&url, db), extra, (expected, words));
    }
}

/// The balances example credits a balance and inserts a row keyed by its own ids: no table but its
/// dedupe bookkeeping holds event ids. Its racy mode fails concurrent-copies judged by
/// `--balance-query` alone, and by `--count-query` alone; each script, judging an event's applies
/// by its account's change in balance (over the amount) or in rows, reproduces it against a fresh
/// racy instance (exit 1) and not against the safe mode (exit 0).
#[test]
fn a_fail_judged_by_balances_or_rows_is_reproduced_by_each_accounts_change() {
    const BALANCES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/balances");
    let balances = |db: &str, mode: &str| {
        let mut cmd = Command::new("python3");
        cmd.arg(format!("{BALANCES}/receiver.py"));
        cmd.args(["--db", db, "--mode", mode, "--port", "0", "--secret", SECRET]);
        super::audit::start(cmd)
    };
    let queries = [
        ("--balance-query", "SELECT id, balance FROM customers"),
        ("--count-query", "SELECT customer, count(*) FROM credits GROUP BY customer"),
    ];
    for (flag, query) in queries {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = format!("sqlite://{}", dir.path().join("audited.db").display());
        let receiver = balances(&db, "racy");
        let run = dir.path().join("audit");
        let (template, url) =
            (format!("{BALANCES}/template.json"), format!("http://{}/webhooks", receiver.addr));
        let args = [
            &["audit", &url, "--secret", SECRET, "--payload", &template, "--observe-db", &db, flag, query][..],
            &[
                "--checks",
                "concurrent-copies",
                "--trials",
                "10",
                "--no-progress",
                "--out",
                run.to_str().expect("utf-8"),
            ],
        ];
        let (code, said) = hookbench(&args.concat());
        assert_eq!(code, 1, "racy fails judged by {flag}: {said}");
        drop(receiver);
        let script = write_repro(&run, "concurrent-copies", &dir.path().join("repro.py"), &[]);
        let text = std::fs::read_to_string(&script).expect("the script");
        let by = if flag == "--balance-query" { "balance" } else { "count" };
        assert!(text.contains(&format!("\\\"by\\\":\\\"{by}\\\"")), "judged by {by}");
        for (mode, expected, words) in
            [("racy", 1, "reproduced: "), ("safe", 0, "not reproduced in 10 trials")]
        {
            let db = format!("sqlite://{}", dir.path().join(format!("{mode}.db")).display());
            let fresh = balances(&db, mode);
            let url = format!("http://{}/webhooks", fresh.addr);
            let (code, said) = run_script_with("python3", &script, &url, &db, SECRET);
            assert_eq!(code, expected, "{flag} {mode}: {said}");
            assert!(said.starts_with(words), "{flag} {mode}: {said}");
        }
    }
}

/// naive applies one id sent with another body twice: the script re-sends that case (the one its
/// witnesses show), and an atomic worker, which dedupes on the id, passes it.
#[test]
fn a_hostile_input_fail_is_reproduced_against_naive_and_not_atomic() {
    reproduced_against_naive_not_atomic(Backend::Sqlite, "hostile-input");
}
