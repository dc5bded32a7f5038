//! Postgres: a server from `DATABASE_URL` or started with testcontainers, and a fresh database
//! per run on it.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::container::Container;
use super::{ProvisionError, unique_name};
use sqlx::postgres::PgPoolOptions;
use sqlx::{AssertSqlSafe, PgPool};

/// The image started when none is chosen.
pub const DEFAULT_IMAGE: &str = "postgres:16-alpine";
/// Environment variable choosing the Postgres image (`name:tag`).
pub const ENV_PG_IMAGE: &str = "HOOKBENCH_PG_IMAGE";
/// Environment variable choosing the container's network mode (`bridge` or `host`).
pub const ENV_DOCKER_NETWORK: &str = "HOOKBENCH_DOCKER_NETWORK";
/// `off` starts containers with `fsync=off`: for tests, which judge transactions, never a
/// server's crash durability (scripts/test.sh sets it). Runs keep fsync on.
pub const ENV_PG_FSYNC: &str = "HOOKBENCH_PG_FSYNC";

/// Where Postgres comes from (`--postgres`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum PostgresMode {
    /// `DATABASE_URL` if set, else Docker if an engine answers, else a clear error.
    #[default]
    Auto,
    /// Start a container with testcontainers.
    Docker,
    /// Use the server in `--database-url` / `DATABASE_URL`.
    Url,
}

/// A `--postgres` value that is no mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown --postgres `{0}` (expected auto, docker or url)")]
pub struct UnknownMode(pub String);

impl FromStr for PostgresMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "docker" => Ok(Self::Docker),
            "url" => Ok(Self::Url),
            other => Err(UnknownMode(other.to_string())),
        }
    }
}

impl fmt::Display for PostgresMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Docker => "docker",
            Self::Url => "url",
        })
    }
}

/// The network a Postgres container joins (`--docker-network`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DockerNetwork {
    /// Docker's default bridge: port 5432 mapped to a host port.
    #[default]
    Bridge,
    /// The host's own network: the server listens on a free 127.0.0.1 port only (for engines
    /// without a bridge).
    Host,
    /// A network of that name, which must exist.
    Named(String),
}

impl FromStr for DockerNetwork {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "bridge" | "default" => Self::Bridge,
            "host" => Self::Host,
            other => Self::Named(other.to_string()),
        })
    }
}

impl fmt::Display for DockerNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Bridge => "bridge",
            Self::Host => "host",
            Self::Named(name) => name,
        })
    }
}

/// How to get a Postgres server.
#[derive(Debug, Clone)]
pub struct PostgresSettings {
    /// Where it comes from.
    pub mode: PostgresMode,
    /// A server URL (`--database-url` or `DATABASE_URL`).
    pub url: Option<String>,
    /// The image to start (`name:tag`).
    pub image: String,
    /// The container's network.
    pub network: DockerNetwork,
    /// Whether a started container flushes to disk on commit (`HOOKBENCH_PG_FSYNC=off` turns
    /// it off, for tests).
    pub fsync: bool,
}

impl PostgresSettings {
    /// Whether `HOOKBENCH_PG_FSYNC` leaves fsync on (anything but `off`).
    pub fn fsync_from_env() -> bool {
        std::env::var(ENV_PG_FSYNC).ok().is_none_or(|v| v != "off")
    }

    /// Settings from the environment: `DATABASE_URL`, `HOOKBENCH_PG_IMAGE`,
    /// `HOOKBENCH_DOCKER_NETWORK`.
    pub fn from_env(mode: PostgresMode) -> Self {
        let var = |k| std::env::var(k).ok().filter(|v: &String| !v.is_empty());
        Self {
            mode,
            url: var("DATABASE_URL"),
            image: var(ENV_PG_IMAGE).unwrap_or_else(|| DEFAULT_IMAGE.to_string()),
            network: var(ENV_DOCKER_NETWORK).and_then(|v| v.parse().ok()).unwrap_or_default(),
            fsync: Self::fsync_from_env(),
        }
    }
}

/// A running Postgres server hookbench may create databases on.
pub struct PostgresServer {
    admin_url: String,
    origin: String,
    container: Option<Container>,
}

impl fmt::Debug for PostgresServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresServer").field("origin", &self.origin).finish_non_exhaustive()
    }
}

impl PostgresServer {
    /// Finds or starts a server as `settings` say.
    pub async fn start(settings: &PostgresSettings) -> Result<Self, ProvisionError> {
        match settings.mode {
            PostgresMode::Url => {
                let url = settings.url.clone().ok_or(ProvisionError::MissingUrl)?;
                Self::at_url(url).await
            }
            PostgresMode::Docker => Self::start_container(settings).await,
            PostgresMode::Auto => match &settings.url {
                Some(url) => Self::at_url(url.clone()).await,
                None => {
                    docker_answers().await.map_err(|e| ProvisionError::PostgresUnavailable(e.to_string()))?;
                    Self::start_container(settings).await
                }
            },
        }
    }

