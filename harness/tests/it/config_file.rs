//! `--config FILE`: the committed schemas are the ones the flags generate; every example config
//! (one per provider, and the README's audit) parses, is valid against the schema and reads back
//! from `--print-config`; the README's audit command and its config file are the same audit, to
//! the report's parameters, run against the Python example receiver; the real binary's exit
//! status and message for a bad key; a secret from the environment never printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hookbench::audit::Audit;
use hookbench::cli::{
    AuditArgs, BenchArgs, Command as Sub, ConfigArgs, Invocation, config_json_schema, parse_from,
};
use hookbench::report::Report;
use testkit::SECRET;

const AUDIT_SCHEMA: &str = include_str!("../../../docs/schema/hookbench.audit.schema.json");
const BENCH_SCHEMA: &str = include_str!("../../../docs/schema/hookbench.bench.schema.json");

/// The README's `template.json`: the Python example's template, from the repository's root.
const README_TEMPLATE: &str = "examples/receivers/python-sqlite/template.json";
const README_CONFIG: &str = "examples/config/readme-audit.toml";
/// The README's own URL and database, which a real run replaces.
const README_URL: &str = "http://127.0.0.1:8000/webhooks";
const README_DB: &str = "sqlite:///path/app.db";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn parse(argv: &[&str]) -> Invocation {
    let argv = std::iter::once("hookbench").chain(argv.iter().copied());
    parse_from(argv).unwrap_or_else(|e| panic!("{e}"))
}

/// A run's arguments, as text, without `--config` itself (which names different files).
fn run_args(argv: &[&str]) -> String {
    match parse(argv) {
        Invocation::Run(cli) => match cli.command {
            // The run it makes: the signing scheme and the payload as the audit resolves them
            // (`--print-config` writes what `--signing` implies).
            Sub::Audit(a) => {
                let mut a = AuditArgs { config: ConfigArgs::default(), ..*a };
                a.target.payload =
                    Some(hookbench::wire::Payload::implied(a.target.payload.as_deref(), a.target.signing));
                a.target.signing = Some(a.target.signing.unwrap_or_default());
                format!("{a:?}")
            }
            Sub::Bench(b) => format!("{:?}", BenchArgs { config: ConfigArgs::default(), ..*b }),
            other => panic!("neither an audit nor a bench: {other:?}"),
        },
        Invocation::Print(text) => panic!("printed: {text}"),
    }
}

/// An audit's arguments, without `--config` itself (which names different files).
fn audit_args(argv: &[&str]) -> AuditArgs {
    match parse(argv) {
        Invocation::Run(cli) => match cli.command {
            Sub::Audit(a) => AuditArgs { config: ConfigArgs::default(), ..*a },
            other => panic!("not an audit: {other:?}"),
        },
        Invocation::Print(text) => panic!("printed: {text}"),
    }
}

fn printed(argv: &[&str]) -> String {
    match parse(argv) {
        Invocation::Print(text) => text,
        Invocation::Run(cli) => panic!("ran: {cli:?}"),
    }
}

fn examples() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("examples/config"))
        .expect("examples/config")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// The command an example configures: bench.toml a bench, the others an audit.
fn command_of(path: &Path) -> &'static str {
    if path.file_stem().is_some_and(|s| s == "bench") { "bench" } else { "audit" }
}

