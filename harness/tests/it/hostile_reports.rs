//! Reports render data, never markup: a report.json whose every text field carries Markdown and
//! HTML (links to `javascript:`, remote images, raw tags, a backtick that closes a code span, a
//! pipe that ends a table cell, a newline that starts a block), rendered by the real
//! `hookbench report render`, and an audit of a receiver whose URL carries the same, written by a
//! real run; each page checked for links, images and tags hookbench did not write, for its
//! Content-Security-Policy, and opened in headless Chromium, which must fetch nothing. Then the
//! files around a report: report.json read to a limit (a FIFO, a device and a huge sparse file
//! refused before they are read), and no file of a report written through a symlink planted
//! where it goes.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use clap::Parser;
use hookbench::cli::{Cli, Exit, run};
use hookbench::report::Report;
use pulldown_cmark::{Event, Options, Parser as Markdown, Tag};
use testkit::browser;

use super::stub::{Reply, Stub, free_addr};

/// Markdown and HTML that would fetch or run something if a report passed it through, each
/// fetching from a host of its own so a test names what got through.
const HOSTILE: [&str; 8] = [
    "[click](javascript:alert(1))",
    "![t](http://link-image.evil.test/track.png)",
    "<img src=http://raw-html.evil.test/i.png>",
    "<http://autolink.evil.test/x>",
    "` <img src=http://backtick.evil.test/t.png> `",
    "a | <img src=http://pipe.evil.test/p.png> | b",
    "x\n\n[r]: http://reference.evil.test/r.png\n\n![r]",
    "y\n<script>fetch('http://script.evil.test/s')</script>",
];

/// All of [`HOSTILE`] in one string, with a number to tell the fields apart.
fn hostile(n: usize) -> String {
    format!("f{n} {}", HOSTILE.join(" "))
}

/// The Content-Security-Policy every page carries.
const CSP: &str = "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\">";

fn hookbench(args: &[&str]) -> Result<String, (u8, String)> {
    let cli = Cli::try_parse_from(std::iter::once("hookbench").chain(args.iter().copied()))
        .map_err(|e| (2, e.to_string()))?;
    let mut out = Vec::new();
    match run(cli, &mut out) {
        Ok(()) => Ok(String::from_utf8_lossy(&out).into_owned()),
        Err(e) => {
            // As `cli::main` ends: an error that carries no status is one of 2.
            Err(e.downcast_ref::<Exit>().map_or((2, format!("{e:#}")), |x| (x.code(), x.message.clone())))
        }
    }
}

fn latency() -> serde_json::Value {
    serde_json::json!({"p50":1000,"p90":2000,"p99":3000,"p999":4000,"max":5000,"count":10})
}

/// A bench's report.json with a hostile string in every text field a run, a shard or a receiver
/// can fill.
fn hostile_bench() -> serde_json::Value {
    let row = serde_json::json!({"backend":"sqlite","design":"naive","deliveries":10,"status_2xx":10,
        "status_4xx":0,"status_5xx":0,"timeouts":0,"retries":0,"dup_events":1,"extra_applies":1,"lost":0,
        "stale_writes":0,"stale_accounts":0,"ledger":700,"expected":600,"latency_us":latency(),
        "latency_actual_us":latency(),"throughput_per_s":100.0,"wall_s":1.0,"connect_errors":0,"gave_up":0,
        "ledger_rows":700,"dead_letters":0,"model":null,
        "verdict":{"exactly_once":false,"latest_state":true,"failing":["duplicate"],"summary":hostile(26)}});
    serde_json::json!({"kind":"bench","run_id":hostile(1),"started_at":hostile(2),"git_sha":hostile(3),
        "parameters":{"seed":1,"events":10,"workers":1,"concurrency":2,"rate":null,"work_delay":hostile(4),
            "timeout":hostile(5),"retry":{"base":"10ms","cap":"1s","max_attempts":10},"isolation":hostile(6),
            "inbox_workers":2,"p_duplicate":0.03,"p_ack_lost":0.02,"p_concurrent":0.01,"p_shuffle":0.1},
        "versions":{"hookbench":hostile(7),"postgres":hostile(8),"sqlite":hostile(9),"postgres_origin":hostile(10)},
        "machine":{"cpu":hostile(11),"cores":2,"memory_bytes":null,"os":hostile(12),"arch":hostile(13)},
        "thresholds":[{"threshold":hostile(14),"rows":1,"breached":[[hostile(15),1.0]]}],
        "rows":[row],
        "skipped":[{"backend":"postgres","design":"atomic","reason":hostile(16)}],
        "broken":[{"backend":"postgres","design":"naive","reason":hostile(17)}],
        "experiments":{"errors":[hostile(18)],
            "retention":[{"backend":"sqlite","events":10,"visits":12,"purges":2,"keys_purged":12,"peak_keys":12,
                "keys_left":0,"wall_s":0.1,
                "rows":[{"schedule":hostile(19),"ttl":hostile(20),"duplicate_applies":3,"model":3}]}]},
        "witnesses":[{"cell":"sqlite/naive","witnesses":[{"class":hostile(21),"id":hostile(22),
            "problem":hostile(23),"attempts":[{"cell":"sqlite/naive","event":hostile(24),"kind":"credit",
                "group":1,"copy":0,"attempt":1,"planned_ms":1.0,"sent_ms":1.0,"answered_ms":2.0,"worker":0,
                "connection":1,"status":200,"outcome":"ok","detail":hostile(25)}]}]}]})
}

