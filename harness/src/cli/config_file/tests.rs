//! The config file read into arguments: its errors (with lines), the precedence of the command
//! line, switches, lists, an empty file, and `--print-config` read back.

use std::io::Write as _;

use clap::Parser as _;

use super::*;
use crate::cli::{AuditArgs, BenchArgs, Command as Sub};

const URL: &str = "http://127.0.0.1:9/webhooks";

/// A config file holding `text`, kept while the test runs.
fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new().suffix(".toml").tempfile().expect("temp file");
    f.write_all(text.as_bytes()).expect("write");
    f
}

fn parse(args: &[&str]) -> Result<Invocation, ConfigError> {
    parse_from(std::iter::once("hookbench").chain(args.iter().copied()))
}

/// `hookbench audit ARGS --config FILE(text)`'s arguments.
fn audit_with(text: &str, args: &[&str]) -> Result<AuditArgs, ConfigError> {
    let f = file(text);
    let path = f.path().to_str().expect("utf-8");
    let mut argv = vec!["audit", "--config", path];
    argv.extend_from_slice(args);
    audit_args(parse(&argv)?)
}

fn audit_args(invocation: Invocation) -> Result<AuditArgs, ConfigError> {
    match invocation {
        Invocation::Run(cli) => match cli.command {
            Sub::Audit(a) => {
                let mut a = *a;
                a.config = ConfigArgs::default();
                Ok(a)
            }
            other => panic!("not an audit: {other:?}"),
        },
        Invocation::Print(text) => panic!("printed instead of running: {text}"),
    }
}

fn bench_args(invocation: Invocation) -> BenchArgs {
    match invocation {
        Invocation::Run(cli) => match cli.command {
            Sub::Bench(b) => {
                let mut b = *b;
                b.config = ConfigArgs::default();
                b
            }
            other => panic!("not a bench: {other:?}"),
        },
        Invocation::Print(text) => panic!("printed instead of running: {text}"),
    }
}

/// The file error's text (`FILE:LINE: message`), with the temporary file's name cut to `FILE`.
fn file_error(text: &str) -> String {
    let f = file(text);
    let path = f.path().to_str().expect("utf-8");
    match parse(&["audit", "--config", path]) {
        Err(e @ ConfigError::File { .. }) => e.to_string().replace(path, "FILE"),
        other => panic!("not a file error: {other:?}"),
    }
}

fn printed(args: &[&str]) -> String {
    match parse(args).expect("parses") {
        Invocation::Print(text) => text,
        Invocation::Run(cli) => panic!("ran instead of printing: {cli:?}"),
    }
}

#[test]
fn every_command_taking_a_config_is_a_subcommand() {
    let root = built_command();
    for name in COMMANDS {
        assert!(root.find_subcommand(name).is_some(), "{name}");
        assert!(json_schema(name).is_some(), "{name}");
    }
    assert!(json_schema("serve").is_none());
}

#[test]
fn every_flag_of_both_commands_is_a_key() {
    let root = built_command();
    for name in COMMANDS {
        let command = root.find_subcommand(name).expect("a subcommand");
        let missing: Vec<String> = command
            .get_arguments()
            .filter(|arg| !NOT_KEYS.contains(&arg.get_id().as_str()) && Kind::of(arg).is_none())
            .map(key_of)
            .collect();
        assert!(missing.is_empty(), "{name}: flags with no key: {missing:?}");
        let keys: Vec<String> = keys(command).map(|(k, _, _)| k).collect();
        for flattened in ["query-timeout", "fail-on", "fail-on-file", "url"] {
            assert!(name != "audit" || keys.iter().any(|k| k == flattened), "audit: {flattened}");
        }
        for flattened in ["p-credit", "database-url", "work-delay", "fail-on"] {
            assert!(name != "bench" || keys.iter().any(|k| k == flattened), "bench: {flattened}");
        }
    }
}

#[test]
fn an_unknown_key_is_named_with_its_line_and_the_key_meant() {
    let said = file_error("url = \"http://127.0.0.1:9/w\"\n\n# queries\napllied-query = \"SELECT 1\"\n");
    assert_eq!(said, "FILE:4: unknown key \"apllied-query\" (did you mean \"applied-query\"?)");
    let said = file_error("zzzz = 1\n");
    assert!(said.starts_with("FILE:1: unknown key \"zzzz\" (`hookbench audit --help`"), "{said}");
}

