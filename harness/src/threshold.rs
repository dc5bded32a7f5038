//! Thresholds: `--fail-on EXPR` turns a figure of the run into an exit status CI can act on, as k6's
//! thresholds do.
//!
//! An expression is an optional scope, a figure, a comparison and a number:
//!
//! ```text
//! expr   = [scope ":"] figure op number
//! scope  = name *2("/" name)        a backend, a design, an isolation level, or several
//!                                   ("postgres/atomic", "postgres/serializable/atomic"), or an
//!                                   audit check
//! figure = name                     a figure of report.json's rows (dup_events, lost, p99_ms, ...)
//! op     = ">" | ">=" | "<" | "<=" | "==" | "!="
//! ```
//!
//! The grammar is parsed with winnow, so a bad expression is refused before the run with a caret
//! under the character where it went wrong. A threshold is *breached* by every row in its scope
//! whose figure makes the comparison true.

/// The report's type: a threshold's outcome as a report's header records it.
pub use crate::report::model::Outcome;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use winnow::ascii::{float, multispace0};
use winnow::combinator::{alt, cut_err, eof, opt, preceded, repeat, terminated};
use winnow::error::{ContextError, StrContext, StrContextValue};
use winnow::prelude::*;
use winnow::stream::LocatingSlice;
use winnow::token::take_while;

type Input<'s> = LocatingSlice<&'s str>;

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Op {
    /// `>`
    #[serde(rename = ">")]
    Gt,
    /// `>=`
    #[serde(rename = ">=")]
    Ge,
    /// `<`
    #[serde(rename = "<")]
    Lt,
    /// `<=`
    #[serde(rename = "<=")]
    Le,
    /// `==`
    #[serde(rename = "==")]
    Eq,
    /// `!=`
    #[serde(rename = "!=")]
    Ne,
}

impl Op {
    fn holds(self, left: f64, right: f64) -> bool {
        match self {
            Self::Gt => left > right,
            Self::Ge => left >= right,
            Self::Lt => left < right,
            Self::Le => left <= right,
            Self::Eq => left == right,
            Self::Ne => left != right,
        }
    }
}

/// One parsed `--fail-on` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression as given.
    pub text: String,
    /// The scope's names (none: every row).
    pub scope: Vec<String>,
    /// The figure.
    pub figure: String,
    /// The comparison.
    pub op: Op,
    /// The number compared with.
    pub value: f64,
    scope_span: Range<usize>,
    figure_span: Range<usize>,
    /// Where it was read from (`thresholds.txt, line 3`), when from a file.
    origin: Option<(String, usize)>,
}

/// An expression that cannot be used: what is wrong and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--fail-on `{text}`{origin}: {problem}\n  {text}\n  {caret}")]
pub struct ThresholdError {
    text: String,
    origin: String,
    problem: String,
    caret: String,
}

impl ThresholdError {
    fn at(text: &str, span: Range<usize>, problem: String) -> Self {
        let start = text[..span.start.min(text.len())].chars().count();
        let width = text.get(span.clone()).map_or(1, |s| s.chars().count().max(1));
        Self {
            text: text.to_string(),
            origin: String::new(),
            problem,
            caret: " ".repeat(start) + &"^".repeat(width),
        }
    }

    /// The same error, saying which file and line the expression came from.
    pub fn in_file(mut self, path: &str, line: usize) -> Self {
        self.origin = format!(" ({path}, line {line})");
        self
    }
}

fn name<'s>(input: &mut Input<'s>) -> ModalResult<&'s str> {
    take_while(1.., |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-').parse_next(input)
}

fn scope<'s>(input: &mut Input<'s>) -> ModalResult<(Vec<&'s str>, Range<usize>)> {
    let more = repeat(0..=2, preceded('/', cut_err(name.context(expected("a name after `/`")))));
    (name, more)
        .map(|(first, rest): (&str, Vec<&str>)| std::iter::once(first).chain(rest).collect())
        .with_span()
        .parse_next(input)
}

fn expected(what: &'static str) -> StrContext {
    StrContext::Expected(StrContextValue::Description(what))
}

