//! The SQL observer's gate: a user's query is run only if it parses, in its database's dialect, as
//! one read-only query (`SELECT`, `WITH ... SELECT`, `VALUES`, `TABLE`). The read-only session
//! stays too: the parser is a first line that names what it refused, the session the last.
//! A read-only transaction alone lets a superuser's `COPY ... TO PROGRAM` run a shell command and
//! SQLite's `VACUUM INTO` write a file anywhere, and MySQL's `SELECT ... INTO OUTFILE` write one
//! for a user with the FILE privilege. MySQL queries are also read token by token
//! ([`mysql_tokens`]): what sqlparser does not parse (`INTO OUTFILE`, `LOCK IN SHARE MODE`) is
//! still refused by name, and what the server would read otherwise than sqlparser (a `/*! */`
//! or `/*M! */` comment, a backslash in a string) is refused before it can hide anything.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query, SetExpr, Statement, Visit, Visitor};
use sqlparser::dialect::{Dialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

/// Which SQL the query is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialects {
    Postgres,
    Sqlite,
    /// MySQL and MariaDB.
    Mysql,
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

/// MySQL and MariaDB functions refused in a query, each with what it does: they read the server's
/// files, run programs (the `lib_mysqludf_sys` UDFs), take locks other sessions wait on, hold the
/// server busy, wait on replication, or advance a sequence (a write). A read-only transaction
/// stops none of them.
const MYSQL_CALLS: &[(&str, &str)] = &[
    ("load_file", "reads a file on the server"),
    ("sys_exec", "runs a program on the server"),
    ("sys_eval", "runs a program on the server"),
    ("sys_set", "sets an environment variable of the server"),
    ("sys_get", "reads an environment variable of the server"),
    ("get_lock", "takes a named lock other sessions wait on"),
    ("release_lock", "releases a named lock"),
    ("release_all_locks", "releases named locks"),
    ("sleep", "only holds the server busy"),
    ("benchmark", "only holds the server busy"),
    ("master_pos_wait", "waits on replication"),
    ("source_pos_wait", "waits on replication"),
    ("master_gtid_wait", "waits on replication"),
    ("wait_for_executed_gtid_set", "waits on replication"),
    ("wait_until_sql_thread_after_gtids", "waits on replication"),
    ("nextval", "advances a sequence, which writes"),
    ("setval", "sets a sequence, which writes"),
];

/// The words a MySQL query may start with: anything else is another statement (`DO`, `CALL`,
/// `HANDLER`, `LOAD DATA`, `SET STATEMENT ... FOR`), named as such even where sqlparser does not
/// parse it.
const MYSQL_QUERY_STARTS: &[Keyword] = &[Keyword::SELECT, Keyword::WITH, Keyword::VALUES, Keyword::TABLE];

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
    /// A MySQL function of [`MYSQL_CALLS`] (its name, lowercase, and what it does).
    #[error("calls {name}(), which {does}")]
    Calls {
        /// The function's name, lowercase.
        name: String,
        /// What it does, from [`MYSQL_CALLS`].
        does: &'static str,
    },
    /// MySQL's `INTO OUTFILE` or `INTO DUMPFILE` (the word after `INTO`).
    #[error("holds INTO {0}, which writes a file on the server")]
    IntoFile(String),
    /// MySQL's `SELECT ... INTO @var` (what follows `INTO`).
    #[error("holds INTO {0}, which stores the rows in variables instead of returning them")]
    IntoVariables(String),
    /// A locking read (`FOR UPDATE`, `FOR SHARE`, `LOCK IN SHARE MODE`).
    #[error("holds {0}, which locks the rows it reads")]
    Locking(String),
    /// A comment the server reads as more than a comment (what it is and does).
    #[error("holds {0}")]
    Comment(&'static str),
    /// A backslash in a quoted string or name: with `NO_BACKSLASH_ESCAPES` or `ANSI_QUOTES` in
    /// the server's `sql_mode` it could end a string where sqlparser reads on.
    #[error(
        "holds a backslash in a quoted string or name, which the server may read otherwise \
         (sql_mode NO_BACKSLASH_ESCAPES); write LIKE patterns with ESCAPE '!'"
    )]
    Backslash,
    /// A control character (other than tab, newline, carriage return), its code point.
    #[error("holds the control character U+{0:04X}")]
    Control(u32),
}