#[test]
fn the_config_flags_themselves_are_no_keys() {
    for key in ["config = \"other.toml\"", "print-config = true", "help = true"] {
        let said = file_error(&format!("{key}\n"));
        assert!(said.starts_with("FILE:1: unknown key"), "{said}");
    }
}

#[test]
fn a_value_of_the_wrong_type_names_its_key_line_and_why() {
    let said = file_error("url = \"http://127.0.0.1:9/w\"\nevents = \"many\"\n");
    assert_eq!(said, "FILE:2: key \"events\": expected an integer, found a string");
    let said = file_error("strict = \"yes\"\n");
    assert_eq!(said, "FILE:1: key \"strict\": expected a boolean (true or false), found a string");
    let said = file_error("secret = \"whsec_a\"\n");
    assert_eq!(said, "FILE:1: key \"secret\": expected an array of strings, found a string");
    let said = file_error("checks = [1]\n");
    assert_eq!(said, "FILE:1: key \"checks\": expected a string, found an integer");
    let said = file_error("[events]\nat-most = 5\n");
    assert_eq!(said, "FILE:1: key \"events\": expected an integer, found a table");
    let said = file_error("[observe]\ndb = \"x\"\n");
    assert_eq!(said, "FILE:1: unknown key \"observe\" (did you mean \"observe-db\"?)");
}

#[test]
fn a_value_the_flags_parser_refuses_names_its_key_line_and_why() {
    let said = file_error("copies = 1\n");
    assert!(said.starts_with("FILE:1: key \"copies\": invalid value '1' for '--copies"), "{said}");
    let said = file_error("\nquiet = \"soon\"\n");
    assert!(said.starts_with("FILE:2: key \"quiet\": invalid value 'soon' for '--quiet"), "{said}");
    let said = file_error("checks = [\"crash\", \"crush\"]\n");
    assert!(said.starts_with("FILE:1: key \"checks\": invalid value 'crush'"), "{said}");
}

#[test]
fn a_syntax_error_names_its_line() {
    let said = file_error("events = 5\nrate = = 2\n");
    assert!(said.starts_with("FILE:2: not valid TOML:"), "{said}");
}

