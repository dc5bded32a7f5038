//! Reports: a real run's three files, its JSON validated against the committed schema, the HTML's
//! charts, the history index, and `report compare` as a CI gate.

use clap::Parser;
use hookbench::cli::{Cli, run};
use hookbench::report::{Report, chart_titles, compare};
use testkit::browser;

fn hookbench(args: &[&str]) -> anyhow::Result<String> {
    let cli = Cli::try_parse_from(std::iter::once("hookbench").chain(args.iter().copied()))?;
    let mut out = Vec::new();
    run(cli, &mut out)?;
    Ok(String::from_utf8(out)?)
}

const SCHEMA: &str = include_str!("../../../reports/report.schema.json");

#[test]
fn the_committed_schema_is_the_one_the_types_generate() {
    let committed: serde_json::Value = serde_json::from_str(SCHEMA).expect("schema is JSON");
    assert_eq!(
        committed,
        Report::json_schema(),
        "run `hookbench report schema > reports/report.schema.json`"
    );
}

#[test]
fn a_small_bench_writes_json_markdown_and_html_and_the_history_tracks_it() {
    let reports = tempfile::tempdir().expect("tempdir");
    let exe = env!("CARGO_BIN_EXE_hookbench");
    let mut runs = Vec::new();
    for name in ["run-a", "run-b"] {
        let dir = reports.path().join(name);
        let dir_s = dir.to_str().expect("utf-8").to_string();
        hookbench(&[
            "bench",
            "--out",
            &dir_s,
            "--no-progress",
            "--worker-exe",
            exe,
            "--events",
            "300",
            "--designs",
            "naive,atomic,version-guard",
        ])
        .expect("bench runs");
        runs.push(dir);
    }
    let dir = &runs[0];

    // report.json is valid against the committed schema.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).expect("report.json")).expect("JSON");
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // ... and the schema is not vacuous: a report missing a field fails it.
    let mut broken = json.clone();
    broken["rows"][0].as_object_mut().expect("row").remove("dup_events");
    assert!(!validator.is_valid(&broken));

    // report.md has the tables.
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    // ... led by the verdict grid: atomic and version-guard apply exactly once, naive does not.
    let grid = md.split("## Verdict").nth(1).expect("a verdict grid").split("\n## ").next().expect("grid");
    assert!(md.find("## Verdict") < md.find("## Correctness"), "the verdict comes first");
    assert!(
        grid.contains("| **atomic** | exactly once;") && grid.contains("| **naive** | not exactly once ("),
        "{grid}"
    );
    // ... whose failing cells link to their witnesses.
    let naive = "#witnesses-in-postgresnaive";
    assert!(grid.contains(&format!("([witnesses]({naive}))")), "{grid}");
    assert!(md.contains("### Witnesses in postgres/naive"), "{md}");
    for needle in [
        "## Correctness: real (per backend) and model",
        "| **atomic** | dup events |",
        "## Deliveries and latency",
        "| seed | 20261023 |",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}");
    }

    // report.html is self-contained and has one chart per promised figure, with its title.
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    let grid_at = html.find("<section id=\"verdict-grid\">").expect("the verdict grid");
    assert!(grid_at < html.find("<figure").expect("charts"), "the grid before the charts");
    assert!(html.contains("style=\"background:#f8d0d0\">not exactly once"), "naive in red");
    assert!(
        html.contains(&format!("<a href=\"{naive}\">witnesses</a>"))
            && html.contains(&format!("<h3 id=\"{}\">", &naive[1..])),
        "the grid links to the witnesses' heading"
    );
    let report = Report::read_json(&dir.join("report.json")).expect("report");
    let titles = chart_titles(&report);
    assert_eq!(titles.len(), 4, "latency per backend (2), duplicates, stale accounts");
    for (id, title) in &titles {
        let start = html.find(&format!("<figure id=\"{id}\">")).unwrap_or_else(|| panic!("no figure {id}"));
        let figure = &html[start..start + html[start..].find("</figure>").expect("closed")];
        assert!(figure.contains(&format!("<figcaption>{title}</figcaption>")), "{id}: caption");
        assert!(figure.contains("<svg") && figure.contains(title.as_str()), "{id}: an SVG titled {title}");
        assert!(figure.contains("<path") || figure.contains("<rect"), "{id}: something drawn");
    }
    assert_eq!(html.matches("<svg").count(), titles.len());
    // Nothing fetched: no scripts, stylesheets, images or links to elsewhere (an SVG's xmlns is a name).
    for fetch in ["<script", "<link", "<img", "src=\"http", "href=\"http", "url(http"] {
        assert!(!html.contains(fetch), "report.html fetches something: {fetch}");
    }
    assert!(html.contains("percentile (axis: 1/(1-p), log scale)") && html.contains("extra applies (count)"));
    // Each cell's wall time is told phase by phase, and the phases add up to no more than it.
    for r in report.rows() {
        let p = r.phases;
        let sum = p.provision_s
            + p.fleet_start_s
            + p.deliver_s
            + p.settle_s
            + p.fleet_stop_s
            + p.check_s
            + p.history_and_cleanup_s;
        assert!(p.deliver_s > 0.0 && p.fleet_start_s > 0.0 && sum <= r.wall_s + 1e-6, "{p:?} {}", r.wall_s);
    }
    // The spectrum is read from the full histogram, out to 99.999 %.
    let spectrum = &report.rows()[0].latency_spectrum;
    assert_eq!(spectrum.planned.percentiles.len(), 51);
    assert!((spectrum.planned.percentiles[50] - 99.999).abs() < 1e-9, "{spectrum:?}");
    assert!(spectrum.planned.us.windows(2).all(|w| w[0] <= w[1]) && spectrum.actual.us.len() == 51);

    // The index has both runs, made with the same parameters, on one trend: a small chart per
    // design and figure, each run labelled by its day and commit.
    let out = hookbench(&["report", "index", reports.path().to_str().expect("utf-8")]).expect("index");
    assert!(out.contains("indexed 2 runs"), "{out}");
    let index = std::fs::read_to_string(reports.path().join("index.html")).expect("index.html");
    assert_eq!(index.matches("<h2>Trend: ").count(), 1, "one set of parameters");
    for design in ["naive", "atomic", "version-guard"] {
        for figure in ["duplicates", "stale", "p99"] {
            let id = format!("trend-0-{design}-{figure}");
            assert!(index.contains(&format!("<figure id=\"{id}\">")), "index lacks {id}");
        }
    }
    assert!(index.contains(&hookbench::report::run_label(&report)), "runs labelled by day and commit");
    assert!(index.contains("run-a/report.html") && index.contains("run-b/report.html"));
    let index_md = std::fs::read_to_string(reports.path().join("index.md")).expect("index.md");
    assert!(index_md.contains("[run-a](run-a/report.md)"));
}

