//! The SQL observer's gate: a user's query is run only if it parses, in its database's dialect, as
//! one read-only query (`SELECT`, `WITH ... SELECT`, `VALUES`, `TABLE`). The read-only session
//! stays too: the parser is a first line that names what it refused, the session the last.
//! A read-only transaction alone lets a superuser's `COPY ... TO PROGRAM` run a shell command and
//! SQLite's `VACUUM INTO` write a file anywhere.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query, SetExpr, Statement, Visit, Visitor};
use sqlparser::dialect::{Dialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::{Parser, ParserError};

/// Which SQL the query is written in.
#[derive(Debug, Clone, Copy)]
pub(super) enum Dialects {
    Postgres,
    Sqlite,
}

/// Functions whose effect reaches outside the database (files, programs, other sessions, the
/// server's settings), refused even inside a read-only query.
const OUTSIDE: &[&str] = &[
    "lo_export",
    "lo_import",
    "pg_read_file",
    "pg_read_binary_file",
    "pg_ls_dir",
    "pg_stat_file",
    "pg_file_write",
    "pg_file_rename",
    "pg_file_unlink",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_promote",
    "pg_switch_wal",
    "set_config",
    "dblink",
    "dblink_exec",
    "dblink_connect",
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
];

/// What a query holds instead of one read-only query; each message follows the query's flag
/// (`--applied-query holds 2 statements`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum NotReadOnly {
    /// It is not SQL of its database's dialect.
    #[error("does not parse: {0}")]
    Parse(#[from] ParserError),
    /// It is none, or several, statements.
    #[error("holds {0} statements")]
    Statements(usize),
    /// Its one statement is not a query (the statement's keyword: `COPY`, `VACUUM`).
    #[error("is a {0} statement")]
    NotAQuery(String),
    /// A statement inside the query (a CTE's `INSERT`, `UPDATE`, `DELETE`, `MERGE`).
    #[error("holds a {0} statement")]
    Inner(String),
    /// `SELECT ... INTO`.
    #[error("is a SELECT ... INTO, which creates a table")]
    SelectInto,
    /// A data-modifying body.
    #[error("holds a data-modifying statement")]
    Modifies,
    /// A function of [`OUTSIDE`] (its name, lowercase).
    #[error("calls {0}(), which reaches outside the database")]
    Outside(String),
}

/// `Ok` if `sql` is one read-only query; else what it holds instead.
pub(super) fn check(sql: &str, dialect: Dialects) -> Result<(), NotReadOnly> {
    let dialect: &dyn Dialect = match dialect {
        Dialects::Postgres => &PostgreSqlDialect {},
        Dialects::Sqlite => &SQLiteDialect {},
    };
    let statements = Parser::parse_sql(dialect, sql)?;
    let [statement] = statements.as_slice() else {
        return Err(NotReadOnly::Statements(statements.len()));
    };
    let Statement::Query(query) = statement else {
        return Err(NotReadOnly::NotAQuery(first_word(&statement.to_string())));
    };
    match query.visit(&mut ReadOnly) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(reason) => Err(reason),
    }
}

/// The statement's keyword, as its text starts (`COPY`, `VACUUM`).
fn first_word(text: &str) -> String {
    text.split_whitespace().next().unwrap_or("empty").to_uppercase()
}

/// Walks a query and stops at anything that writes or reaches outside.
struct ReadOnly;

impl Visitor for ReadOnly {
    type Break = NotReadOnly;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<NotReadOnly> {
        writes(&query.body)
    }

    // Any statement inside the query (a CTE's INSERT, UPDATE, DELETE, MERGE) writes.
    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<NotReadOnly> {
        ControlFlow::Break(NotReadOnly::Inner(first_word(&statement.to_string())))
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<NotReadOnly> {
        let Expr::Function(f) = expr else { return ControlFlow::Continue(()) };
        let full = f.name.to_string();
        let name = full.rsplit('.').next().unwrap_or(&full).trim_matches('"').to_lowercase();
        if OUTSIDE.contains(&name.as_str()) {
            return ControlFlow::Break(NotReadOnly::Outside(name));
        }
        ControlFlow::Continue(())
    }
}

/// A query body that writes: a data-modifying statement or `SELECT ... INTO` (a new table).
fn writes(body: &SetExpr) -> ControlFlow<NotReadOnly> {
    match body {
        SetExpr::Select(select) if select.into.is_some() => ControlFlow::Break(NotReadOnly::SelectInto),
        SetExpr::SetOperation { left, right, .. } => {
            writes(left)?;
            writes(right)
        }
        SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) => {
            ControlFlow::Break(NotReadOnly::Modifies)
        }
        _ => ControlFlow::Continue(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_queries_pass() {
        for sql in [
            "SELECT event_id, count(*) FROM credit_ledger GROUP BY event_id",
            "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
            "SELECT pg_sleep(3600)",
            "SELECT a FROM t UNION ALL SELECT b FROM u",
        ] {
            assert_eq!(check(sql, Dialects::Postgres), Ok(()), "{sql}");
        }
        let recursive =
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c";
        assert_eq!(check(recursive, Dialects::Sqlite), Ok(()));
    }

    #[test]
    fn anything_else_is_refused_saying_what_it_is() {
        let refused = [
            ("COPY (SELECT 1) TO PROGRAM 'touch /tmp/x'", Dialects::Postgres, "COPY"),
            ("VACUUM INTO '/tmp/x'", Dialects::Sqlite, "parse"),
            ("VACUUM", Dialects::Sqlite, "VACUUM"),
            ("SELECT 1; SELECT 2", Dialects::Postgres, "2 statements"),
            ("", Dialects::Postgres, "0 statements"),
            ("WITH d AS (DELETE FROM t RETURNING id) SELECT id FROM d", Dialects::Postgres, "data-modifying"),
            ("SELECT 1 INTO TABLE copied", Dialects::Postgres, "INTO"),
            ("SELECT pg_catalog.lo_export(1, '/tmp/x')", Dialects::Postgres, "lo_export"),
            (
                "SELECT x FROM t WHERE set_config('statement_timeout', '0', false) = ''",
                Dialects::Postgres,
                "set_config",
            ),
            ("SELECT writefile('/tmp/x', 'y')", Dialects::Sqlite, "writefile"),
            ("SELECT FROM WHERE", Dialects::Postgres, "does not parse"),
        ];
        for (sql, dialect, said) in refused {
            let e = check(sql, dialect).expect_err(sql).to_string();
            assert!(e.contains(said), "{sql}: {e}");
        }
    }
}