/// `Ok` if `sql` is one read-only query; else what it holds instead.
pub(super) fn check(sql: &str, dialect: Dialects) -> Result<(), NotReadOnly> {
    let parser: &dyn Dialect = match dialect {
        Dialects::Postgres => &PostgreSqlDialect {},
        Dialects::Sqlite => &SQLiteDialect {},
        Dialects::Mysql => &MySqlDialect {},
    };
    if dialect == Dialects::Mysql {
        mysql_tokens(sql)?;
    }
    let statements = Parser::parse_sql(parser, sql)?;
    let [statement] = statements.as_slice() else {
        return Err(NotReadOnly::Statements(statements.len()));
    };
    let Statement::Query(query) = statement else {
        return Err(NotReadOnly::NotAQuery(first_word(&statement.to_string())));
    };
    match query.visit(&mut ReadOnly { dialect }) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(reason) => Err(reason),
    }
}

/// The statement's keyword, as its text starts (`COPY`, `VACUUM`).
fn first_word(text: &str) -> String {
    text.split_whitespace().next().unwrap_or("empty").to_uppercase()
}

/// Walks a query and stops at anything that writes or reaches outside.
struct ReadOnly {
    /// MySQL's functions were refused token by token; its locking reads are refused here too.
    dialect: Dialects,
}

impl Visitor for ReadOnly {
    type Break = NotReadOnly;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<NotReadOnly> {
        if self.dialect == Dialects::Mysql
            && let Some(lock) = query.locks.first()
        {
            return ControlFlow::Break(NotReadOnly::Locking(lock.to_string()));
        }
        writes(&query.body)
    }

