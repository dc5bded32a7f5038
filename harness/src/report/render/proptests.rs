//! Whatever strings a run, a shard or a receiver puts in a report's text fields, report.md holds
//! no raw HTML, image or foreign link, and report.html no `<img>`, `<script>` or `<a>` but
//! hookbench's own: arbitrary strings and strings of Markdown's and HTML's punctuation. And the
//! terminal tables print no control character of theirs.

use proptest::prelude::*;
use pulldown_cmark::{Event, Options, Parser, Tag};

use super::{Report, render_html, render_markdown};

fn latency() -> serde_json::Value {
    serde_json::json!({"p50":1000,"p90":2000,"p99":3000,"p999":4000,"max":5000,"count":10})
}

/// A bench's report with `s[i]` in its text fields (one sqlite/naive cell with a witness, so the
/// grid links to it).
fn bench(s: &[String]) -> Report {
    let row = serde_json::json!({"backend":"sqlite","design":"naive","deliveries":10,"status_2xx":10,
        "status_4xx":0,"status_5xx":0,"timeouts":0,"retries":0,"dup_events":1,"extra_applies":1,"lost":0,
        "stale_writes":0,"stale_accounts":0,"ledger":700,"expected":600,"latency_us":latency(),
        "latency_actual_us":latency(),"throughput_per_s":100.0,"wall_s":1.0,"connect_errors":0,"gave_up":0,
        "ledger_rows":700,"dead_letters":0,"model":null,
        "verdict":{"exactly_once":false,"latest_state":true,"failing":["duplicate"],"summary":s[0]}});
    let json = serde_json::json!({"kind":"bench","run_id":s[1],"started_at":s[2],"git_sha":s[3],
        "parameters":{"seed":1,"events":10,"workers":1,"concurrency":2,"rate":null,"work_delay":s[4],
            "timeout":s[5],"retry":{"base":"10ms","cap":"1s","max_attempts":10},"isolation":s[6],
            "inbox_workers":2,"p_duplicate":0.03,"p_ack_lost":0.02,"p_concurrent":0.01,"p_shuffle":0.1},
        "versions":{"hookbench":s[7],"postgres":s[8],"sqlite":s[9],"postgres_origin":s[10]},
        "machine":{"cpu":s[11],"cores":2,"memory_bytes":null,"os":s[12],"arch":s[13]},
        "thresholds":[{"threshold":s[14],"rows":1,"breached":[[s[15],1.0]]}],
        "rows":[row],
        "skipped":[{"backend":"postgres","design":"atomic","reason":s[16]}],
        "broken":[],
        "experiments":{"errors":[s[17]],
            "retention":[{"backend":"sqlite","events":10,"visits":12,"purges":2,"keys_purged":12,"peak_keys":12,
                "keys_left":0,"wall_s":0.1,"rows":[{"schedule":s[18],"ttl":s[19],"duplicate_applies":3,"model":3}]}]},
        "witnesses":[{"cell":"sqlite/naive","witnesses":[{"class":s[20],"id":s[21],"problem":s[22],
            "attempts":[{"cell":"sqlite/naive","event":s[23],"kind":"credit","group":1,"copy":0,"attempt":1,
                "planned_ms":1.0,"sent_ms":1.0,"answered_ms":2.0,"worker":0,"connection":1,"status":200,
                "outcome":"ok","detail":s[24]}]}]}]});
    serde_json::from_value(json).expect("a bench's report")
}

/// An audit's report with `s[i]` in its text fields.
fn audit(s: &[String]) -> Report {
    let json = serde_json::json!({"kind":"audit","run_id":s[0],"started_at":s[1],"git_sha":s[2],
        "versions":{"hookbench":s[3],"postgres":null,"sqlite":null,"postgres_origin":null},
        "machine":{"cpu":s[4],"cores":2,"memory_bytes":null,"os":s[5],"arch":s[6]},
        "thresholds":[{"threshold":s[7],"rows":1,"breached":[[s[8],1.0]]}],
        "audit":{"url":s[9],"signing":s[10],"provider":null,"payload":s[11],"observers":[s[12]],
            "id_prefix":s[13],"account_base":0,
            "parameters":{"seed":1,"events":10,"accounts":5,"p_credit":1.0,"rate":10.0,"concurrency":2,
                "timeout":s[14],"retry":{"base":"10ms","cap":"1s","max_attempts":3},"p_duplicate":0.0,
                "p_ack_lost":0.0,"p_concurrent":0.0,"p_shuffle":0.0},
            "checks":[{"check":"sequential-duplicate","status":"FAIL","evidence":s[15],"witnesses":[{"id":s[16],
                "problem":s[17],"observed":s[18],
                "attempts":[{"at_ms":1.0,"outcome":s[19],"connection":s[20],"note":s[21]}]}]}],
            "wall_s":1.0,"stopped":s[22]}});
    serde_json::from_value(json).expect("an audit's report")
}

