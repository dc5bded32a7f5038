//! `hookbench model` through the real command-line entry point, against the article's
//! published output.

use clap::Parser;
use hookbench::cli::{Cli, run};

fn hookbench(args: &[&str]) -> String {
    let cli = Cli::try_parse_from(std::iter::once("hookbench").chain(args.iter().copied()))
        .expect("valid arguments");
    let mut out = Vec::new();
    run(cli, &mut out).expect("command succeeds");
    String::from_utf8(out).expect("utf-8 output")
}

fn from_events_line(text: &str) -> &str {
    let start = text.find("events: ").expect("an events: line");
    &text[start..]
}

/// The article's published output, from `events:` to the end, as printed in the article.
const PUBLISHED: &str = include_str!("../fixtures/article-output.txt");

#[test]
fn model_with_no_arguments_prints_the_articles_published_output() {
    let out = hookbench(&["model"]);
    let ours: Vec<&str> = from_events_line(&out).lines().collect();
    let theirs: Vec<&str> = PUBLISHED.lines().collect();
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "line {} differs", i + 1);
    }
    assert_eq!(ours.len(), theirs.len(), "line count");
}

#[test]
fn model_header_names_the_seed() {
    let out = hookbench(&["model", "--seed", "7", "--events", "200"]);
    assert!(out.lines().any(|l| l == "seed: 7"), "{out}");
    assert!(from_events_line(&out).starts_with("events: 200 ("));
}

#[test]
fn model_json_carries_the_same_figures() {
    let out = hookbench(&["model", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let rows = v["handlers"].as_array().expect("handlers");
    let deliveries: Vec<u64> = rows.iter().map(|r| r["deliveries"].as_u64().expect("number")).collect();
    assert_eq!(deliveries, [10_633, 10_747, 10_633, 10_633, 10_633, 10_633]);
    assert_eq!(rows[0]["extra_applies"], 368);
    assert_eq!(rows[1]["dup_events"], 65);
    assert_eq!(rows[4]["stale_accounts"], 19);
    assert_eq!(v["credit_events"], 5_935);
    assert_eq!(v["same_second_pairs"], 193);
    assert_eq!(v["crash"][0]["lost"], 15);
    assert_eq!(v["jitter"][1]["peak_after"], 11);
}

#[test]
fn model_refuses_a_chance_above_one() {
    // Refused by the flag's parser (exit 2), naming the flag and the bound.
    let err = Cli::try_parse_from(["hookbench", "model", "--p-duplicate", "1.5"]).expect_err("refused");
    assert!(err.to_string().contains("--p-duplicate") && err.to_string().contains("0 to 1"), "{err}");
    assert!(Cli::try_parse_from(["hookbench", "model", "--events", "0"]).is_err());
}