    // Any statement inside the query (a CTE's INSERT, UPDATE, DELETE, MERGE) writes.
    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<NotReadOnly> {
        ControlFlow::Break(NotReadOnly::Inner(first_word(&statement.to_string())))
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<NotReadOnly> {
        let Expr::Function(f) = expr else { return ControlFlow::Continue(()) };
        if self.dialect == Dialects::Mysql {
            return ControlFlow::Continue(());
        }
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

/// A MySQL query read token by token, as the server reads it: refused if it holds a comment,
/// a backslash or a control character the server could read otherwise than sqlparser, if it does
/// not start as a query does, or if it holds `INTO`, a locking read or a call of [`MYSQL_CALLS`]
/// anywhere.
fn mysql_tokens(sql: &str) -> Result<(), NotReadOnly> {
    if let Some(c) = sql.chars().find(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')) {
        return Err(NotReadOnly::Control(c.into()));
    }
    executable_comment(sql)?;
    let tokens =
        Tokenizer::new(&MySqlDialect {}, sql).with_unescape(false).tokenize().map_err(ParserError::from)?;
    let mut words = Vec::with_capacity(tokens.len());
    for token in tokens {
        match token {
            Token::Whitespace(w) => mysql_comment(&w)?,
            other if other.to_string().contains('\\') => return Err(NotReadOnly::Backslash),
            other => words.push(other),
        }
    }
    if let Some(first) = words.first()
        && !is_query_start(first)
    {
        return Err(NotReadOnly::NotAQuery(first_word(&first.to_string())));
    }
    (0..words.len()).try_for_each(|i| mysql_clause(&words[i..]))
}

/// Whether a MySQL statement starting with `token` is a query (`SELECT`, `WITH`, `VALUES`,
/// `TABLE`, or a parenthesis).
fn is_query_start(token: &Token) -> bool {
    match token {
        Token::LParen => true,
        Token::Word(w) => w.quote_style.is_none() && MYSQL_QUERY_STARTS.contains(&w.keyword),
        _ => false,
    }
}

/// An executable comment anywhere in `sql`, a string's text included: `/*! ... */`, which
/// MySQL and MariaDB run or skip by the version number after the `!` (MariaDB skips 50700 to
/// 99999 too), and `/*M! ... */`, which MariaDB runs. sqlparser reads such a comment's text as
/// SQL whatever its version, so a comment the server skips could hold a quote that makes
/// sqlparser read the rest of the query as a string, and the server run it (`SELECT 1 /*!99999
/// '/*' */ , SLEEP(5) -- '`), or a token that splits a refused call (`SLEEP /*!99999 .x */
/// (5)`). Refusing the text anywhere also refuses a string that holds it, a price worth paying
/// for one rule with no reading of versions.
fn executable_comment(sql: &str) -> Result<(), NotReadOnly> {
    let upper = sql.to_ascii_uppercase();
    if upper.contains("/*!") || upper.contains("/*M!") {
        return Err(NotReadOnly::Comment(
            "a /*! ... */ or /*M! ... */ comment, which MySQL and MariaDB run or skip by version",
        ));
    }
    Ok(())
}

/// A comment the server would read as more than one: an optimizer hint `/*+ ... */` can lift
/// the statement timeout, and MySQL reads `--` as a comment only when an ASCII space or control
/// character follows (sqlparser takes any Unicode space).
fn mysql_comment(w: &Whitespace) -> Result<(), NotReadOnly> {
    match w {
        Whitespace::MultiLineComment(c) if c.starts_with('+') => {
            Err(NotReadOnly::Comment("an optimizer hint /*+ ... */, which can lift --query-timeout"))
        }
        Whitespace::SingleLineComment { prefix, comment }
            if prefix == "--" && !comment.starts_with(|c: char| c.is_ascii_whitespace()) =>
        {
            Err(NotReadOnly::Comment("a -- comment that MySQL reads as SQL (no ASCII space after --)"))
        }
        _ => Ok(()),
    }
}

/// What `words` (a query's tokens from one on, spaces and comments left out) start with, if it
/// is refused: `INTO` (a file or variables), a locking read, or a call of [`MYSQL_CALLS`].
fn mysql_clause(words: &[Token]) -> Result<(), NotReadOnly> {
    let plain = |i: usize| match words.get(i) {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_uppercase()),
        _ => None,
    };
    let Some(Token::Word(first)) = words.first() else { return Ok(()) };
    match (plain(0).as_deref(), plain(1).as_deref()) {
        (Some("INTO"), Some(file @ ("OUTFILE" | "DUMPFILE"))) => {
            return Err(NotReadOnly::IntoFile(file.to_string()));
        }
        (Some("INTO"), _) => {
            let what = words.get(1).map_or_else(|| "nothing".to_string(), ToString::to_string);
            return Err(NotReadOnly::IntoVariables(what));
        }
        (Some("FOR"), Some(lock @ ("UPDATE" | "SHARE"))) => {
            return Err(NotReadOnly::Locking(format!("FOR {lock}")));
        }
        (Some("LOCK"), Some("IN"))
            if plain(2).as_deref() == Some("SHARE") && plain(3).as_deref() == Some("MODE") =>
        {
            return Err(NotReadOnly::Locking("LOCK IN SHARE MODE".to_string()));
        }
        _ => {}
    }
    let name = first.value.to_lowercase();
    match MYSQL_CALLS.iter().find(|(n, _)| *n == name) {
        Some(&(_, does)) if words.get(1) == Some(&Token::LParen) => Err(NotReadOnly::Calls { name, does }),
        _ => Ok(()),
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

#[cfg(test)]
mod mysql_tests {
    use super::*;

    fn said(sql: &str) -> String {
        check(sql, Dialects::Mysql).expect_err(sql).to_string()
    }

    #[test]
    fn mysql_read_only_queries_pass() {
        for sql in [
            "SELECT event_id, COUNT(*) FROM credit_ledger GROUP BY event_id",
            "SELECT `event_id` FROM `app`.`credits` WHERE note = 'it''s' # a comment",
            "SELECT account, CAST(SUM(amount) AS SIGNED) FROM credits GROUP BY account -- totals",
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10) SELECT x FROM c",
            "(SELECT a FROM t) UNION ALL (SELECT b FROM u)",
            "SELECT updated_for, sleep_minutes FROM t /* plain comment */",
            "SELECT a FROM t LIMIT 10, 20",
        ] {
            assert_eq!(check(sql, Dialects::Mysql), Ok(()), "{sql}");
        }
    }

    #[test]
    fn mysql_files_and_variables_are_refused_by_name() {
        let e = said("SELECT event_id FROM t INTO OUTFILE '/tmp/x'");
        assert!(e.contains("INTO OUTFILE") && e.contains("writes a file"), "{e}");
        let e = said("SELECT event_id INTO DUMPFILE '/tmp/x' FROM t");
        assert!(e.contains("INTO DUMPFILE"), "{e}");
        let e = said("SELECT event_id FROM t INTO @x");
        assert!(e.contains("INTO @x") && e.contains("variables"), "{e}");
        let e = said("SELECT event_id INTO @x FROM t");
        assert!(e.contains("INTO @x"), "{e}");
        let e = said("SELECT LOAD_FILE('/etc/passwd')");
        assert!(e.contains("load_file()") && e.contains("reads a file"), "{e}");
        let e = said("SELECT sys_exec('touch /tmp/x')");
        assert!(e.contains("sys_exec()") && e.contains("runs a program"), "{e}");
    }

    #[test]
    fn mysql_locking_reads_are_refused_by_name() {
        for (sql, lock) in [
            ("SELECT a FROM t FOR UPDATE", "FOR UPDATE"),
            ("SELECT a FROM t WHERE a > 1 for update skip locked", "FOR UPDATE"),
            ("SELECT a FROM t FOR SHARE", "FOR SHARE"),
            ("SELECT a FROM t LOCK IN SHARE MODE", "LOCK IN SHARE MODE"),
        ] {
            let e = said(sql);
            assert!(e.contains(lock) && e.contains("locks the rows"), "{sql}: {e}");
        }
    }

    #[test]
    fn mysql_calls_that_hold_the_server_are_refused_by_name() {
        for (sql, name) in [
            ("SELECT GET_LOCK('x', 10)", "get_lock()"),
            ("SELECT RELEASE_LOCK('x')", "release_lock()"),
            ("SELECT a FROM t WHERE SLEEP(5) = 0", "sleep()"),
            ("SELECT `sleep`(5)", "sleep()"),
            ("SELECT BENCHMARK(1000000000, MD5('x'))", "benchmark()"),
            ("SELECT MASTER_POS_WAIT('log', 4)", "master_pos_wait()"),
            ("SELECT NEXTVAL(s)", "nextval()"),
        ] {
            let e = said(sql);
            assert!(e.contains(name), "{sql}: {e}");
        }
    }

    #[test]
    fn mysql_other_statements_are_refused_naming_their_keyword() {
        for (sql, keyword) in [
            ("DO SLEEP(5)", "is a DO statement"),
            ("SET STATEMENT max_statement_time = 0 FOR SELECT 1", "is a SET statement"),
            ("CALL p()", "is a CALL statement"),
            ("HANDLER t OPEN", "is a HANDLER statement"),
            ("LOAD DATA INFILE '/etc/passwd' INTO TABLE t", "is a LOAD statement"),
            ("INSERT INTO t VALUES (1)", "is a INSERT statement"),
            ("SHOW GRANTS", "is a SHOW statement"),
            ("SELECT 1; SELECT 2", "holds 2 statements"),
            ("", "holds 0 statements"),
            ("SELECT FROM WHERE", "does not parse"),
        ] {
            let e = said(sql);
            assert!(e.contains(keyword), "{sql}: {e}");
        }
    }

    #[test]
    fn mysql_text_the_server_reads_otherwise_is_refused() {
        for (sql, what) in [
            ("SELECT /*M!100000 SLEEP(5), */ 1", "/*M!"),
            ("SELECT /*m!100000 SLEEP(5), */ 1", "/*M!"),
            ("SELECT /*+ MAX_EXECUTION_TIME(100000000) */ a FROM t", "optimizer hint"),
            ("SELECT 1 /*!50000 INTO OUTFILE '/tmp/x' */", "/*!"),
            // A version above the server's: skipped by it, read as SQL by sqlparser. Each of
            // these passed before executable comments were refused, and ran on MariaDB 10.11.
            ("SELECT 1, SLEEP /*!99999 .x */ (2)", "/*!"),
            ("SELECT 1, GET_LOCK /*!50700 .x */ ('y', 0)", "/*!"),
            ("SELECT 1 /*!99999 + '/*' */ + ' */ , SLEEP(5) -- '", "/*!"),
            ("/*!99999 SELECT '/*' */ = ' */ SET STATEMENT tx_read_only=0 FOR SELECT 1 -- '", "/*!"),
            ("SELECT a FROM t WHERE note = 'see /*! here'", "/*!"),
            ("SELECT a --\u{a0}INTO OUTFILE '/tmp/x'\nFROM t", "-- comment"),
            // Read on by sqlparser, ended at the backslash under NO_BACKSLASH_ESCAPES.
            ("SELECT a FROM t WHERE b = 'x\\' INTO OUTFILE '/tmp/x' -- '", "backslash"),
            ("SELECT a FROM t\0 INTO OUTFILE '/tmp/x'", "U+0000"),
        ] {
            let e = said(sql);
            assert!(e.contains(what), "{sql}: {e}");
        }
    }

    #[test]
    fn the_other_dialects_do_not_take_mysqls_rules() {
        // Postgres refuses a lock in its read-only session itself, and has no sleep().
        assert_eq!(check("SELECT a FROM t FOR UPDATE", Dialects::Postgres), Ok(()));
        assert_eq!(check("SELECT sleep(1)", Dialects::Sqlite), Ok(()));
    }
}
