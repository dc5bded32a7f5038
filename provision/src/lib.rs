//! Fresh databases for hookbench's runs and tests: Postgres (a container started with
//! testcontainers, or a server named by `DATABASE_URL`), MySQL or MariaDB (a container, or a
//! server named by `MYSQL_URL`) and SQLite files. Every run gets a fresh
//! database, so runs never see each other's rows: on Postgres a `CREATE DATABASE` with a unique
//! name, dropped afterwards unless kept; on SQLite a new file.
//!
//! A crate of its own so that the receivers' tests (a dev-dependency) and the harness's runs use
//! the same provisioning.

mod container;
mod mysql;
mod postgres;
mod sqlite;

pub use container::ENV_SESSION;
pub use mysql::{
    DEFAULT_MYSQL_IMAGE, ENV_MYSQL_IMAGE, ENV_MYSQL_URL, FreshMysqlDatabase, MysqlFacts, MysqlServer,
    MysqlSettings,
};
pub use postgres::{
    DEFAULT_IMAGE, DockerNetwork, ENV_DOCKER_NETWORK, ENV_PG_IMAGE, FreshDatabase, PostgresMode,
    PostgresServer, PostgresSettings,
};
pub use sqlite::SqliteFile;

use std::sync::atomic::{AtomicU32, Ordering};

/// A database URL as it may be shown or published: its password, if any, replaced by `***`.
pub fn hide_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// Why a database could not be provided.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// No way to reach Postgres was found.
    #[error(
        "Postgres is unavailable: DATABASE_URL is not set and no Docker engine answers ({0}). \
         Set DATABASE_URL=postgres://user:password@host:port/db, or start Docker \
         (scripts/docker-engine.sh installs and starts one on Debian as root)"
    )]
    PostgresUnavailable(String),
    /// No way to reach MySQL or MariaDB was found.
    #[error(
        "MySQL/MariaDB is unavailable: MYSQL_URL is not set and no container could be started ({0}). \
         Set MYSQL_URL=mysql://user:password@host:port/db, or start Docker \
         (scripts/docker-engine.sh installs and starts one on Debian as root)"
    )]
    MysqlUnavailable(String),
    /// The server `MYSQL_URL` names does not answer.
    #[error("cannot connect to the MySQL/MariaDB server given by MYSQL_URL: {0}")]
    MysqlUnreachable(String),
    /// The given server does not answer.
    #[error("cannot connect to the Postgres server given by --database-url / DATABASE_URL: {0}")]
    Unreachable(String),
    /// `--postgres url` without a URL.
    #[error("--postgres url needs --database-url or DATABASE_URL")]
    MissingUrl,
    /// The container did not start.
    #[error("could not start the Postgres container from image `{image}`")]
    Container {
        /// The image.
        image: String,
        /// Why (testcontainers' error).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A container was asked of a build without the `containers` feature.
    #[error(
        "this hookbench was built without containers (cargo's --no-default-features): set \
         DATABASE_URL=postgres://user:password@host:port/db, or install it with the default features"
    )]
    NoContainers,
    /// A database statement failed (sqlx's message carries its cause; it is not chained again).
    #[error("database error while provisioning: {0}")]
    Database(sqlx::Error),
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<sqlx::Error> for ProvisionError {
    fn from(e: sqlx::Error) -> Self {
        ProvisionError::Database(e)
    }
}

/// A server a run creates its databases on: Postgres, or MySQL/MariaDB.
#[derive(Debug)]
pub enum Server {
    /// A Postgres server.
    Postgres(PostgresServer),
    /// A MySQL or MariaDB server.
    Mysql(MysqlServer),
}

impl Server {
    /// Where the server came from (an environment variable or a container's image).
    pub fn origin(&self) -> &str {
        match self {
            Server::Postgres(s) => s.origin(),
            Server::Mysql(s) => s.origin(),
        }
    }
}

/// A fresh database of any backend, for one cell or one experiment.
#[derive(Debug)]
pub enum FreshDb {
    /// A database created on a Postgres server.
    Postgres(FreshDatabase),
    /// A new SQLite file.
    Sqlite(SqliteFile),
    /// A database created on a MySQL or MariaDB server.
    Mysql(FreshMysqlDatabase),
}

impl FreshDb {
    /// A fresh database on `pg` when given, else a new SQLite file (kept in `keep_dir` if given).
    pub async fn create(
        pg: Option<&PostgresServer>,
        keep_dir: Option<&std::path::Path>,
    ) -> Result<Self, ProvisionError> {
        Ok(match pg {
            Some(server) => FreshDb::Postgres(server.fresh_database().await?),
            None => FreshDb::Sqlite(SqliteFile::create(keep_dir)?),
        })
    }

    /// A fresh database on `server` when given, else a new SQLite file (kept in `keep_dir` if
    /// given).
    pub async fn on(
        server: Option<&Server>,
        keep_dir: Option<&std::path::Path>,
    ) -> Result<Self, ProvisionError> {
        Ok(match server {
            Some(Server::Postgres(s)) => FreshDb::Postgres(s.fresh_database().await?),
            Some(Server::Mysql(s)) => FreshDb::Mysql(s.fresh_database().await?),
            None => FreshDb::Sqlite(SqliteFile::create(keep_dir)?),
        })
    }

    /// The URL receivers and the checker connect with.
    pub fn url(&self) -> String {
        match self {
            FreshDb::Postgres(db) => db.url.clone(),
            FreshDb::Sqlite(f) => f.url(),
            FreshDb::Mysql(db) => db.url.clone(),
        }
    }

    /// Drops a Postgres or MySQL database (a temporary SQLite file goes when this is dropped).
    pub async fn discard(self) -> Result<(), ProvisionError> {
        match self {
            FreshDb::Postgres(db) => db.drop_database().await,
            FreshDb::Sqlite(_) => Ok(()),
            FreshDb::Mysql(db) => db.drop_database().await,
        }
    }
}

/// A name no other run on this machine has: `hookbench_<unix ms>_<pid>_<n>`.
pub(crate) fn unique_name() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ms = jiff::Timestamp::now().as_millisecond();
    format!("hookbench_{ms}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}