    /// A server named by URL, checked with one connection so a wrong URL fails here, once.
    async fn at_url(url: String) -> Result<Self, ProvisionError> {
        let server = Self { admin_url: url, origin: "DATABASE_URL".to_string(), container: None };
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(5))
            .connect(&server.admin_url)
            .await
            .map_err(|e| ProvisionError::Unreachable(e.to_string()))?;
        pool.close().await;
        Ok(server)
    }

    async fn start_container(settings: &PostgresSettings) -> Result<Self, ProvisionError> {
        let (container, port) = super::container::start(settings).await?;
        let admin_url = format!("postgres://postgres:postgres@127.0.0.1:{port}/postgres");
        let server =
            Self { admin_url, origin: format!("container {}", settings.image), container: Some(container) };
        server.wait_ready().await?;
        Ok(server)
    }

    /// The server may log "ready" a moment before it accepts this connection.
    async fn wait_ready(&self) -> Result<(), ProvisionError> {
        let mut last = None;
        for _ in 0..50 {
            match self.admin_pool().await {
                Ok(pool) => {
                    pool.close().await;
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(last.map_or_else(|| ProvisionError::PostgresUnavailable("not ready".into()), Into::into))
    }

    /// Where the server came from (`DATABASE_URL` or the container's image).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The URL of the server's maintenance database.
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    async fn admin_pool(&self) -> Result<PgPool, sqlx::Error> {
        PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .connect(&self.admin_url)
            .await
    }

    /// The server's version string (`SHOW server_version`).
    pub async fn version(&self) -> Result<String, ProvisionError> {
        let pool = self.admin_pool().await?;
        let v: String = sqlx::query_scalar("SHOW server_version").fetch_one(&pool).await?;
        pool.close().await;
        Ok(v)
    }

    /// The server's default isolation level, as it names it (`SHOW default_transaction_isolation`:
    /// `read committed` unless its configuration says otherwise).
    pub async fn default_isolation(&self) -> Result<String, ProvisionError> {
        let pool = self.admin_pool().await?;
        let level: String = sqlx::query_scalar("SHOW default_transaction_isolation").fetch_one(&pool).await?;
        pool.close().await;
        Ok(level)
    }

    /// Creates a database no other run uses.
    pub async fn fresh_database(&self) -> Result<FreshDatabase, ProvisionError> {
        let name = unique_name();
        let pool = self.admin_pool().await?;
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\""))).execute(&pool).await?;
        pool.close().await;
        let mut url = url::Url::parse(&self.admin_url)
            .map_err(|e| ProvisionError::PostgresUnavailable(format!("bad server URL: {e}")))?;
        url.set_path(&name);
        let url = url.to_string();
        Ok(FreshDatabase { name, url, admin_url: self.admin_url.clone() })
    }

    /// Whether this server is a container hookbench started.
    pub fn is_container(&self) -> bool {
        self.container.is_some()
    }
}

/// A database created for one run.
#[derive(Debug, Clone)]
pub struct FreshDatabase {
    /// Its name.
    pub name: String,
    /// The URL receivers and the checker connect with.
    pub url: String,
    admin_url: String,
}

impl FreshDatabase {
    /// Drops the database, ending any session still connected to it.
    pub async fn drop_database(&self) -> Result<(), ProvisionError> {
        let pool = PgPoolOptions::new().max_connections(1).connect(&self.admin_url).await?;
        sqlx::query(AssertSqlSafe(format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name)))
            .execute(&pool)
            .await?;
        pool.close().await;
        Ok(())
    }
}

/// Why no Docker engine answers: said inside [`ProvisionError::PostgresUnavailable`], beside how
/// to give a server instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoDocker {
    /// The client ran and found no engine (none running, or no permission on its socket).
    #[error("`docker version` found no engine")]
    NoEngine,
    /// The client cannot be run (not installed).
    #[error("cannot run `docker`: {0}")]
    NoClient(#[source] std::io::Error),
    /// The client did not answer in time (an engine that hangs).
    #[error("`docker version` did not answer within {} s", DOCKER_PROBE.as_secs())]
    Silent,
}

/// How long `docker version` has to answer.
const DOCKER_PROBE: Duration = Duration::from_secs(10);

/// Whether a Docker engine answers `docker version` within a few seconds.
pub(crate) async fn docker_answers() -> Result<(), NoDocker> {
    let probe = tokio::process::Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match tokio::time::timeout(DOCKER_PROBE, probe).await {
        Ok(Ok(out)) if out.status.success() => Ok(()),
        Ok(Ok(_)) => Err(NoDocker::NoEngine),
        Ok(Err(e)) => Err(NoDocker::NoClient(e)),
        Err(_) => Err(NoDocker::Silent),
    }
}
