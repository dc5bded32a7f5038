//! The bench's matrix as the harness names it: the receivers' designs, the databases they run on
//! and the isolation of their transactions, as flags, reports and histories spell them. The
//! receivers crate has types of its own; these are the harness's, so that reports, the judge's
//! neighbours and the command line need nothing from the code on trial. A test holds each equal
//! to the receivers' (same variants, same names), and only the code that runs a receiver (serve,
//! fleet, perf, experiments) turns one into the other (`serve.rs`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A name that is none of a kind's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{name}` (expected one of: {expected})")]
pub struct UnknownName {
    /// What was named: `design`, `backend`, `isolation`.
    pub kind: &'static str,
    /// The name given.
    pub name: String,
    /// The names there are, comma-separated.
    pub expected: String,
}

/// Parses `s` as one of `values`, by its name.
fn named<T: Copy + Into<&'static str>>(s: &str, kind: &'static str, values: &[T]) -> Result<T, UnknownName> {
    values.iter().copied().find(|v| (*v).into() == s).ok_or_else(|| UnknownName {
        kind,
        name: s.to_string(),
        expected: values.iter().map(|v| (*v).into()).collect::<Vec<&str>>().join(", "),
    })
}

/// A receiver design (the `--design` flag's values).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Design {
    /// Apply on every delivery.
    Naive,
    /// SELECT, work, apply, INSERT.
    CheckThenInsert,
    /// One transaction: INSERT ... ON CONFLICT DO NOTHING, apply if inserted.
    Atomic,
    /// Atomic + created >= guard.
    CreatedGte,
    /// Atomic + created > guard.
    CreatedGt,
    /// Atomic + version guard.
    VersionGuard,
    /// Inbox table, workers apply with the version guard.
    Inbox,
    /// Insert the key and commit, then apply in a second transaction.
    Split,
    /// One transaction: SELECT the id, apply, INSERT the id (a non-unique index: the isolation
    /// level decides).
    CheckInTransaction,
}

impl Design {
    /// The bench's designs, in docs/design.md's order.
    pub const ALL: [Design; 7] = [
        Design::Naive,
        Design::CheckThenInsert,
        Design::Atomic,
        Design::CreatedGte,
        Design::CreatedGt,
        Design::VersionGuard,
        Design::Inbox,
    ];

    /// Every design the receivers know: the bench's, `split` and `check-in-transaction`.
    pub const KNOWN: &'static [Design] = <Self as strum::VariantArray>::VARIANTS;

    /// The flag value.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Which database a store talks to.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Backend {
    /// PostgreSQL, shared by every worker over the network.
    Postgres,
    /// SQLite, one file shared by every worker process.
    Sqlite,
    /// MySQL or MariaDB (InnoDB), shared by every worker over the network.
    Mysql,
}

impl Backend {
    /// The bench's default backends (MySQL is asked for by name: `--backends postgres,sqlite,mysql`).
    pub const ALL: [Backend; 2] = [Backend::Postgres, Backend::Sqlite];

    /// Every backend hookbench serves.
    pub const KNOWN: &'static [Backend] = <Self as strum::VariantArray>::VARIANTS;

    /// The flag value.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The backend a URL names by its scheme (`postgres://`, `postgresql://`, `sqlite:`,
    /// `mysql://`, `mariadb://`).
    pub fn of_url(url: &str) -> Option<Self> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Backend::Postgres)
        } else if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("mysql://") || url.starts_with("mariadb://") {
            Some(Backend::Mysql)
        } else {
            None
        }
    }
}

/// The isolation level of the receivers' transactions (Postgres, MySQL), in increasing strength.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Isolation {
    /// READ COMMITTED, Postgres's default.
    #[default]
    ReadCommitted,
    /// REPEATABLE READ.
    RepeatableRead,
    /// SERIALIZABLE.
    Serializable,
}

impl Isolation {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

macro_rules! by_name {
    ($($t:ty = $kind:literal),+) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $t {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                named(s, $kind, <$t as strum::VariantArray>::VARIANTS)
            }
        }
    )+};
}

by_name!(Design = "design", Backend = "backend", Isolation = "isolation");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_back_and_an_unknown_one_is_refused_naming_the_choices() {
        for d in Design::KNOWN {
            assert_eq!(d.as_str().parse::<Design>(), Ok(*d));
        }
        assert_eq!("check-then-insert".parse(), Ok(Design::CheckThenInsert));
        let e = "sqlite3".parse::<Backend>().expect_err("not a backend");
        assert_eq!(e.to_string(), "unknown backend `sqlite3` (expected one of: postgres, sqlite, mysql)");
        assert_eq!(Isolation::default().as_str(), "read-committed");
        assert_eq!(serde_json::to_value(Design::CreatedGte).ok(), Some("created-gte".into()));
    }
}