fn sample_report() -> Report {
    let json = r#"{"kind":"bench","run_id":"x","started_at":"2026-11-29T00:00:00Z","git_sha":null,
      "parameters":{"seed":1,"events":10,"workers":1,"concurrency":2,"rate":null,"work_delay":"0s","timeout":"10s",
        "retry":{"base":"10ms","cap":"1s","max_attempts":10},"isolation":"read-committed","inbox_workers":2,
        "p_duplicate":0.03,"p_ack_lost":0.02,"p_concurrent":0.01,"p_shuffle":0.1},
      "versions":{"hookbench":"0","postgres":null,"sqlite":"3","postgres_origin":null},
      "machine":{"cpu":"c","cores":2,"memory_bytes":null,"os":"linux","arch":"x86_64"},
      "rows":[{"backend":"sqlite","design":"atomic","deliveries":10,"status_2xx":10,"status_4xx":0,"status_5xx":0,
        "timeouts":0,"retries":0,"dup_events":0,"extra_applies":0,"lost":0,"stale_writes":0,"stale_accounts":0,
        "ledger":600,"expected":600,"latency_us":{"p50":1000,"p90":2000,"p99":3000,"p999":4000,"max":5000,"count":10},
        "latency_actual_us":{"p50":1000,"p90":2000,"p99":3000,"p999":4000,"max":5000,"count":10},
        "throughput_per_s":100.0,"wall_s":1.0,"connect_errors":0,"gave_up":0,"ledger_rows":600,"dead_letters":0,"model":null}],
      "skipped":[],"broken":[]}"#;
    serde_json::from_str(json).expect("sample report")
}

