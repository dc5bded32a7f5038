//! The atomic design against mysqlslap running the same transaction, on identical fresh
//! databases of one MySQL or MariaDB server.
//!
//! mysqlslap has no variables and no rate of its own: its transaction takes its id and account
//! from session variables set inside the statements, and it runs with more queries than it can
//! finish, stopped after the measurement's seconds. Its rate is then the transactions it
//! committed, counted as rows in the database (the effect, not what the tool says), over the
//! time it ran.

use std::time::{Duration, Instant};

use provision::{MysqlServer, MysqlSettings};

use super::{PerfConfig, PerfError, Ratio, atomic_rate};

/// The atomic design's claim of a credit as mysqlslap's query: the receivers' own statements
/// (receivers::store::MYSQL_CLAIM_CREDIT) in one transaction, each `?` given a value. The id is
/// ascending per connection (`slap_<connection>_<n>`), as the bench's ids ascend; the account one
/// of 500; the amount 100; the body hash of the receivers' length.
fn mysqlslap_query() -> String {
    let [key, credit, ledger] = receivers::store::MYSQL_CLAIM_CREDIT;
    let hash = format!("'{}'", "0".repeat(64));
    let id = "@id := CONCAT('slap_', CONNECTION_ID(), '_', @n := COALESCE(@n, 0) + 1)";
    let key = bind(key, &[id, &hash]);
    let credit = bind(credit, &["@acct := FLOOR(RAND() * 500)", "100"]);
    let ledger = bind(ledger, &["@id", "@acct", "100"]);
    format!("BEGIN;{key};{credit};{ledger};COMMIT")
}

/// `sql` with its `?` replaced by `values`, in order.
fn bind(sql: &str, values: &[&str]) -> String {
    let mut parts = sql.split('?');
    let mut out = parts.next().unwrap_or_default().to_string();
    for (part, value) in parts.zip(values.iter().chain(std::iter::repeat(&"?"))) {
        out.push_str(value);
        out.push_str(part);
    }
    out
}

/// The parts of a `mysql://user:password@host:port/database` URL mysqlslap takes as flags.
fn slap_flags(url: &str) -> Result<Vec<String>, PerfError> {
    let bad =
        |reason: &str| PerfError::Tool { tool: "mysqlslap", reason: format!("the database URL: {reason}") };
    let u = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    let host = u.host_str().ok_or_else(|| bad("no host"))?;
    let database = u.path().trim_start_matches('/');
    if database.is_empty() {
        return Err(bad("no database"));
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    Ok(vec![
        format!("--host={host}"),
        format!("--port={}", u.port().unwrap_or(3306)),
        "--protocol=TCP".into(),
        format!("--user={}", decode(u.username())),
        format!("--password={}", decode(u.password().unwrap_or_default())),
        format!("--create-schema={database}"),
    ])
}

/// mysqlslap's committed transactions per second on the database at `url` (schema ready), with
/// `connections` clients, for `seconds`.
async fn mysqlslap_rate(url: &str, connections: usize, seconds: u64) -> Result<f64, PerfError> {
    let started = Instant::now();
    let mut child = tokio::process::Command::new("mysqlslap")
        .args(slap_flags(url)?)
        .args(["--no-drop", "--iterations=1", "--number-of-queries=2000000000", "--delimiter=;"])
        .arg(format!("--concurrency={connections}"))
        .arg(format!("--query={}", mysqlslap_query()))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| PerfError::Tool {
            tool: "mysqlslap",
            reason: format!("cannot run it ({e}); is it installed (Debian's mariadb-client)?"),
        })?;
    // It ends early only when it fails (it was given more queries than it can run).
    if let Ok(ended) = tokio::time::timeout(Duration::from_secs(seconds), child.wait()).await {
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            use tokio::io::AsyncReadExt;
            let _ = stderr.read_to_string(&mut err).await;
        }
        return Err(PerfError::Tool { tool: "mysqlslap", reason: format!("ended early ({ended:?}): {err}") });
    }
    let _ = child.kill().await;
    let elapsed = started.elapsed().as_secs_f64();
    // The server rolls back what the killed clients had open; what is counted committed.
    let committed = committed_credits(url).await?;
    Ok(committed as f64 / elapsed)
}

/// The ledger rows in the database: one per committed credit.
async fn committed_credits(url: &str) -> Result<i64, PerfError> {
    use sqlx::Connection;
    let mut conn = sqlx::mysql::MySqlConnection::connect(url)
        .await
        .map_err(|e| PerfError::Tool { tool: "mysqlslap", reason: format!("counting its rows: {e}") })?;
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM credit_ledger")
        .fetch_one(&mut conn)
        .await
        .map_err(|e| PerfError::Tool { tool: "mysqlslap", reason: format!("counting its rows: {e}") })?;
    let _ = conn.close().await;
    Ok(n)
}

/// mysqlslap's transaction rate against hookbench's atomic design, on MySQL or MariaDB.
pub async fn mysql_ratio(config: &PerfConfig, settings: &MysqlSettings) -> Result<Ratio, PerfError> {
    let server = MysqlServer::start(settings).await?;
    let db = server.fresh_database().await?;
    crate::fleet::ready_schema(&db.url).await.map_err(|e| e.0)?;
    let slap = mysqlslap_rate(&db.url, config.connections, config.seconds).await;
    db.drop_database().await?;
    let slap = slap?;

    let db = server.fresh_database().await?;
    crate::fleet::ready_schema(&db.url).await.map_err(|e| e.0)?;
    let atomic = atomic_rate(config, &db.url, slap).await;
    db.drop_database().await?;
    Ok(Ratio::of_atomic(slap, atomic?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysqlslap_runs_the_receivers_statements_in_one_transaction() {
        let query = mysqlslap_query();
        let statements: Vec<&str> = query.split(';').collect();
        assert_eq!(statements.len(), 5, "{query}");
        assert_eq!((statements[0], statements[4]), ("BEGIN", "COMMIT"));
        assert!(statements[1].starts_with("INSERT INTO processed_events"), "{query}");
        assert!(statements[2].starts_with("INSERT INTO accounts"), "{query}");
        assert!(statements[3].starts_with("INSERT INTO credit_ledger"), "{query}");
        assert!(!query.contains('?'), "every parameter given: {query}");
        assert!(statements[3].contains("(@id, @acct, 100)"), "the ledger row names the key's id: {query}");
    }

    #[test]
    fn the_url_becomes_mysqlslaps_flags_its_password_decoded() {
        let flags = slap_flags("mysql://root:p%40ss@127.0.0.1:33307/hookbench_1").expect("flags");
        assert_eq!(
            flags,
            [
                "--host=127.0.0.1",
                "--port=33307",
                "--protocol=TCP",
                "--user=root",
                "--password=p@ss",
                "--create-schema=hookbench_1"
            ]
        );
        assert!(slap_flags("mysql://root@127.0.0.1:3306").is_err(), "no database");
    }
}
