//! Figures an older report did not count: a counter its schema had not yet told apart reads 0 in
//! report.json, and a renderer shows it as `–` with a note saying where it was counted instead,
//! so an old report is never read as "no lost acks" or "no resets".

use crate::report::model::{APART_SINCE, Header};

/// What a table shows for counter `figure` of value `n`: the value, or `–` when the report did
/// not count it apart.
pub fn cell(header: &Header, figure: &str, n: u64) -> String {
    if header.counts(figure) { n.to_string() } else { NOT_COUNTED.to_string() }
}

/// What a table shows for a figure a report has only since schema `since`.
pub fn cell_since(header: &Header, since: u32, n: u64) -> String {
    if header.schema >= since { n.to_string() } else { NOT_COUNTED.to_string() }
}

/// An answer time (microseconds) as a table shows it, in milliseconds: `–` in a report before
/// schema 2, whose times from the actual send counted attempts no answer came to.
pub fn answer_ms(header: &Header, us: u64) -> String {
    if header.schema >= 2 { format!("{:.1}", us as f64 / 1000.0) } else { NOT_COUNTED.to_string() }
}

/// A figure the report did not count.
const NOT_COUNTED: &str = "–";

/// The note under a table of an older report's counters, when some were not counted apart.
pub fn note(header: &Header) -> Option<String> {
    let inside: Vec<String> = APART_SINCE
        .iter()
        .filter(|(figure, _, _)| !header.counts(figure))
        .map(|(figure, _, within)| {
            format!("{} were counted in {}", figure.replace('_', " "), within.replace('_', " "))
        })
        .chain(
            (header.schema < 2)
                .then(|| "the times from the actual send counted attempts no answer came to".into()),
        )
        .collect();
    (!inside.is_empty()).then(|| {
        format!(
            "– not counted apart: this report is of schema {} (an older hookbench), where {}.",
            header.schema,
            inside.join(", and ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(schema: u32) -> Header {
        Header { schema, ..Header::new("r".into()) }
    }

    #[test]
    fn an_older_report_shows_a_counter_it_did_not_count_as_a_dash_and_says_why() {
        let one = header(1);
        assert_eq!((cell(&one, "acks_lost", 0), cell(&one, "resets", 0)), ("–".into(), "–".into()));
        assert_eq!(cell(&one, "timeouts", 22), "22");
        assert_eq!((answer_ms(&one, 1500), answer_ms(&header(2), 1500)), ("–".into(), "1.5".into()));
        let said = note(&one).expect("a note");
        assert!(said.contains("schema 1") && said.contains("acks lost were counted in timeouts"), "{said}");
        assert!(said.contains("resets were counted in connect errors"), "{said}");
        assert!(said.contains("no answer came to"), "{said}");
        let two = header(2);
        assert_eq!((cell(&two, "acks_lost", 3), cell(&two, "resets", 0)), ("3".into(), "–".into()));
        assert!(!note(&two).expect("a note").contains("acks lost"));
        assert_eq!((cell_since(&two, 3, 0), cell_since(&header(3), 3, 4)), ("–".into(), "4".into()));
    }

    #[test]
    fn a_current_report_shows_every_counter_and_no_note() {
        let now = Header::new("r".into());
        assert_eq!((cell(&now, "acks_lost", 0), cell(&now, "resets", 0)), ("0".into(), "0".into()));
        assert_eq!(note(&now), None);
    }
}