fn op(input: &mut Input<'_>) -> ModalResult<Op> {
    alt((
        ">=".value(Op::Ge),
        "<=".value(Op::Le),
        "==".value(Op::Eq),
        "!=".value(Op::Ne),
        ">".value(Op::Gt),
        "<".value(Op::Lt),
    ))
    .parse_next(input)
}

type Parts<'s> = (Option<(Vec<&'s str>, Range<usize>)>, (&'s str, Range<usize>), Op, f64);

fn expression<'s>(input: &mut Input<'s>) -> ModalResult<Parts<'s>> {
    let _ = multispace0.parse_next(input)?;
    let scope = opt(terminated(scope, (multispace0, ':', multispace0))).parse_next(input)?;
    let figure = cut_err(name.context(expected("a figure such as dup_events or p99_ms")))
        .with_span()
        .parse_next(input)?;
    let _ = multispace0.parse_next(input)?;
    let op = cut_err(op.context(expected("a comparison: >, >=, <, <=, == or !="))).parse_next(input)?;
    let _ = multispace0.parse_next(input)?;
    let value = cut_err(float.context(expected("a number"))).parse_next(input)?;
    let _ = multispace0.parse_next(input)?;
    cut_err(eof.context(expected("the end of the expression"))).parse_next(input)?;
    Ok((scope, figure, op, value))
}

impl Threshold {
    /// Parses one expression.
    pub fn parse(text: &str) -> Result<Self, ThresholdError> {
        let parsed = expression.parse(LocatingSlice::new(text)).map_err(|e| {
            let at = e.offset();
            let inner: &ContextError = e.inner();
            let problem = inner.to_string().replace('\n', "; ");
            let problem = if problem.is_empty() { "not an expression".to_string() } else { problem };
            ThresholdError::at(text, at..at + 1, problem)
        })?;
        let (scope, (figure, figure_span), op, value) = parsed;
        let (scope, scope_span) = scope.unwrap_or_default();
        Ok(Self {
            text: text.trim().to_string(),
            scope: scope.into_iter().map(str::to_string).collect(),
            figure: figure.to_string(),
            op,
            value,
            scope_span,
            figure_span,
            origin: None,
        })
    }

    /// Refuses a scope or figure that no row of this kind of run can have, naming the known ones.
    pub fn check_names(&self, scopes: &[&str], figures: &[&str]) -> Result<(), ThresholdError> {
        self.unknown_name(scopes, figures).map_err(|e| match &self.origin {
            Some((path, line)) => e.in_file(path, *line),
            None => e,
        })
    }

    fn unknown_name(&self, scopes: &[&str], figures: &[&str]) -> Result<(), ThresholdError> {
        let list = |names: &[&str]| names.join(", ");
        for (i, part) in self.scope.iter().enumerate() {
            if !scopes.contains(&part.as_str()) {
                let start =
                    self.scope_span.start + self.scope.iter().take(i).map(|p| p.len() + 1).sum::<usize>();
                let problem = format!("unknown scope `{part}` (known: {})", list(scopes));
                return Err(ThresholdError::at(&self.text, start..start + part.len(), problem));
            }
        }
        if !figures.contains(&self.figure.as_str()) {
            let problem = format!("unknown figure `{}` (known: {})", self.figure, list(figures));
            return Err(ThresholdError::at(&self.text, self.figure_span.clone(), problem));
        }
        Ok(())
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The largest `--fail-on-file` read (1 MiB): thousands of expressions.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Thresholds from a file's `text` (read by the caller, within [`MAX_FILE_BYTES`]): one
/// expression a line; blank lines and `#` comments skipped; `shown` names the file in errors.
pub fn parse_file(text: &str, shown: &str) -> Result<Vec<Threshold>, ThresholdError> {
    let shown = shown.to_string();
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(n, l)| match Threshold::parse(l) {
            Ok(t) => Ok(Threshold { origin: Some((shown.clone(), n + 1)), ..t }),
            Err(e) => Err(e.in_file(&shown, n + 1)),
        })
        .collect()
}

/// One row a threshold is held against: its labels (a backend and a design, or an audit check)
/// and its figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Subject {
    /// What a breach names it by (`postgres/atomic`, `postgres@serializable/atomic`).
    pub name: String,
    /// The row's names, which a scope must all match (`["postgres", "atomic", "read-committed"]`).
    pub labels: Vec<String>,
    /// Its figures by name.
    pub figures: BTreeMap<String, f64>,
}

