//! MySQL and MariaDB: a server from `MYSQL_URL` or started in a container, and a fresh database
//! per run on it, as [`crate::postgres`] does for Postgres.
//!
//! The container is the official `mariadb` image ([`DEFAULT_MYSQL_IMAGE`], pinned) when it can be
//! pulled, else one built from this machine's Debian `mariadb-server` (docker/mariadb-local/,
//! chosen by scripts/mariadb-image.sh through `HOOKBENCH_MYSQL_IMAGE`). Both take the root
//! password from `MARIADB_ROOT_PASSWORD` and pass arguments that start with `-` to the server.

use std::fmt;
use std::time::Duration;

use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use sqlx::{AssertSqlSafe, Row};

use super::postgres::{DockerNetwork, ENV_DOCKER_NETWORK, ENV_PG_FSYNC};
use super::{ProvisionError, unique_name};

/// The image started when none is chosen: the official MariaDB, its version pinned.
pub const DEFAULT_MYSQL_IMAGE: &str = "mariadb:11.4.5";
/// Environment variable choosing the MySQL/MariaDB image (`name:tag`).
pub const ENV_MYSQL_IMAGE: &str = "HOOKBENCH_MYSQL_IMAGE";
/// Environment variable naming a running server: `mysql://user:password@host:port/db`.
pub const ENV_MYSQL_URL: &str = "MYSQL_URL";
/// The root password of a container hookbench starts (it listens on 127.0.0.1 or a private
/// bridge only, and lives as long as the run).
const ROOT_PASSWORD: &str = "hookbench";

/// How to get a MySQL or MariaDB server.
#[derive(Debug, Clone)]
pub struct MysqlSettings {
    /// A server URL (`MYSQL_URL`); when set, no container is started.
    pub url: Option<String>,
    /// The image to start (`name:tag`).
    pub image: String,
    /// The container's network.
    pub network: DockerNetwork,
    /// Whether a started container flushes its log to disk on every commit
    /// (`HOOKBENCH_PG_FSYNC=off` turns it off for the tests, as for Postgres).
    pub fsync: bool,
}

impl MysqlSettings {
    /// Settings from the environment: `MYSQL_URL`, `HOOKBENCH_MYSQL_IMAGE`,
    /// `HOOKBENCH_DOCKER_NETWORK`, `HOOKBENCH_PG_FSYNC`.
    pub fn from_env() -> Self {
        let var = |k| std::env::var(k).ok().filter(|v: &String| !v.is_empty());
        Self {
            url: var(ENV_MYSQL_URL),
            image: var(ENV_MYSQL_IMAGE).unwrap_or_else(|| DEFAULT_MYSQL_IMAGE.to_string()),
            network: var(ENV_DOCKER_NETWORK).and_then(|v| v.parse().ok()).unwrap_or_default(),
            fsync: var(ENV_PG_FSYNC).is_none_or(|v| v != "off"),
        }
    }
}

/// What a server is, as a report records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlFacts {
    /// `SELECT VERSION()`, e.g. `10.11.19-MariaDB-0+deb12u1`.
    pub version: String,
    /// MariaDB's `innodb_snapshot_isolation`: on, REPEATABLE READ refuses to write a row changed
    /// since its snapshot (an error, and a retry) instead of overwriting it. `None` where the
    /// server has no such variable (MySQL, MariaDB before 10.6.18).
    pub snapshot_isolation: Option<bool>,
    /// The server's default isolation level, as it names it (`REPEATABLE-READ`).
    pub default_isolation: String,
}

/// A running MySQL or MariaDB server hookbench may create databases on.
pub struct MysqlServer {
    admin_url: String,
    origin: String,
    #[cfg(feature = "containers")]
    _container: Option<testcontainers::ContainerAsync<testcontainers::GenericImage>>,
}

impl fmt::Debug for MysqlServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MysqlServer").field("origin", &self.origin).finish_non_exhaustive()
    }
}

impl MysqlServer {
    /// `MYSQL_URL` when set; else a container, when a Docker engine answers; else a clear error.
    pub async fn start(settings: &MysqlSettings) -> Result<Self, ProvisionError> {
        match &settings.url {
            Some(url) => Self::at_url(url.clone()).await,
            None => {
                super::postgres::docker_answers()
                    .await
                    .map_err(|e| ProvisionError::MysqlUnavailable(e.to_string()))?;
                Self::start_container(settings).await
            }
        }
    }

    async fn at_url(url: String) -> Result<Self, ProvisionError> {
        let server = Self {
            admin_url: url,
            origin: ENV_MYSQL_URL.to_string(),
            #[cfg(feature = "containers")]
            _container: None,
        };
        let pool = server
            .admin_pool(Duration::from_secs(5))
            .await
            .map_err(|e| ProvisionError::MysqlUnreachable(e.to_string()))?;
        pool.close().await;
        Ok(server)
    }

    #[cfg(not(feature = "containers"))]
    async fn start_container(_settings: &MysqlSettings) -> Result<Self, ProvisionError> {
        Err(ProvisionError::NoContainers)
    }