fn validator(command: &str) -> jsonschema::Validator {
    let text = if command == "bench" { BENCH_SCHEMA } else { AUDIT_SCHEMA };
    let schema: serde_json::Value = serde_json::from_str(text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("a valid schema")
}

fn audit_validator() -> jsonschema::Validator {
    validator("audit")
}

/// A TOML file's table as JSON, as an editor's schema check sees it.
fn as_json(text: &str) -> serde_json::Value {
    let table: toml::Table = toml::from_str(text).expect("TOML");
    serde_json::to_value(table).expect("JSON")
}

#[test]
fn the_committed_config_schemas_are_the_ones_the_flags_generate() {
    for (name, committed) in [("audit", AUDIT_SCHEMA), ("bench", BENCH_SCHEMA)] {
        let committed: serde_json::Value = serde_json::from_str(committed).expect("schema is JSON");
        assert_eq!(
            committed,
            config_json_schema(name).expect(name),
            "run `hookbench report config-schema {name} > docs/schema/hookbench.{name}.schema.json`"
        );
    }
}

#[test]
fn the_schema_refuses_an_unknown_key_and_a_wrong_type() {
    let validator = audit_validator();
    assert!(validator.is_valid(&as_json("applied-query = \"SELECT 1\"\nevents = 5\n")));
    assert!(!validator.is_valid(&as_json("apllied-query = \"SELECT 1\"\n")));
    assert!(!validator.is_valid(&as_json("events = \"many\"\n")));
    assert!(!validator.is_valid(&as_json("checks = [\"crush\"]\n")));
    assert!(!validator.is_valid(&as_json("strict = \"yes\"\n")));
}

#[test]
fn every_example_config_parses_is_schema_valid_and_reads_back_from_print_config() {
    let files = examples();
    let names: Vec<String> =
        files.iter().map(|p| p.file_stem().expect("name").to_string_lossy().into_owned()).collect();
    for expected in ["stripe", "github", "shopify", "standard-webhooks", "readme-audit", "bench"] {
        assert!(names.iter().any(|n| n == expected), "examples/config/{expected}.toml: {names:?}");
    }
    let scratch = tempfile::tempdir().expect("tempdir");
    for path in &files {
        let (shown, command) = (path.display(), command_of(path));
        let validator = validator(command);
        let text = std::fs::read_to_string(path).expect("read");
        let errors: Vec<String> = validator.iter_errors(&as_json(&text)).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{shown}: {errors:?}");
        let file = path.to_str().expect("utf-8");
        let args = run_args(&[command, "--config", file]);
        if command == "audit" {
            // SendGrid and Discord sign with a private key, which `hookbench keys` makes.
            let stem = path.file_stem().expect("name").to_string_lossy();
            let pair = ["sendgrid", "discord"].contains(&stem.as_ref()).then(|| {
                let scheme =
                    <hookbench::wire::Scheme as clap::ValueEnum>::from_str(&stem, false).expect("a scheme");
                hookbench::wire::signing::keys::generate(scheme.key_kind()).expect("a pair").private
            });
            let secret = pair.as_deref().unwrap_or(SECRET);
            let audit = audit_args(&["audit", "--config", file, "--secret", secret]);
            if !audit.target.payload.as_deref().unwrap_or_default().ends_with(".json") {
                // A provider's own bodies: the whole audit the file describes holds together,
                // with the secret it leaves to the environment or the command line.
                Audit::try_from(&audit).unwrap_or_else(|e| panic!("{shown}: {e:#}"));
            }
        }
        let effective = printed(&[command, "--config", file, "--print-config"]);
        let back = scratch.path().join("effective.toml");
        std::fs::write(&back, &effective).expect("write");
        let back = back.to_str().expect("utf-8");
        assert_eq!(run_args(&[command, "--config", back]), args, "{shown}");
        assert_eq!(printed(&[command, "--config", back, "--print-config"]), effective, "{shown}");
        let errors: Vec<String> =
            validator.iter_errors(&as_json(&effective)).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{shown}'s --print-config: {errors:?}");
    }
}

/// Splits a command as a shell would, for the README's: words apart at blanks outside double
/// quotes, the quotes dropped, `\` at a line's end joining the lines.
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let (mut word, mut quoted, mut any) = (String::new(), false, false);
    for c in command.replace("\\\n", " ").chars() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => (word, any) = (word + &c.to_string(), true),
        }
    }
    if any {
        words.push(word);
    }
    words
}

/// The README's audit command after `just`, with `$SECRET` as `secret` and its `template.json`
/// the Python example's.
fn readme_audit(secret: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let start = readme.find("just audit ").expect("the README's audit command");
    let end = readme[start..].find("\n```").expect("its block's end");
    let words = shell_words(&readme[start..start + end]);
    assert_eq!(words[..2], ["just", "audit"], "{words:?}");
    let replaced = words[1..].iter().map(|w| match w.as_str() {
        "$SECRET" => secret.to_string(),
        "template.json" => README_TEMPLATE.to_string(),
        other => other.to_string(),
    });
    replaced.collect()
}

#[test]
fn the_readme_s_audit_command_and_its_config_file_are_the_same_audit() {
    let argv = readme_audit(SECRET);
    assert!(argv.len() > 8, "the README's command: {argv:?}");
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let config = repo().join(README_CONFIG);
    let config = config.to_str().expect("utf-8");
    let from_readme = audit_args(&argv);
    let from_file = audit_args(&["audit", "--config", config, "--secret", SECRET]);
    assert_eq!(format!("{from_file:?}"), format!("{from_readme:?}"));
    assert_eq!(
        from_file.target.payload.as_deref(),
        Some(README_TEMPLATE),
        "the example's template, not a default"
    );
    let mut argv_printed = argv.clone();
    argv_printed.push("--print-config");
    assert_eq!(
        printed(&["audit", "--config", config, "--secret", SECRET, "--print-config"]),
        printed(&argv_printed)
    );
}

/// Runs the real binary from the repository's root (where the README's paths are) with `env`.
fn hookbench(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookbench"));
    cmd.current_dir(repo()).args(args).env_remove("HOOKBENCH_AUDIT_SECRET");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("hookbench runs")
}