/// An audit's report.json with a hostile string in every text field (its URL, signing, payload,
/// the receiver's answers quoted in the evidence and the witnesses).
fn hostile_audit() -> serde_json::Value {
    let check = |check: &str, n: usize| {
        serde_json::json!({"check":check,"status":"FAIL","evidence":hostile(n),"witnesses":[{"id":hostile(n + 1),
            "problem":hostile(n + 2),"observed":hostile(n + 3),
            "attempts":[{"at_ms":1.0,"outcome":hostile(n + 4),"connection":hostile(n + 5),"note":hostile(n + 6)}]}]})
    };
    serde_json::json!({"kind":"audit","run_id":hostile(1),"started_at":hostile(2),"git_sha":hostile(3),
        "versions":{"hookbench":hostile(4),"postgres":null,"sqlite":null,"postgres_origin":null},
        "machine":{"cpu":hostile(5),"cores":2,"memory_bytes":null,"os":hostile(6),"arch":hostile(7)},
        "thresholds":[{"threshold":hostile(8),"rows":1,"breached":[[hostile(9),1.0]]}],
        "audit":{"url":format!("http://127.0.0.1:1/webhooks?{}", hostile(10)),"signing":hostile(11),
            "provider":null,"payload":hostile(12),"observers":[hostile(13)],"id_prefix":hostile(14),
            "account_base":0,
            "parameters":{"seed":1,"events":10,"accounts":5,"p_credit":1.0,"rate":10.0,"concurrency":2,
                "timeout":hostile(15),"retry":{"base":"10ms","cap":"1s","max_attempts":3},"p_duplicate":0.0,
                "p_ack_lost":0.0,"p_concurrent":0.0,"p_shuffle":0.0},
            "checks":[check("sequential-duplicate", 20), check("lost-ack", 30)],
            "wall_s":1.0,"stopped":hostile(40)}})
}

/// What in `html` a report's data could have made: every image, script, iframe, object, embed,
/// form, base or link element, and every link but hookbench's own in-page anchors.
fn markup_from_data(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut found = Vec::new();
    for tag in ["<img", "<script", "<iframe", "<object", "<embed", "<form", "<base", "<link", "<image"] {
        found.extend(lower.match_indices(tag).map(|(i, _)| html[i..(i + 80).min(html.len())].to_string()));
    }
    for (i, _) in lower.match_indices("<a ") {
        let tag = &html[i..];
        if !tag.starts_with("<a href=\"#") {
            found.push(tag[..80.min(tag.len())].to_string());
        }
    }
    found.extend(lower.match_indices("javascript:").filter_map(|(i, _)| {
        // As text it is written out; only inside a tag could it run.
        let before = &html[..i];
        (before.rfind('<') > before.rfind('>')).then(|| html[i.saturating_sub(40)..i + 11].to_string())
    }));
    found
}