    #[cfg(feature = "containers")]
    async fn start_container(settings: &MysqlSettings) -> Result<Self, ProvisionError> {
        use testcontainers::core::IntoContainerPort;
        use testcontainers::runners::AsyncRunner;
        use testcontainers::{GenericImage, ImageExt};

        let (name, tag) = settings.image.rsplit_once(':').unwrap_or((settings.image.as_str(), "latest"));
        let container_error = |source: testcontainers::TestcontainersError| ProvisionError::Container {
            image: settings.image.clone(),
            source: Box::new(source),
        };
        let mut args = vec!["--max-connections=600".to_string(), "--skip-name-resolve".to_string()];
        if !settings.fsync {
            // The tests judge transactions, not a server's crash durability.
            args.push("--innodb-flush-log-at-trx-commit=0".to_string());
            args.push("--sync-binlog=0".to_string());
        }
        let label = std::env::var(super::ENV_SESSION).unwrap_or_else(|_| "none".to_string());
        let (container, port) = if settings.network == DockerNetwork::Host {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            args.push(format!("--port={port}"));
            args.push("--bind-address=127.0.0.1".to_string());
            let request = GenericImage::new(name, tag)
                .with_network("host")
                .with_env_var("MARIADB_ROOT_PASSWORD", ROOT_PASSWORD)
                .with_label("org.hookbench", "mariadb")
                .with_label("org.hookbench.session", label)
                .with_startup_timeout(Duration::from_secs(120))
                .with_cmd(args);
            (request.start().await.map_err(container_error)?, port)
        } else {
            let mut request = GenericImage::new(name, tag)
                .with_exposed_port(3306.tcp())
                .with_env_var("MARIADB_ROOT_PASSWORD", ROOT_PASSWORD)
                .with_label("org.hookbench", "mariadb")
                .with_label("org.hookbench.session", label)
                .with_startup_timeout(Duration::from_secs(120))
                .with_cmd(args);
            if let DockerNetwork::Named(name) = &settings.network {
                request = request.with_network(name.as_str());
            }
            let container = request.start().await.map_err(container_error)?;
            let port = container.get_host_port_ipv4(3306).await.map_err(container_error)?;
            (container, port)
        };
        let server = Self {
            admin_url: format!("mysql://root:{ROOT_PASSWORD}@127.0.0.1:{port}/mysql"),
            origin: format!("container {}", settings.image),
            _container: Some(container),
        };
        server.wait_ready().await?;
        Ok(server)
    }

    /// The official image runs a server without networking while it initialises: the server is
    /// ready when a TCP connection is taken.
    #[cfg(feature = "containers")]
    async fn wait_ready(&self) -> Result<(), ProvisionError> {
        let mut last = None;
        for _ in 0..240 {
            match self.admin_pool(Duration::from_secs(2)).await {
                Ok(pool) => {
                    pool.close().await;
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Err(ProvisionError::MysqlUnavailable(format!(
            "the container did not take a connection within 60 s: {}",
            last.map_or_else(|| "no attempt".to_string(), |e| e.to_string())
        )))
    }

    async fn admin_pool(&self, timeout: Duration) -> Result<MySqlPool, sqlx::Error> {
        MySqlPoolOptions::new().max_connections(1).acquire_timeout(timeout).connect(&self.admin_url).await
    }

    /// Where the server came from (`MYSQL_URL` or the container's image).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The server's version, default isolation and `innodb_snapshot_isolation`.
    pub async fn facts(&self) -> Result<MysqlFacts, ProvisionError> {
        let pool = self.admin_pool(Duration::from_secs(10)).await?;
        let facts = read_facts(&pool).await;
        pool.close().await;
        facts
    }

    /// Creates a database no other run uses.
    pub async fn fresh_database(&self) -> Result<FreshMysqlDatabase, ProvisionError> {
        let name = unique_name();
        let pool = self.admin_pool(Duration::from_secs(10)).await?;
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE `{name}`"))).execute(&pool).await?;
        pool.close().await;
        let mut url = url::Url::parse(&self.admin_url)
            .map_err(|e| ProvisionError::MysqlUnavailable(format!("bad server URL: {e}")))?;
        url.set_path(&name);
        Ok(FreshMysqlDatabase { name, url: url.to_string(), admin_url: self.admin_url.clone() })
    }
}

/// The facts, read on one connection. MariaDB 10.11 knows `@@tx_isolation` and not
/// `@@transaction_isolation`; MySQL 8 the other way round.
async fn read_facts(pool: &MySqlPool) -> Result<MysqlFacts, ProvisionError> {
    let version: String = sqlx::query_scalar("SELECT VERSION()").fetch_one(pool).await?;
    let mut default_isolation = String::new();
    for sql in ["SELECT @@GLOBAL.transaction_isolation", "SELECT @@GLOBAL.tx_isolation"] {
        if let Ok(level) = sqlx::query_scalar::<_, String>(sql).fetch_one(pool).await {
            default_isolation = level;
            break;
        }
    }
    let snapshot_isolation = sqlx::query("SHOW GLOBAL VARIABLES LIKE 'innodb_snapshot_isolation'")
        .fetch_optional(pool)
        .await?
        .and_then(|row| row.try_get::<String, _>(1).ok())
        .map(|v| v.eq_ignore_ascii_case("ON") || v == "1");
    Ok(MysqlFacts { version, snapshot_isolation, default_isolation })
}

/// A database created for one run.
#[derive(Debug, Clone)]
pub struct FreshMysqlDatabase {
    /// Its name.
    pub name: String,
    /// The URL receivers and the checker connect with.
    pub url: String,
    admin_url: String,
}

impl FreshMysqlDatabase {
    /// Drops the database.
    pub async fn drop_database(&self) -> Result<(), ProvisionError> {
        let pool = MySqlPoolOptions::new().max_connections(1).connect(&self.admin_url).await?;
        sqlx::query(AssertSqlSafe(format!("DROP DATABASE IF EXISTS `{}`", self.name))).execute(&pool).await?;
        pool.close().await;
        Ok(())
    }
}