#[test]
fn compare_passes_identical_runs_and_flags_one_more_duplicate_apply() {
    let a = sample_report();
    assert!(compare(&a, &a.clone(), 0.5, 0.0).regressions.is_empty());
    let mut b = a.clone();
    b.bench_body_mut().expect("a bench").rows[0].figures.dup_events += 1;
    b.bench_body_mut().expect("a bench").rows[0].figures.extra_applies += 1;
    b.bench_body_mut().expect("a bench").rows[0].figures.ledger += 100;
    let c = compare(&a, &b, 0.5, 0.0);
    assert!(
        c.regressions.iter().any(|r| r.contains("sqlite atomic: dup_events 0 -> 1")),
        "{:?}",
        c.regressions
    );
    // Through the command line: exit status non-zero on the regression, zero on identical runs.
    let dir = tempfile::tempdir().expect("tempdir");
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&pa, serde_json::to_vec(&a).expect("json")).expect("write");
    std::fs::write(&pb, serde_json::to_vec(&b).expect("json")).expect("write");
    let (sa, sb) = (pa.to_str().expect("utf-8"), pb.to_str().expect("utf-8"));
    assert_eq!(hookbench(&["report", "compare", sa, sa]).expect("identical runs pass"), "no change\n");
    let err = hookbench(&["report", "compare", sa, sb]).expect_err("a regression fails");
    assert!(err.to_string().contains("1 regression") || err.to_string().contains("regression(s)"), "{err}");
    // p99 latency past the threshold is a regression too; within it, only a change.
    let mut slow = a.clone();
    slow.bench_body_mut().expect("a bench").rows[0].latency_us.p99 = 4000;
    assert!(compare(&a, &slow, 0.5, 0.0).regressions.is_empty());
    assert_eq!(compare(&a, &slow, 0.2, 0.0).regressions.len(), 1);
    // A tolerance forgives noise in figures that are not zero, never a figure leaving zero.
    let mut noisy = a.clone();
    noisy.bench_body_mut().expect("a bench").rows[0].figures.stale_writes = 10;
    let mut noisier = noisy.clone();
    noisier.bench_body_mut().expect("a bench").rows[0].figures.stale_writes = 12;
    assert!(compare(&noisy, &noisier, 0.5, 0.25).regressions.is_empty());
    assert_eq!(compare(&noisy, &noisier, 0.5, 0.0).regressions.len(), 1);
    // dup_events, extra_applies and |ledger - expected| all left zero.
    assert_eq!(
        compare(&a, &b, 0.5, 10.0).regressions.len(),
        3,
        "leaving zero is a regression at any tolerance"
    );
}

#[test]
fn compare_flags_a_crash_that_loses_an_event_and_a_retention_figure_off_the_model() {
    let mut a = sample_report();
    let experiments = serde_json::json!({
        "crash": [{"backend":"sqlite","design":"atomic","events":2000,"crashes":15,"other_exits":0,"keys":2000,
                   "applied":2000,"lost":0,"ledger":200000,"expected":200000,"attempts":2015,"model":null}],
        "retention": [{"backend":"sqlite","events":10,"visits":12,"purges":2,"keys_purged":12,"peak_keys":12,
                       "keys_left":0,"wall_s":0.1,
                       "rows":[{"schedule":"Svix published schedule","ttl":"5 min","duplicate_applies":3,"model":3}]}]
    });
    a.bench_body_mut().expect("a bench").experiments =
        serde_json::from_value(experiments).expect("experiments");
    assert!(compare(&a, &a.clone(), 0.5, 0.0).regressions.is_empty());
    let mut lossy = a.clone();
    lossy.bench_body_mut().expect("a bench").experiments.crash[0].lost = 1;
    let c = compare(&a, &lossy, 0.5, 10.0);
    assert_eq!(c.regressions, ["crash sqlite atomic: lost 0 -> 1"], "{c:?}");
    let mut off = a.clone();
    off.bench_body_mut().expect("a bench").experiments.retention[0].rows[0].duplicate_applies = 4;
    let c = compare(&a, &off, 0.5, 0.0);
    assert_eq!(c.regressions.len(), 1, "{c:?}");
    assert!(c.regressions[0].contains("where the model has 3"), "{c:?}");
    // The sections reach report.md (and through it report.html).
    let md = hookbench::report::render_markdown(&a);
    assert!(md.contains("## Crash after the dedupe key") && md.contains("## Key retention"), "{md}");
    let html = hookbench::report::render_html(&a);
    assert!(html.contains("Crash after the dedupe key") && html.contains("Key retention"), "{html}");
}

const HISTORY_SCHEMA: &str = include_str!("../../../reports/history.schema.json");