/// What in `md` would render as something hookbench did not write: raw HTML, an image, a link
/// anywhere but the page itself.
fn markup_in_markdown(md: &str) -> Vec<String> {
    Markdown::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH)
        .filter_map(|e| match e {
            Event::Html(h) | Event::InlineHtml(h) => Some(format!("HTML {h}")),
            Event::Start(Tag::Image { dest_url, .. }) => Some(format!("image {dest_url}")),
            Event::Start(Tag::Link { dest_url, .. }) if !dest_url.starts_with('#') => {
                Some(format!("link {dest_url}"))
            }
            _ => None,
        })
        .collect()
}

/// `report render` of `report` in a fresh directory: the directory, its report.md and report.html.
fn render(report: &serde_json::Value) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("report.json"), report.to_string()).expect("write report.json");
    let out = hookbench(&["report", "render", dir.path().to_str().expect("utf-8")]).expect("render");
    assert!(out.contains("report.html"), "{out}");
    let md = std::fs::read_to_string(dir.path().join("report.md")).expect("report.md");
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    // report.json is read, not rewritten (pretty, one near its limit would grow past it).
    let json = std::fs::read_to_string(dir.path().join("report.json")).expect("report.json");
    assert_eq!(json, report.to_string(), "report render left report.json as it was");
    (dir, md, html)
}

/// `html` made nothing of the data but text, carries the CSP, and shows the data as text.
fn assert_rendered_as_text(md: &str, html: &str) {
    assert_eq!(markup_from_data(html), Vec::<String>::new(), "{html}");
    assert_eq!(markup_in_markdown(md), Vec::<String>::new(), "{md}");
    assert_eq!(html.matches(CSP).count(), 1, "the CSP, once: {html}");
    let head = &html[..html.find("</head>").expect("a head")];
    assert!(head.find(CSP) < head.find("<title>"), "the CSP before anything it covers");
    // The data is there, as text: shown, not dropped.
    for shown in ["[click](javascript:alert(1))", "&lt;img src=http://raw-html.evil.test/i.png&gt;"] {
        assert!(html.contains(shown), "{shown} shown as text");
    }
}

/// Chromium opens `page` and fetches nothing.
fn assert_fetches_nothing(page: &Path) {
    let rendered = browser::render(page, &["h1"]);
    assert!(rendered.page_requests().is_empty() && rendered.resources.is_empty(), "{rendered:?}");
    assert_eq!(rendered.boxes("h1").len(), 1, "the page was laid out: {rendered:?}");
}

#[test]
fn a_bench_report_with_markup_in_every_field_renders_it_as_text_and_fetches_nothing() {
    let (dir, md, html) = render(&hostile_bench());
    assert_rendered_as_text(&md, &html);
    // hookbench's own link is still there: the verdict grid's to the cell's witnesses.
    assert!(html.contains("<a href=\"#witnesses-in-sqlitenaive\">witnesses</a>"), "{html}");
    assert!(md.contains("([witnesses](#witnesses-in-sqlitenaive))"), "{md}");
    assert_fetches_nothing(&dir.path().join("report.html"));
}

#[test]
fn an_audit_report_with_markup_in_every_field_renders_it_as_text_and_fetches_nothing() {
    let (dir, md, html) = render(&hostile_audit());
    assert_rendered_as_text(&md, &html);
    // The receiver's URL is a code span in report.md, its backticks and all.
    let url = format!("http://127.0.0.1:1/webhooks?{}", hostile(10)).replace('\n', " ");
    let code: Vec<String> = Markdown::new(&md)
        .filter_map(|e| match e {
            Event::Code(c) => Some(c.to_string()),
            _ => None,
        })
        .collect();
    assert!(code.contains(&url), "{code:?}");
    assert_fetches_nothing(&dir.path().join("report.html"));
}

