//! `perf --rounds N`: every measurement once per round, the rounds interleaved, and each ratio
//! summed up as its median and range over the rounds. One figure per run moved by a third here
//! from run to run (reports/performance-history.md); a median of rounds taken in turn, with its spread
//! beside it, is a figure a target can be held to.

use serde::Serialize;

use super::{HttpFigures, PerfError, Ratio};

/// One round: each measurement that was asked for, or why it could not be made.
#[derive(Debug)]
pub struct Round {
    /// The atomic design against pgbench.
    pub postgres: Option<Result<Ratio, PerfError>>,
    /// The atomic design on SQLite against the sqlx loop.
    pub sqlite: Option<Result<Ratio, PerfError>>,
    /// The atomic design against mysqlslap.
    pub mysql: Option<Result<Ratio, PerfError>>,
    /// The sender against wrk and oha.
    pub http: Option<Result<HttpFigures, PerfError>>,
}

/// A figure over the rounds that measured it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The median (of an even count, the mean of the middle two).
    pub median: f64,
    /// The lowest.
    pub min: f64,
    /// The highest.
    pub max: f64,
    /// How many rounds measured it.
    pub rounds: usize,
}

impl Spread {
    /// The spread of `values`; `None` when no round measured it (NaN values are not figures and
    /// are left out).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Some(Self { median, min: v[0], max: v[n - 1], rounds: n })
    }
}

impl std::fmt::Display for Spread {
    /// `0.72 (0.67 to 0.80, 3 rounds)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rounds = if self.rounds == 1 { "1 round".to_string() } else { format!("{} rounds", self.rounds) };
        write!(f, "{:.2} ({:.2} to {:.2}, {rounds})", self.median, self.min, self.max)
    }
}

/// Each ratio's spread over the rounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// atomic / pgbench.
    pub postgres: Option<Spread>,
    /// atomic on SQLite / the sqlx loop.
    pub sqlite: Option<Spread>,
    /// atomic on MySQL / mysqlslap.
    pub mysql: Option<Spread>,
    /// atomic on SQLite / the receivers' transaction through SQLite's C API on one connection.
    pub sqlite_direct: Option<Spread>,
    /// sender / wrk.
    pub sender_wrk: Option<Spread>,
    /// sender / oha.
    pub sender_oha: Option<Spread>,
}

impl Summary {
    /// The spreads of `rounds`' ratios, each over the rounds that measured it.
    pub fn of(rounds: &[Round]) -> Self {
        let measured =
            |r: &Option<Result<Ratio, PerfError>>| r.as_ref().and_then(|r| r.as_ref().ok()).cloned();
        let ok = |r: &Option<Result<Ratio, PerfError>>| measured(r).map(|r| r.ratio);
        let direct = |r: &Option<Result<Ratio, PerfError>>| {
            measured(r).and_then(|r| Some(r.hookbench_per_s / r.direct_per_s.filter(|d| *d > 0.0)?))
        };
        let http = |pick: fn(&HttpFigures) -> f64| {
            Spread::of(rounds.iter().filter_map(|r| r.http.as_ref().and_then(|h| h.as_ref().ok())).map(pick))
        };
        Self {
            postgres: Spread::of(rounds.iter().filter_map(|r| ok(&r.postgres))),
            sqlite: Spread::of(rounds.iter().filter_map(|r| ok(&r.sqlite))),
            mysql: Spread::of(rounds.iter().filter_map(|r| ok(&r.mysql))),
            sqlite_direct: Spread::of(rounds.iter().filter_map(|r| direct(&r.sqlite))),
            sender_wrk: http(|h| h.wrk.ratio),
            sender_oha: http(|h| h.oha.ratio),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratio(r: f64) -> Option<Result<Ratio, PerfError>> {
        Some(Ok(Ratio::new(1000.0, 1000.0 * r)))
    }

    fn failed() -> Option<Result<Ratio, PerfError>> {
        Some(Err(PerfError::Tool { tool: "pgbench", reason: "not installed".into() }))
    }

    #[test]
    fn the_median_of_an_odd_count_is_the_middle_and_of_an_even_one_the_mean_of_two() {
        let s = Spread::of([0.9, 0.6, 0.7]).expect("three");
        assert_eq!((s.median, s.min, s.max, s.rounds), (0.7, 0.6, 0.9, 3));
        let s = Spread::of([0.9, 0.6, 0.7, 0.8]).expect("four");
        assert!((s.median - 0.75).abs() < 1e-12, "{s:?}");
        assert_eq!(s.to_string(), "0.75 (0.60 to 0.90, 4 rounds)");
        assert_eq!(Spread::of([0.5]).expect("one").to_string(), "0.50 (0.50 to 0.50, 1 round)");
    }

    #[test]
    fn nothing_measured_is_no_figure_not_a_zero() {
        assert_eq!(Spread::of([]), None);
        assert_eq!(Spread::of([f64::NAN]), None);
        assert_eq!(Summary::of(&[]), Summary::default());
        let none = Round { postgres: failed(), sqlite: None, mysql: None, http: None };
        assert_eq!(Summary::of(&[none]), Summary::default());
    }

    #[test]
    fn a_failed_round_is_left_out_of_its_figure_and_only_its() {
        let rounds = [
            Round { postgres: ratio(0.7), sqlite: ratio(0.3), mysql: None, http: None },
            Round { postgres: failed(), sqlite: ratio(0.4), mysql: ratio(0.8), http: None },
            Round { postgres: ratio(0.9), sqlite: ratio(0.35), mysql: None, http: None },
        ];
        let s = Summary::of(&rounds);
        let pg = s.postgres.expect("two rounds measured it");
        assert_eq!((pg.rounds, pg.min, pg.max), (2, 0.7, 0.9));
        assert!((pg.median - 0.8).abs() < 1e-12, "{pg:?}");
        assert_eq!(s.sqlite.map(|s| (s.median, s.rounds)), Some((0.35, 3)));
        assert_eq!(s.mysql.map(|s| (s.median, s.rounds)), Some((0.8, 1)), "the one round that ran it");
        assert_eq!((s.sender_wrk, s.sender_oha), (None, None));
        assert_eq!(s.sqlite_direct, None, "no round measured the C API loop");
    }

    #[test]
    fn the_c_api_ratio_is_over_the_rounds_that_ran_that_loop() {
        let with_direct = |atomic: f64, direct: Option<f64>| {
            let mut r = Ratio::new(1000.0, atomic);
            r.direct_per_s = direct;
            Round { postgres: None, sqlite: Some(Ok(r)), mysql: None, http: None }
        };
        let rounds = [
            with_direct(800.0, Some(1000.0)),
            with_direct(900.0, None),
            with_direct(600.0, Some(2000.0)),
            with_direct(500.0, Some(0.0)),
        ];
        let d = Summary::of(&rounds).sqlite_direct.expect("two rounds ran it");
        assert_eq!((d.rounds, d.min, d.max), (2, 0.3, 0.8));
    }
}