#[test]
fn the_committed_history_schema_is_the_one_the_types_generate_and_a_real_history_fits_it() {
    let committed: serde_json::Value = serde_json::from_str(HISTORY_SCHEMA).expect("schema is JSON");
    assert_eq!(
        committed,
        hookbench::history::Line::json_schema(),
        "run `hookbench report history-schema > reports/history.schema.json`"
    );
    let validator = jsonschema::validator_for(&committed).expect("a valid schema");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().to_str().expect("utf-8");
    let exe = env!("CARGO_BIN_EXE_hookbench");
    let small = ["--backends", "sqlite", "--designs", "naive", "--events", "300", "--rate", "3000"];
    hookbench(&[&["bench", "--out", out, "--no-progress", "--worker-exe", exe][..], &small[..]].concat())
        .expect("a bench runs");
    let text = std::fs::read_to_string(dir.path().join("history.jsonl")).expect("history.jsonl");
    let (mut attempts, mut events, mut changes) = (0, 0, 0);
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        assert!(validator.is_valid(&value), "{line}");
        match value["type"].as_str() {
            Some("attempt") => attempts += 1,
            Some("event") => events += 1,
            Some("change") => changes += 1,
            Some("account" | "verdict") => {}
            other => panic!("a line of type {other:?}"),
        }
    }
    // naive writes every plan update it gets, so the trigger recorded changes.
    assert!(attempts > 0 && events > 0 && changes > 0, "{attempts} {events} {changes}");
    assert!(!validator.is_valid(&serde_json::json!({"type": "attempt", "cell": "x"})));
}

#[test]
fn the_report_and_the_index_render_in_a_real_browser_with_no_network_request() {
    let reports = tempfile::tempdir().expect("tempdir");
    let dir = reports.path().join("run");
    let exe = env!("CARGO_BIN_EXE_hookbench");
    let small = ["--backends", "sqlite", "--designs", "naive,atomic", "--events", "300", "--rate", "3000"];
    let out = dir.to_str().expect("utf-8");
    hookbench(&[&["bench", "--out", out, "--no-progress", "--worker-exe", exe][..], &small[..]].concat())
        .expect("a bench runs");
    hookbench(&["report", "index", reports.path().to_str().expect("utf-8")]).expect("index");
    let report = Report::read_json(&dir.join("report.json")).expect("report");

    let page =
        browser::render(&dir.join("report.html"), &["#verdict-grid table", "#verdict-grid td.verdict"]);
    assert!(page.page_requests().is_empty() && page.resources.is_empty(), "{page:?}");
    assert_eq!(page.title, format!("hookbench run {}", report.header.run_id));
    let grid = page.boxes("#verdict-grid table");
    assert!(grid.len() == 1 && grid[0].0 > 0 && grid[0].1 > 0, "the grid is laid out: {page:?}");
    assert_eq!(page.boxes("#verdict-grid td.verdict").len(), report.rows().len(), "a cell per row");
    let ids: Vec<String> = chart_titles(&report).into_iter().map(|(id, _)| id).collect();
    assert_eq!(page.figures.iter().map(|f| f.0.clone()).collect::<Vec<_>>(), ids);
    assert!(page.figures.iter().all(|(_, (w, h))| *w >= 600 && *h >= 300), "charts drawn: {page:?}");

    let index = browser::render(&reports.path().join("index.html"), &["section.trend"]);
    assert!(index.page_requests().is_empty() && index.resources.is_empty(), "{index:?}");
    assert_eq!(index.boxes("section.trend").len(), 1);
    assert_eq!(index.figures.len(), 2 * 3, "a small chart per design and figure: {index:?}");
    assert!(index.figures.iter().all(|(_, (w, h))| *w > 100 && *h > 100), "{index:?}");

    // The catch works: the same page with one remote image, its Content-Security-Policy taken
    // out, is caught fetching it; with the policy in, the image is not fetched.
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    let with_image = html.replacen("</h1>", "</h1><img src=\"http://cdn.example.test/chart.png\">", 1);
    let csp = with_image.find("<meta http-equiv=\"Content-Security-Policy\"").expect("the policy");
    let csp = &with_image[csp..csp + with_image[csp..].find('>').expect("its end") + 1];
    std::fs::write(dir.join("fetching.html"), with_image.replacen(csp, "", 1)).expect("write");
    let caught = browser::render(&dir.join("fetching.html"), &[]);
    assert!(caught.page_requests().iter().any(|r| r.contains("cdn.example.test")), "{caught:?}");
    std::fs::write(dir.join("blocked.html"), &with_image).expect("write");
    let blocked = browser::render(&dir.join("blocked.html"), &[]);
    assert!(blocked.page_requests().is_empty(), "the policy stops the image: {blocked:?}");
}