/// The links hookbench writes in these reports: the bench's grid to its cell's witnesses, the
/// audit's grid to its failing check's.
const OWN_LINKS: [&str; 2] = ["#witnesses-in-sqlitenaive", "#sequential-duplicate-witnesses"];

/// What in report.md would render as markup hookbench did not write.
fn markup_in_markdown(md: &str) -> Vec<String> {
    Parser::new_ext(md, Options::ENABLE_TABLES)
        .filter_map(|e| match e {
            Event::Html(h) | Event::InlineHtml(h) => Some(format!("HTML {h}")),
            Event::Start(Tag::Image { dest_url, .. }) => Some(format!("image {dest_url}")),
            Event::Start(Tag::Link { dest_url, .. }) if !OWN_LINKS.contains(&dest_url.as_ref()) => {
                Some(format!("link {dest_url}"))
            }
            _ => None,
        })
        .collect()
}

/// What in report.html is an element the data could have made: an image, a script, or a link
/// other than `own` (how many of it hookbench writes).
fn markup_in_html(html: &str, own: (&str, usize)) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut found: Vec<String> =
        ["<img", "<script", "<iframe", "<object", "<embed", "<base", "<link", "<form", "<image"]
            .into_iter()
            .filter(|tag| lower.contains(tag))
            .map(str::to_string)
            .collect();
    let links = lower.matches("<a ").count() + lower.matches("<a>").count();
    if links != own.1 || html.matches(own.0).count() != own.1 {
        found.push(format!("{links} links, {} of them hookbench's", html.matches(own.0).count()));
    }
    found
}

/// A string of Markdown's and HTML's punctuation and words that make links and tags, or any
/// string at all.
fn field() -> impl Strategy<Value = String> {
    let tokens = prop::sample::select(vec![
        "[",
        "]",
        "(",
        ")",
        "<",
        ">",
        "!",
        "`",
        "``",
        "|",
        "\\",
        "&",
        "#",
        "*",
        "_",
        "~",
        ":",
        "/",
        "\n",
        "\r",
        " ",
        "\"",
        "'",
        "=",
        "-",
        "a",
        "img",
        "src",
        "href",
        "script",
        "javascript:",
        "http://e.test/x",
        "www.e.test",
        "&lt;",
        "&#60;",
        "[r]:",
        "<!--",
        "-->",
        "1.",
        "</td>",
    ]);
    prop_oneof![
        4 => prop::collection::vec(tokens, 0..24).prop_map(|t| t.concat()),
        2 => any::<String>(),
        1 => Just(String::new()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_bench_reports_fields_never_become_markup(s in prop::collection::vec(field(), 25)) {
        let report = bench(&s);
        let md = render_markdown(&report);
        prop_assert_eq!(markup_in_markdown(&md), Vec::<String>::new(), "{}", md);
        let html = render_html(&report);
        let own = ("<a href=\"#witnesses-in-sqlitenaive\">witnesses</a>", 1);
        prop_assert_eq!(markup_in_html(&html, own), Vec::<String>::new(), "{}", html);
    }

    #[test]
    fn an_audits_fields_never_become_markup(s in prop::collection::vec(field(), 23)) {
        let report = audit(&s);
        let md = render_markdown(&report);
        prop_assert_eq!(markup_in_markdown(&md), Vec::<String>::new(), "{}", md);
        let html = render_html(&report);
        let own = ("<a href=\"#sequential-duplicate-witnesses\">witnesses</a>", 1);
        prop_assert_eq!(markup_in_html(&html, own), Vec::<String>::new(), "{}", html);
    }
}

/// The control characters in `table` but the newlines that end its lines.
fn controls(table: &str) -> Vec<char> {
    table.chars().filter(|c| c.is_control() && *c != '\n').collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_terminal_tables_print_no_control_character_from_a_report(
        s in prop::collection::vec(any::<String>().prop_map(|s| format!("\u{1b}]0;t\u{7}\r{s}")), 25),
    ) {
        for report in [bench(&s), audit(&s)] {
            let table = report.table();
            prop_assert_eq!(controls(&table), Vec::<char>::new(), "{:?}", table);
            prop_assert!(table.contains("\\u{1b}]0;t\\u{7}\\u{d}"), "{:?}", table);
        }
    }
}
