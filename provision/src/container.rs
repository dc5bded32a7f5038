//! A Postgres server in a container, started with testcontainers: behind the `containers` feature
//! (on by default), since its Docker API client and gRPC stack (bollard, tonic) are most of a
//! cold build. Built without it, hookbench reaches Postgres only through `DATABASE_URL`, and
//! asking for a container says so.

use super::ProvisionError;
use super::postgres::PostgresSettings;

#[cfg(feature = "containers")]
pub use with_containers::{Container, start};
#[cfg(not(feature = "containers"))]
pub use without_containers::{Container, start};

/// Environment variable naming this session in the containers' `org.hookbench.session` label, so
/// a test script can remove exactly the containers its tests left.
pub const ENV_SESSION: &str = "HOOKBENCH_SESSION";

#[cfg(feature = "containers")]
mod with_containers {
    use std::time::Duration;

    use testcontainers::runners::AsyncRunner;
    use testcontainers::{ContainerAsync, ImageExt};
    use testcontainers_modules::postgres::Postgres;

    use super::{ENV_SESSION, PostgresSettings, ProvisionError};
    use crate::postgres::DockerNetwork;

    /// A running container, stopped and removed when dropped.
    pub type Container = ContainerAsync<Postgres>;

    /// Starts the server `settings` describe; its container and the host port it answers on.
    pub async fn start(settings: &PostgresSettings) -> Result<(Container, u16), ProvisionError> {
        let (name, tag) = settings.image.rsplit_once(':').unwrap_or((settings.image.as_str(), "latest"));
        let image = Postgres::default().with_fsync_enabled();
        // Durable by default: a run measures a server as it would be deployed.
        let no_flush = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"];
        let flush_args: &[&str] = if settings.fsync { &[] } else { &no_flush };
        let container_error = |source: testcontainers::TestcontainersError| ProvisionError::Container {
            image: settings.image.clone(),
            source: Box::new(source),
        };
        if settings.network == DockerNetwork::Host {
            // No bridge: the server shares the host's network and listens on 127.0.0.1 only.
            let port = free_port()?;
            let request = image
                .with_name(name)
                .with_tag(tag)
                .with_network("host")
                .with_label("org.hookbench", "postgres")
                .with_label("org.hookbench.session", session_label())
                .with_startup_timeout(Duration::from_secs(120))
                .with_cmd(
                    ["-c", "listen_addresses=127.0.0.1", "-c", &format!("port={port}")]
                        .into_iter()
                        .chain(flush_args.iter().copied())
                        .map(str::to_string),
                );
            return Ok((request.start().await.map_err(container_error)?, port));
        }
        let mut request = image
            .with_name(name)
            .with_tag(tag)
            .with_label("org.hookbench", "postgres")
            .with_label("org.hookbench.session", session_label())
            .with_startup_timeout(Duration::from_secs(120));
        if !settings.fsync {
            request = request.with_cmd(flush_args.iter().map(|a| a.to_string()));
        }
        // Docker's predefined `bridge` is the default; naming it would ask to create it.
        if let DockerNetwork::Named(name) = &settings.network {
            request = request.with_network(name.as_str());
        }
        let container = request.start().await.map_err(container_error)?;
        let port = container.get_host_port_ipv4(5432).await.map_err(container_error)?;
        Ok((container, port))
    }

    fn session_label() -> String {
        std::env::var(ENV_SESSION).unwrap_or_else(|_| "none".to_string())
    }

    fn free_port() -> std::io::Result<u16> {
        Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
    }
}

#[cfg(not(feature = "containers"))]
mod without_containers {
    use super::{PostgresSettings, ProvisionError};

    /// No container can exist in this build.
    pub enum Container {}

    /// Refuses: this build has no container support.
    pub async fn start(_settings: &PostgresSettings) -> Result<(Container, u16), ProvisionError> {
        Err(ProvisionError::NoContainers)
    }
}