#[test]
fn the_index_of_hostile_runs_links_only_to_their_own_reports() {
    let reports = tempfile::tempdir().expect("tempdir");
    for (name, report) in [("javascript:alert(1)", hostile_bench()), ("run two", hostile_audit())] {
        let dir = reports.path().join(name);
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("report.json"), report.to_string()).expect("write");
    }
    let out = hookbench(&["report", "index", reports.path().to_str().expect("utf-8")]).expect("index");
    assert!(out.contains("indexed 2 runs"), "{out}");
    let html = std::fs::read_to_string(reports.path().join("index.html")).expect("index.html");
    let md = std::fs::read_to_string(reports.path().join("index.md")).expect("index.md");
    assert!(html.contains(CSP), "{html}");
    assert!(!html.to_ascii_lowercase().contains("<img") && !html.contains("<script"), "{html}");
    let hrefs: Vec<&str> = html.split("<a href=\"").skip(1).filter_map(|s| s.split('"').next()).collect();
    // Each run's name percent-encoded: its colon cannot make a scheme of it, nor a space end it.
    assert_eq!(hrefs, ["run%20two/report.html", "javascript%3Aalert%281%29/report.html"], "{html}");
    let links: Vec<String> = Markdown::new_ext(&md, Options::ENABLE_TABLES)
        .filter_map(|e| match e {
            Event::Start(Tag::Link { dest_url, .. }) => Some(dest_url.to_string()),
            Event::Start(Tag::Image { dest_url, .. }) => Some(format!("image {dest_url}")),
            Event::Html(h) | Event::InlineHtml(h) => Some(format!("HTML {h}")),
            _ => None,
        })
        .collect();
    assert_eq!(links, ["run%20two/report.md", "javascript%3Aalert%281%29/report.md"], "{md}");
    assert_fetches_nothing(&reports.path().join("index.html"));
}

#[test]
fn an_audit_of_a_receiver_whose_url_carries_markup_writes_a_report_that_shows_it_as_text() {
    let stub = Stub::start(|_| Reply::Status(500));
    // What a URL may carry (http's URI grammar refuses `<`, `"` and spaces): a backtick that ends
    // the code span report.md puts it in, then an image and a link.
    let url = format!(
        "http://{}/webhooks?a=`![i](http://url.evil.test/i.png)`&b=[x](javascript:alert(1))",
        stub.addr
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("audit");
    let (sink, out_s) = (free_addr(), out.to_str().expect("utf-8").to_string());
    let args =
        ["audit", &url, "--no-progress", "--out", &out_s, "--secret", testkit::SECRET, "--sink", &sink];
    let quick =
        ["--checks", "sequential-duplicate", "--events", "20", "--quiet", "300ms", "--max-attempts", "2"];
    let ended = hookbench(&[&args[..], &quick[..]].concat());
    assert!(matches!(ended, Err((1, _))), "the audit fails its check: {ended:?}");
    let report = Report::read_json(&out.join("report.json")).expect("the run's report");
    assert_eq!(report.audit_section().expect("an audit").url, url);
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert_eq!(markup_from_data(&html), Vec::<String>::new(), "{html}");
    assert_eq!(markup_in_markdown(&md), Vec::<String>::new(), "{md}");
    assert!(html.contains(CSP) && html.contains("[x](javascript:alert(1))"), "{html}");
    assert_fetches_nothing(&out.join("report.html"));
}

/// `report render DIR` as the binary runs it, measured: its exit code, what it said, its peak
/// resident memory (MiB).
fn render_measured(dir: &Path, extra: &[&str]) -> (Option<i32>, String, f64) {
    let dir = dir.to_str().expect("utf-8");
    let args = [&["report", "render", dir][..], extra].concat();
    let m = testkit::measure::peak_rss(env!("CARGO_BIN_EXE_hookbench"), &args, Duration::from_secs(30));
    (m.code, m.stderr(), m.peak_rss_mib())
}

#[test]
fn a_report_json_past_its_limit_a_fifo_or_a_device_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("report.json");
    // Past --max-report-bytes: refused, naming the file, the limit and the flag.
    std::fs::write(&json, hostile_bench().to_string()).expect("write");
    let (code, said, _) = render_measured(dir.path(), &["--max-report-bytes", "1000"]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains(&format!("{}: larger than 1000 bytes, the limit for a report.json", json.display()))
            && said.contains("--max-report-bytes"),
        "{said}"
    );
    // A sparse file of 1 GiB: refused by its size, without reading it.
    std::fs::remove_file(&json).expect("rm");
    std::fs::File::create(&json).and_then(|f| f.set_len(1 << 30)).expect("a sparse file");
    let (code, said, peak) = render_measured(dir.path(), &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("larger than 16777216 bytes, the limit for a report.json"), "{said}");
    assert!(peak < 64.0, "{peak:.0} MiB for a file refused by its size");
    // A FIFO no one writes to, and a device: refused, not waited on or read.
    std::fs::remove_file(&json).expect("rm");
    nix::unistd::mkfifo(&json, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let (code, said, _) = render_measured(dir.path(), &[]);
    assert_eq!(code, Some(2), "a FIFO is refused, not waited on: {said}");
    assert!(said.contains("not a regular file"), "{said}");
    std::fs::remove_file(&json).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", &json).expect("symlink");
    let (code, said, _) = render_measured(dir.path(), &[]);
    assert!(code == Some(2) && said.contains("not a regular file"), "{code:?} {said}");
}

#[test]
fn a_symlink_planted_where_a_report_file_goes_is_never_written_through() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    std::fs::create_dir(&run).expect("mkdir");
    std::fs::write(run.join("report.json"), hostile_bench().to_string()).expect("write");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").expect("write");
    for file in ["report.md", "report.html"] {
        let link = run.join(file);
        std::os::unix::fs::symlink(&victim, &link).expect("symlink");
        let (code, said) =
            hookbench(&["report", "render", run.to_str().expect("utf-8")]).expect_err("refused");
        assert_eq!(code, 2, "{said}");
        assert!(said.contains(&format!("{}: a symbolic link", link.display())), "{said}");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep", "{file} written through");
        std::fs::remove_file(&link).expect("rm");
    }
    // report.json as a run writes it.
    let report = Report::read_json(&run.join("report.json")).expect("reads");
    std::fs::rename(run.join("report.json"), dir.path().join("kept.json")).expect("mv");
    std::os::unix::fs::symlink(&victim, run.join("report.json")).expect("symlink");
    assert!(report.write_all(&run).is_err());
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep", "report.json written through");
    // The index.
    std::fs::remove_file(run.join("report.json")).expect("rm");
    std::fs::rename(dir.path().join("kept.json"), run.join("report.json")).expect("mv");
    for file in ["index.md", "index.html"] {
        let link = dir.path().join(file);
        std::os::unix::fs::symlink(&victim, &link).expect("symlink");
        let (code, said) =
            hookbench(&["report", "index", dir.path().to_str().expect("utf-8")]).expect_err("refused");
        assert_eq!(code, 2, "{said}");
        assert!(said.contains(&format!("{}: a symbolic link", link.display())), "{said}");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep", "{file} written through");
        std::fs::remove_file(&link).expect("rm");
    }
}