#[test]
fn an_unreadable_file_names_the_flag() {
    // A device is refused before it is read: `/dev/zero` would be read without end.
    for (path, why) in [("/nonexistent/hookbench.toml", ""), ("/dev/zero", "not a regular file")] {
        match parse(&["audit", URL, "--config", path]) {
            Err(e @ ConfigError::File { .. }) => {
                let said = e.to_string();
                assert!(said.starts_with(&format!("--config: {path}: ")) && said.contains(why), "{said}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn an_empty_file_gives_the_defaults() {
    let plain = audit_args(parse(&["audit", URL]).expect("parses")).expect("audit");
    let empty = audit_with("", &[URL]).expect("parses");
    assert_eq!(format!("{empty:?}"), format!("{plain:?}"));
}

#[test]
fn the_file_gives_the_url_and_values_of_every_type() {
    let a = audit_with(
        "url = \"http://127.0.0.1:9/w\"\nevents = 7\nrate = 50\nmax-amount = 500\npoison = 0.5\nquiet = \"2s\"\nchecks = [\"crash\", \"poison\"]\n",
        &[],
    )
    .expect("parses");
    assert_eq!(a.url, "http://127.0.0.1:9/w");
    assert_eq!((a.events, a.rate, a.max_amount), (7, 50.0, 500));
    // A check's own flag, in its module's group.
    assert!(format!("{:?}", a.check_flags).contains("poison_chance: 0.5"), "{:?}", a.check_flags);
    assert_eq!(a.quiet, std::time::Duration::from_secs(2));
    assert_eq!(a.checks, [crate::report::Check::Crash, crate::report::Check::Poison]);
}

#[test]
fn the_command_line_overrides_a_scalar_and_replaces_a_list() {
    let text = "url = \"http://127.0.0.1:9/w\"\nevents = 7\nsecret = [\"whsec_a\", \"whsec_b\"]\n";
    let from_file = audit_with(text, &[]).expect("parses");
    assert_eq!(
        (from_file.events, from_file.target.secret.clone()),
        (7, vec!["whsec_a".into(), "whsec_b".into()])
    );
    let a = audit_with(text, &["--events", "9", "--secret", "whsec_c", URL]).expect("parses");
    assert_eq!(a.events, 9);
    assert_eq!(a.target.secret, ["whsec_c"]);
    assert_eq!(a.url, URL);
}

#[test]
fn a_switch_is_a_boolean_and_the_command_line_can_turn_it_on() {
    assert!(audit_with("strict = true\n", &[URL]).expect("parses").strict);
    assert!(!audit_with("strict = false\n", &[URL]).expect("parses").strict);
    assert!(audit_with("strict = false\n", &[URL, "--strict"]).expect("parses").strict);
}

#[test]
fn a_negative_number_reaches_its_flag() {
    let a = audit_with("account-base = -1\n", &[URL]).expect("parses");
    assert_eq!(a.account_base, Some(-1));
}

#[test]
fn without_config_the_arguments_are_clap_s_own() {
    let argv = ["hookbench", "audit", URL, "--events", "3"];
    let ours = audit_args(parse_from(argv).expect("parses")).expect("audit");
    let Sub::Audit(theirs) = Cli::try_parse_from(argv).expect("parses").command else { panic!("audit") };
    assert_eq!(format!("{ours:?}"), format!("{:?}", *theirs));
    assert!(matches!(parse(&["audit"]), Err(ConfigError::Args(_))), "the URL is still required");
}

#[test]
fn print_config_reads_back_as_the_same_run() {
    let given = file("url = \"http://127.0.0.1:9/w\"\nevents = 7\nchecks = [\"crash\"]\nstrict = true\n");
    let path = given.path().to_str().expect("utf-8");
    let first =
        printed(&["audit", "--config", path, "--rate", "12.5", "--secret", "whsec_a", "--print-config"]);
    assert!(first.contains("\nevents = 7\n") && first.contains("\nrate = 12.5\n"), "{first}");
    assert!(first.contains("\nquery-timeout = \"30s\"\n"), "defaults are printed: {first}");
    let again = file(&first);
    let back = again.path().to_str().expect("utf-8");
    assert_eq!(printed(&["audit", "--config", back, "--print-config"]), first);
    let original =
        audit_with("", &["http://127.0.0.1:9/w", "--events", "7", "--checks", "crash", "--strict"])
            .map(|mut a| {
                a.rate = 12.5;
                a.target.secret = vec!["whsec_a".into()];
                // Printed as the audit resolves them, so written back as given.
                a.target.signing = Some(crate::wire::Scheme::StandardWebhooks);
                a.target.payload = Some("hookbench".into());
                a
            })
            .expect("parses");
    let read_back = audit_args(parse(&["audit", "--config", back]).expect("parses")).expect("audit");
    assert_eq!(format!("{read_back:?}"), format!("{original:?}"));
}

#[test]
fn print_config_shows_the_payload_a_signing_scheme_implies() {
    let printed_for = |args: &[&str]| {
        let argv = [&["audit", "http://127.0.0.1:9/w"][..], args, &["--print-config"]].concat();
        printed(&argv)
    };
    let github = printed_for(&["--signing", "github"]);
    assert!(
        github.contains("\nsigning = \"github\"\n") && github.contains("\npayload = \"github\"\n"),
        "{github}"
    );
    let plain = printed_for(&[]);
    assert!(
        plain.contains("\nsigning = \"standard-webhooks\"\n")
            && plain.contains("\npayload = \"hookbench\"\n"),
        "no --signing keeps hookbench's own body: {plain}"
    );
    let given = printed_for(&["--signing", "stripe", "--payload", "hookbench"]);
    assert!(given.contains("\npayload = \"hookbench\"\n"), "a --payload given stands: {given}");
}

#[test]
fn bench_takes_its_flattened_groups_and_lists() {
    let f = file("backends = [\"sqlite\"]\np-credit = 0.5\nfail-on = [\"dup_events>0\"]\nworkers = 2\n");
    let path = f.path().to_str().expect("utf-8");
    let b = bench_args(parse(&["bench", "--config", path]).expect("parses"));
    assert_eq!(b.backends, [crate::matrix::Backend::Sqlite]);
    assert_eq!((b.workload.p_credit, b.workers, b.thresholds.fail_on.len()), (0.5, 2, 1));
    let text = printed(&["bench", "--config", path, "--print-config"]);
    assert!(text.contains("\nbackends = [\"sqlite\"]\n") && text.contains("\nevents = "), "{text}");
    let b = bench_args(parse(&["bench", "--config", path, "--backends", "postgres,sqlite"]).expect("parses"));
    assert_eq!(b.backends.len(), 2);
}

#[test]
fn the_schema_types_each_key_from_its_flag() {
    let schema = json_schema("audit").expect("audit");
    let p = &schema["properties"];
    assert_eq!(p["events"]["type"], "integer");
    assert_eq!(p["events"]["default"], 1000);
    assert_eq!(p["rate"]["type"], "number");
    assert_eq!(p["strict"]["type"], "boolean");
    assert_eq!(p["strict"]["default"], false);
    assert_eq!(p["secret"]["items"]["type"], "string");
    assert_eq!(p["quiet"]["default"], "1s");
    assert!(p["checks"]["items"]["enum"].as_array().is_some_and(|e| e.contains(&json!("crash"))));
    assert!(p["url"].is_object() && p["config"].is_null() && p["print-config"].is_null());
    assert_eq!(schema["additionalProperties"], false);
    let bench = json_schema("bench").expect("bench");
    assert_eq!(bench["properties"]["backends"]["default"], json!(["postgres", "sqlite"]));
}

#[test]
fn a_url_that_is_not_http_is_refused_naming_the_key_and_never_read_as_a_flag() {
    for url in ["--strict", "-x", "ftp://h/w", "127.0.0.1:9/w"] {
        let said = file_error(&format!("url = \"{url}\"\n"));
        assert!(said.starts_with("FILE:1: key \"url\": invalid value"), "{url}: {said}");
        assert!(said.contains("not http://host[:port]/path"), "{url}: {said}");
    }
    // The same rule on the command line: a URL `--print-config` writes always reads back.
    let e = parse(&["audit", "--", "-x"]).expect_err("not a URL");
    assert!(e.to_string().contains("not http://host[:port]/path"), "{e}");
    let a = audit_with(&format!("url = \"{URL}\"\n"), &[]).expect("an http URL");
    assert_eq!(a.url, URL);
}

#[test]
fn an_empty_array_is_refused_naming_the_key_and_a_full_one_is_read() {
    let said = file_error("checks = []\n");
    assert_eq!(
        said,
        "FILE:1: key \"checks\": an empty array gives the flag no value: leave the key out for its default"
    );
    let a = audit_with(&format!("url = \"{URL}\"\nchecks = [\"lost-ack\"]\n"), &[]).expect("one check");
    assert_eq!(a.checks, [crate::report::Check::LostAck]);
}

#[test]
fn a_second_config_is_refused_naming_both_files_and_one_is_read() {
    let (a, b) = (file(&format!("url = \"{URL}\"\n")), file("events = 5\n"));
    let (a, b) = (a.path().to_str().expect("utf-8"), b.path().to_str().expect("utf-8"));
    let config_b = format!("--config={b}");
    let e = parse(&["audit", "--config", a, &config_b]).expect_err("two files");
    let said = e.to_string();
    assert!(said.starts_with("--config: given 2 times (") && said.contains(a) && said.contains(b), "{said}");
    assert!(audit_args(parse(&["audit", "--config", a]).expect("one file")).is_ok());
    // After `--`, `--config` is the URL's text, not a flag: refused as a URL, not as a second file.
    let e = parse(&["audit", "--config", a, "--", "--config"]).expect_err("not a URL");
    assert!(!e.to_string().contains("given 2 times"), "{e}");
}

#[test]
fn an_unknown_key_of_half_a_megabyte_is_quoted_cut() {
    let key = "k".repeat(1 << 19);
    let said = file_error(&format!("{key} = 1\n"));
    assert!(said.len() < 500, "{} bytes", said.len());
    assert!(said.contains("more bytes)"), "{said}");
}