#[test]
fn the_readme_s_audit_and_its_config_file_make_the_same_report_parameters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = super::audit::python_receiver_holding(&db, "safe", None, &[SECRET]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", db.display());
    let small = [
        "--checks",
        "sequential-duplicate,parallel-load",
        "--events",
        "50",
        "--rate",
        "400",
        "--quiet",
        "300ms",
    ];
    let run = |name: &str, args: Vec<String>| -> Report {
        let out = dir.path().join(name);
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(small);
        all.extend(["--no-progress", "--out", out.to_str().expect("utf-8")]);
        let done = hookbench(&all, &[]);
        let said = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(0), "{name}: {said}");
        Report::read_json(&out.join("report.json")).expect("report.json")
    };
    let readme: Vec<String> = readme_audit(SECRET)
        .into_iter()
        .map(|w| match w.as_str() {
            README_URL => url.clone(),
            README_DB => observe.clone(),
            _ => w,
        })
        .collect();
    let config = ["audit", "--config", README_CONFIG, "--secret", SECRET, &url, "--observe-db", &observe];
    let a = run("readme", readme);
    let b = run("config", config.iter().map(|s| s.to_string()).collect());
    let (a, b) = (a.audit_section().expect("an audit"), b.audit_section().expect("an audit"));
    assert_eq!(a.parameters, b.parameters);
    assert_eq!((&a.url, &a.signing, &a.provider, &a.payload), (&b.url, &b.signing, &b.provider, &b.payload));
    assert_eq!(a.observers, b.observers);
    assert!(a.payload.ends_with("template.json"), "{}", a.payload);
    let checks = |s: &hookbench::report::AuditSection| -> Vec<String> {
        s.checks.iter().map(|c| format!("{} {:?}", c.check.as_str(), c.status)).collect()
    };
    assert_eq!(checks(a), checks(b));
    assert_eq!(checks(a), ["sequential-duplicate Pass", "parallel-load Pass"], "both audits ran the checks");
}

#[test]
fn a_bad_key_ends_the_real_binary_with_2_naming_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("hookbench.toml");
    std::fs::write(&file, "url = \"http://127.0.0.1:9/w\"\n\napllied-query = \"SELECT 1\"\n").expect("write");
    let done = hookbench(&["audit", "--config", file.to_str().expect("utf-8")], &[]);
    assert_eq!(done.status.code(), Some(2));
    let said = String::from_utf8_lossy(&done.stderr);
    assert!(
        said.contains("hookbench.toml:3: unknown key \"apllied-query\" (did you mean \"applied-query\"?)"),
        "{said}"
    );
}

#[test]
fn print_config_names_a_secret_from_the_environment_and_never_prints_it() {
    let secret = "whsec_bm90LWluLWNsZWFyLWV2ZXI=";
    let env = [("HOOKBENCH_AUDIT_SECRET", secret)];
    let done = hookbench(&["audit", "--config", README_CONFIG, "--print-config"], &env);
    assert_eq!(done.status.code(), Some(0), "{}", String::from_utf8_lossy(&done.stderr));
    let effective = String::from_utf8(done.stdout).expect("utf-8");
    assert!(!effective.contains(secret), "{effective}");
    assert!(effective.contains("# secret: from HOOKBENCH_AUDIT_SECRET"), "{effective}");
    let dir = tempfile::tempdir().expect("tempdir");
    let back = dir.path().join("effective.toml");
    std::fs::write(&back, &effective).expect("write");
    let again = hookbench(&["audit", "--config", back.to_str().expect("utf-8"), "--print-config"], &env);
    assert_eq!(String::from_utf8(again.stdout).expect("utf-8"), effective);
    // The environment wins over the file: the file's secret is not the one used.
    let with_secret = dir.path().join("with-secret.toml");
    std::fs::write(&with_secret, "url = \"http://127.0.0.1:9/w\"\nsecret = [\"whsec_ZmlsZQ==\"]\n")
        .expect("write");
    let over =
        hookbench(&["audit", "--config", with_secret.to_str().expect("utf-8"), "--print-config"], &env);
    let over = String::from_utf8(over.stdout).expect("utf-8");
    assert!(
        over.contains("# secret: from HOOKBENCH_AUDIT_SECRET") && !over.contains("whsec_ZmlsZQ=="),
        "{over}"
    );
    // Given on the command line, the secret is part of what was asked, and printed.
    let given = hookbench(&["audit", "--config", README_CONFIG, "--secret", secret, "--print-config"], &env);
    assert!(String::from_utf8_lossy(&given.stdout).contains(&format!("secret = [\"{secret}\"]")));
}

#[test]
fn the_docs_quote_every_example_config_as_it_is() {
    let files = examples();
    assert!(!files.is_empty());
    for path in files {
        let page = format!("docs/{}.md", command_of(&path));
        let doc = std::fs::read_to_string(repo().join(&page)).expect("the page");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(doc.contains(&format!("```toml\n{text}```\n")), "{page} quotes {}", path.display());
    }
}