#[test]
fn an_index_that_cannot_be_written_ends_2_the_run_could_not_be_done_not_1_a_failed_run() {
    // `report index` into a directory under a regular file: an I/O error no command classifies,
    // which `main` ends with 2 (it ended with 1 before, the status of a run that went through and
    // failed).
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").expect("write");
    let under = file.join("reports");
    let out = Command::new(env!("CARGO_BIN_EXE_hookbench"))
        .args(["report", "index"])
        .arg(&under)
        .output()
        .expect("runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.starts_with("hookbench: error: indexing ") && said.contains("Not a directory"), "{said}");
}

#[test]
fn report_compare_prints_text_from_the_reports_with_its_control_characters_escaped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut a = hostile_bench();
    a["experiments"]["retention"][0]["rows"][0]["schedule"] = "evil \u{1b}]0;owned\u{7}\r".into();
    let mut b = a.clone();
    b["experiments"]["retention"][0]["rows"][0]["duplicate_applies"] = 4.into();
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&pa, a.to_string()).expect("write");
    std::fs::write(&pb, b.to_string()).expect("write");
    let exe = env!("CARGO_BIN_EXE_hookbench");
    let out = Command::new(exe).args(["report", "compare"]).arg(&pa).arg(&pb).output().expect("runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("evil \\u{1b}]0;owned\\u{7}\\u{d}"), "{said}");
    assert!(!said.contains('\u{1b}') && !said.contains('\r'), "{said:?}");
}