/// Holds every threshold against every subject in its scope.
pub fn evaluate(thresholds: &[Threshold], subjects: &[Subject]) -> Vec<Outcome> {
    thresholds
        .iter()
        .map(|t| {
            let in_scope =
                subjects.iter().filter(|s| t.scope.iter().all(|part| s.labels.iter().any(|l| l == part)));
            let mut rows = 0;
            let mut breached = Vec::new();
            for s in in_scope {
                if let Some(&v) = s.figures.get(&t.figure) {
                    rows += 1;
                    if t.op.holds(v, t.value) {
                        breached.push((s.name.clone(), v));
                    }
                }
            }
            Outcome { threshold: t.text.clone(), rows, breached }
        })
        .collect()
}

/// The outcomes as lines for the terminal: each breach with its rows, and each threshold no row
/// was in the scope of.
pub fn render(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for o in outcomes {
        if o.rows == 0 {
            out.push_str(&format!("threshold `{}`: no row in its scope had the figure\n", o.threshold));
        }
        if !o.breached.is_empty() {
            out.push_str(&format!("threshold breached: {}\n", o.threshold));
            for (row, v) in &o.breached {
                out.push_str(&format!("  {row}: {v}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Whatever a --fail-on expression or a --fail-on-file holds, parsing returns, never
        /// panics, and a parsed threshold can be held to a row.
        #[test]
        fn any_expression_parses_or_is_refused(text in "\\PC{0,80}") {
            if let Ok(t) = Threshold::parse(&text) {
                let _ = t.check_names(&["postgres/atomic"], &["lost"]);
                let subject = Subject { name: "postgres/atomic".into(), labels: vec!["postgres".into(), "atomic".into()], figures: BTreeMap::from([("lost".to_string(), 1.0), ("p99_ms".to_string(), f64::NAN)]) };
                let _ = evaluate(&[t], &[subject]);
            }
            let _ = parse_file(&text, "t.txt");
        }

        /// Expression-shaped text: scopes, figures, operators, numbers of every kind.
        #[test]
        fn expression_like_text_never_panics(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "postgres", "/", "atomic", ":", "lost", "p99_ms", ">", "<", ">=", "<=", "=", "==",
                    "!=", "0", "-1", "1e308", "1e-400", "NaN", "inf", "-inf", ".", " ", "\n", "#",
                ]),
                0..12,
            )
        ) {
            let text = parts.concat();
            if let Ok(t) = Threshold::parse(&text) {
                let figures = BTreeMap::from([("lost".to_string(), 0.0), ("p99_ms".to_string(), 1e308)]);
                let _ = evaluate(&[t], &[Subject { name: "postgres".into(), labels: vec!["postgres".into()], figures }]);
            }
            let _ = parse_file(&text, "t.txt");
        }
    }

    #[test]
    fn expressions_parse_with_and_without_a_scope() {
        let t = Threshold::parse("postgres/atomic:lost>0").expect("parses");
        assert_eq!(
            (t.scope.clone(), t.figure.as_str(), t.op, t.value),
            (vec!["postgres".into(), "atomic".into()], "lost", Op::Gt, 0.0)
        );
        let t = Threshold::parse("  p99_ms >= 250.5 ").expect("parses");
        assert_eq!((t.scope.is_empty(), t.figure.as_str(), t.op, t.value), (true, "p99_ms", Op::Ge, 250.5));
        let t = Threshold::parse("atomic : throughput_per_s<1e3").expect("parses");
        assert_eq!((t.scope.clone(), t.op, t.value), (vec!["atomic".into()], Op::Lt, 1000.0));
        let t = Threshold::parse("postgres/serializable/check-in-transaction:dup_events>0").expect("parses");
        assert_eq!(t.scope, ["postgres", "serializable", "check-in-transaction"]);
    }

    #[test]
    fn a_bad_expression_points_at_the_character() {
        let e = Threshold::parse("atomic:dup_events=>0").expect_err("no such comparison").to_string();
        assert!(e.contains("a comparison"), "{e}");
        assert!(e.ends_with("atomic:dup_events=>0\n                   ^"), "{e}");
        let e = Threshold::parse("dup_events>zero").expect_err("not a number").to_string();
        assert!(e.contains("a number") && e.ends_with("           ^"), "{e}");
        let e = Threshold::parse("dup_events>0 and more").expect_err("trailing").to_string();
        assert!(e.contains("the end of the expression"), "{e}");
        let e = Threshold::parse("postgres/:lost>0").expect_err("no name").to_string();
        assert!(e.contains("a name after `/`"), "{e}");
        // A backend, a level and a design at most: a fourth name is not a scope.
        let e = Threshold::parse("postgres/serializable/atomic/x:lost>0").expect_err("four").to_string();
        assert!(e.contains("expected a comparison"), "{e}");
    }

    #[test]
    fn unknown_names_are_refused_with_the_known_ones() {
        let t = Threshold::parse("postgres/atomc:lost>0").expect("parses");
        let e = t.check_names(&["postgres", "atomic"], &["lost"]).expect_err("typo").to_string();
        assert!(e.contains("unknown scope `atomc`") && e.ends_with("           ^^^^^"), "{e}");
        let t = Threshold::parse("dup_event>0").expect("parses");
        let e = t.check_names(&[], &["dup_events"]).expect_err("typo").to_string();
        assert!(
            e.contains("unknown figure `dup_event` (known: dup_events)") && e.ends_with("^^^^^^^^^"),
            "{e}"
        );
    }

    #[test]
    fn a_threshold_is_breached_by_the_rows_in_its_scope() {
        let row = |b: &str, d: &str, dup: f64| Subject {
            name: format!("{b}/{d}"),
            labels: vec![b.into(), d.into()],
            figures: BTreeMap::from([("dup_events".to_string(), dup)]),
        };
        let rows =
            [row("postgres", "naive", 354.0), row("sqlite", "naive", 354.0), row("postgres", "atomic", 0.0)];
        let naive = Threshold::parse("naive:dup_events>0").expect("parses");
        let atomic = Threshold::parse("atomic:dup_events>0").expect("parses");
        let out = evaluate(&[naive, atomic], &rows);
        assert_eq!(
            out[0].breached,
            vec![("postgres/naive".to_string(), 354.0), ("sqlite/naive".to_string(), 354.0)]
        );
        assert_eq!((out[1].rows, out[1].breached.len()), (1, 0));
        assert!(render(&out).contains("threshold breached: naive:dup_events>0\n  postgres/naive: 354"));
    }

    /// A level in the scope holds the rows that ran at it, and a breach names the cell.
    #[test]
    fn a_scope_naming_a_level_holds_only_the_rows_at_it() {
        let row = |name: &str, level: &str, dup: f64| Subject {
            name: name.into(),
            labels: vec!["postgres".into(), "check-in-transaction".into(), level.into()],
            figures: BTreeMap::from([("dup_events".to_string(), dup)]),
        };
        let rows = [
            row("postgres@read-committed/check-in-transaction", "read-committed", 7.0),
            row("postgres@serializable/check-in-transaction", "serializable", 0.0),
        ];
        let t = |text: &str| Threshold::parse(text).expect("parses");
        let out = evaluate(
            &[t("postgres/serializable/check-in-transaction:dup_events>0"), t("read-committed:dup_events>0")],
            &rows,
        );
        assert_eq!((out[0].rows, out[0].breached.len()), (1, 0));
        assert_eq!(out[1].breached, vec![("postgres@read-committed/check-in-transaction".to_string(), 7.0)]);
    }
}
