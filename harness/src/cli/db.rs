//! `hookbench db`: a fresh database, held until a signal.

use std::io::Write;

use crate::matrix::Backend;
use anyhow::Context;
use provision::{MysqlServer, MysqlSettings, PostgresServer, SqliteFile};

use super::flags::PostgresArgs;
use super::{init_logging, runtime};
use crate::serve;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `hookbench db`.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// The backend: sqlite, postgres (from DATABASE_URL or a container) or mysql (MySQL or
    /// MariaDB, from MYSQL_URL or a container).
    #[arg(long, default_value = "sqlite")]
    pub backend: Backend,
    /// Where Postgres comes from.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Directory for the SQLite file [default: a temporary directory, removed at the end].
    #[arg(long)]
    pub sqlite_dir: Option<PathBuf>,
    /// Keep the database (and the SQLite file) after stopping.
    #[arg(long)]
    pub keep: bool,
}

/// `hookbench db`.
pub(super) fn run(args: &DbArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    init_logging();
    runtime()?.block_on(async {
        let shutdown = serve::shutdown_signal().context("installing signal handlers")?;
        match args.backend {
            Backend::Postgres => {
                let server = PostgresServer::start(&args.postgres.settings()).await?;
                let db = server.fresh_database().await?;
                let version = server.version().await?;
                let line = serde_json::json!({
                    "url": db.url, "backend": "postgres", "origin": server.origin(), "version": version,
                });
                writeln!(out, "{line}")?;
                out.flush()?;
                shutdown.await;
                if !args.keep {
                    db.drop_database().await.context("dropping the database")?;
                }
            }
            Backend::Mysql => {
                let server = MysqlServer::start(&MysqlSettings::from_env()).await?;
                let db = server.fresh_database().await?;
                let facts = server.facts().await?;
                // Migrated now, so several workers can start on it at once.
                crate::fleet::ready_schema(&db.url).await?;
                let line = serde_json::json!({
                    "url": db.url, "backend": "mysql", "origin": server.origin(), "version": facts.version,
                    "default_isolation": facts.default_isolation,
                    "innodb_snapshot_isolation": facts.snapshot_isolation,
                });
                writeln!(out, "{line}")?;
                out.flush()?;
                shutdown.await;
                if !args.keep {
                    db.drop_database().await.context("dropping the database")?;
                }
            }
            Backend::Sqlite => {
                let dir = match (&args.sqlite_dir, args.keep) {
                    (Some(d), _) => Some(d.clone()),
                    (None, true) => Some(std::env::current_dir()?),
                    (None, false) => None,
                };
                let file = SqliteFile::create(dir.as_deref())?;
                // Create and migrate it now, so the file is ready for several workers at once.
                crate::fleet::ready_schema(&file.url()).await?;
                writeln!(out, "{}", serde_json::json!({ "url": file.url(), "backend": "sqlite" }))?;
                out.flush()?;
                shutdown.await;
                if !args.keep && args.sqlite_dir.is_some() {
                    for suffix in ["", "-wal", "-shm"] {
                        let _ = std::fs::remove_file(format!("{}{suffix}", file.path().display()));
                    }
                }
            }
        }
        Ok(())
    })
}
