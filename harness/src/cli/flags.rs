//! Flag groups several commands share: where Postgres comes from, the workload, thresholds, how a
//! receiver worker works and the bounds it holds its clients to, how a receiver is spoken to
//! (`audit`, `discover`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use provision::{
    DEFAULT_IMAGE, DockerNetwork, ENV_DOCKER_NETWORK, ENV_PG_IMAGE, PostgresMode, PostgresSettings,
};

use crate::workload::{ARTICLE_EVENTS, ARTICLE_SEED, WorkloadConfig};

/// Where Postgres comes from.
#[derive(Debug, Clone, Args)]
pub struct PostgresArgs {
    /// auto: DATABASE_URL if set, else a Docker container if an engine answers;
    /// docker: always a container (testcontainers); url: the server in --database-url.
    #[arg(long, default_value = "auto")]
    pub postgres: PostgresMode,
    /// A Postgres server to create databases on.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// The Postgres image to start (name:tag).
    #[arg(long, env = ENV_PG_IMAGE, default_value = DEFAULT_IMAGE)]
    pub pg_image: String,
    /// The container's network: bridge (ports mapped as usual), host (no bridge needed; the
    /// server listens on a free 127.0.0.1 port), or the name of another network.
    #[arg(long, env = ENV_DOCKER_NETWORK, default_value = "bridge")]
    pub docker_network: DockerNetwork,
}

impl PostgresArgs {
    /// The provisioning settings these arguments describe.
    pub fn settings(&self) -> PostgresSettings {
        PostgresSettings {
            mode: self.postgres,
            url: self.database_url.clone(),
            image: self.pg_image.clone(),
            network: self.docker_network.clone(),
            fsync: PostgresSettings::fsync_from_env(),
        }
    }
}

/// The workload's parameters. Defaults are the article's.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// Seed of every random draw.
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Number of logical events.
    #[arg(long, default_value_t = ARTICLE_EVENTS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000_000))]
    pub events: usize,
    /// Number of accounts the events are spread over (1 to 10000000).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub accounts: u32,
    /// Chance an event is a credit (else a plan update) (0 to 1).
    #[arg(long, default_value_t = 0.6, value_name = "CHANCE", value_parser = chance, allow_negative_numbers = true)]
    pub p_credit: f64,
    /// Chance a plan update gets a second update in the same second (0 to 1).
    #[arg(long, default_value_t = 0.05, value_name = "CHANCE", value_parser = chance, allow_negative_numbers = true)]
    pub p_tie: f64,
    /// Chance an event is delivered again later (0 to 1).
    #[arg(long, default_value_t = 0.03, value_name = "CHANCE", value_parser = chance, allow_negative_numbers = true)]
    pub p_duplicate: f64,
    /// Chance an attempt's 2xx response is lost after the receiver committed (0 to 1).
    #[arg(long, default_value_t = 0.02, value_name = "CHANCE", value_parser = chance, allow_negative_numbers = true)]
    pub p_ack_lost: f64,
    /// Chance an event's first delivery arrives as two concurrent copies (0 to 1).
    #[arg(long, default_value_t = 0.01, value_name = "CHANCE", value_parser = chance, allow_negative_numbers = true)]
    pub p_concurrent: f64,
    /// Chance a first delivery is moved up to --shuffle-window positions (0 to 1).
    #[arg(long, default_value_t = 0.1, value_name = "CHANCE", value_parser = chance, allow_negative_numbers = true)]
    pub p_shuffle: f64,
    /// How many positions a shuffled delivery may move (0 to 10000).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub shuffle_window: u32,
}

impl WorkloadArgs {
    /// The workload these arguments describe.
    pub fn config(&self) -> WorkloadConfig {
        WorkloadConfig {
            seed: self.seed,
            events: self.events,
            accounts: self.accounts,
            p_credit: self.p_credit,
            p_tie: self.p_tie,
            p_duplicate: self.p_duplicate,
            p_ack_lost: self.p_ack_lost,
            p_concurrent: self.p_concurrent,
            p_shuffle: self.p_shuffle,
            shuffle_window: self.shuffle_window,
        }
    }
}

/// `--fail-on` thresholds (bench and audit).
#[derive(Debug, Clone, Default, Args)]
pub struct ThresholdArgs {
    /// Fail the run (exit 3) when a figure crosses a line: `[SCOPE:]FIGURE OP NUMBER`, such as
    /// `dup_events>0`, `postgres/atomic:lost>0`, `p99_ms>250`, `throughput_per_s<1000` (an audit's
    /// scope is a check: `crash:lost>0`, `capacity_per_s<100`). Repeatable; docs/reports.md lists
    /// the figures.
    #[arg(long, value_name = "EXPR", value_parser = crate::threshold::Threshold::parse)]
    pub fail_on: Vec<crate::threshold::Threshold>,
    /// Read thresholds from FILE, one expression a line (`#` comments); at most 1 MiB.
    #[arg(long, value_name = "FILE")]
    pub fail_on_file: Option<PathBuf>,
}

/// A receiver URL the audit cannot send to, said without the URL: clap's message quotes the value
/// already. The URL's own error is not its source either, since that would say the URL again.
#[derive(Debug, thiserror::Error)]
#[error("not http://host[:port]/path: {}", .0.reason())]
pub(crate) struct NotAReceiverUrl(crate::audit::BadUrl);

/// A receiver's webhook URL as the audit sends to it: `http://host[:port]/path`, refused at parse
/// time, so that a config file's `url = "--strict"` is refused naming the key and never read as a
/// flag.
pub(crate) fn receiver_url(s: &str) -> Result<String, NotAReceiverUrl> {
    match crate::audit::authority_and_path(s) {
        Ok(_) => Ok(s.to_string()),
        Err(e) => Err(NotAReceiverUrl(e)),
    }
}

/// How each receiver worker works (shared by `serve` and `bench`).
#[derive(Debug, Clone, Args)]
pub struct ReceiverArgs {
    /// Simulated work per delivery, such as 5ms (after the check in check-then-insert, before
    /// the transaction elsewhere, never inside one). 0s to 60s.
    #[arg(long, default_value = "0s", value_parser = duration_within(Duration::ZERO, MAX_DELAY))]
    pub work_delay: Duration,
    /// Inbox claim loops per worker process (inbox design only; 0 to 64: 0 leaves the inbox to
    /// another process's loops).
    #[arg(long, default_value_t = 2, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=64))]
    pub inbox_workers: usize,
    /// Database connections in each worker process's pool.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_connections: u32,
}

/// Why a duration flag's value is refused (clap prints it after the flag and the value).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadDuration {
    /// Not humantime's syntax (`5ms`, `1h 30m`): humantime's own words.
    #[error(transparent)]
    Syntax(#[from] humantime::DurationError),
    /// A duration outside the flag's bounds.
    #[error(
        "{given} is out of bounds: {} to {}",
        humantime::format_duration(*.min),
        humantime::format_duration(*.max)
    )]
    OutOfBounds { given: String, min: Duration, max: Duration },
}

/// Why a number flag's value is refused (clap prints it after the flag and the value).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadNumber {
    /// Not a number Rust reads. The parser's own error is left out: it says no more.
    #[error("{0} is not a number")]
    NotANumber(String),
    /// `NaN`, an infinity, or a number outside the flag's bounds.
    #[error("{given} is out of bounds: {min} to {max}")]
    OutOfBounds { given: String, min: f64, max: f64 },
    /// A `--rate` neither 0 nor within [`MIN_RATE`] to [`MAX_RATE`].
    #[error("{0} is out of bounds: 0 (unpaced) or {MIN_RATE} to {MAX_RATE} events per second")]
    RateOutOfBounds(String),
}

/// A duration flag's parser: humantime's syntax, refused outside `min..=max` (`--work-delay
/// 500000y` would sleep for ever; a timeout of 0 would fail every attempt).
pub(crate) fn duration_within(
    min: Duration,
    max: Duration,
) -> impl Fn(&str) -> Result<Duration, BadDuration> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let d = humantime::parse_duration(s)?;
        if d < min || d > max {
            return Err(BadDuration::OutOfBounds { given: s.to_string(), min, max });
        }
        Ok(d)
    }
}

/// A number flag's parser: a finite number within `min..=max` (`NaN` and `inf` refused).
pub(crate) fn number_within(
    min: f64,
    max: f64,
) -> impl Fn(&str) -> Result<f64, BadNumber> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let x: f64 = s.trim().parse().map_err(|_| BadNumber::NotANumber(s.to_string()))?;
        if !x.is_finite() || x < min || x > max {
            return Err(BadNumber::OutOfBounds { given: s.to_string(), min, max });
        }
        Ok(x)
    }
}

/// A chance flag's parser: a number from 0 to 1.
pub(crate) fn chance(s: &str) -> Result<f64, BadNumber> {
    number_within(0.0, 1.0)(s)
}

/// The fewest events per second `--rate` paces (at 0.01/s, a 100,000,000-event plan spans 317
/// years, still a `Duration`; below, the sender's pacing arithmetic overflowed and panicked).
pub const MIN_RATE: f64 = 0.01;
/// The most events per second `--rate` paces.
pub const MAX_RATE: f64 = 1_000_000.0;

/// `--rate`: 0 (unpaced), or from [`MIN_RATE`] to [`MAX_RATE`] events per second.
pub(crate) fn rate(s: &str) -> Result<f64, BadNumber> {
    let x: f64 = s.trim().parse().map_err(|_| BadNumber::NotANumber(s.to_string()))?;
    if x == 0.0 || (x.is_finite() && (MIN_RATE..=MAX_RATE).contains(&x)) {
        return Ok(x);
    }
    Err(BadNumber::RateOutOfBounds(s.to_string()))
}

/// The longest simulated work or side-effect delay per delivery.
pub const MAX_DELAY: Duration = Duration::from_secs(60);
/// The longest timeout or wait a flag may set.
pub const MAX_WAIT: Duration = Duration::from_secs(3600);
/// The shortest timeout a flag may set.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// How `audit` and `discover` speak to a receiver: its signing scheme, its secrets, its bodies.
#[derive(Debug, Clone, clap::Args)]
pub struct TargetArgs {
    /// How deliveries are signed, as the provider named signs them: standard-webhooks, stripe,
    /// github, shopify, slack, twilio, square, paddle, sendgrid, discord, linear, gitlab, zoom,
    /// twitch, or none [default: standard-webhooks]. Given, it also sets the provider's --payload
    /// when none is given, and --provider (its timeout and retry schedule).
    #[arg(long, value_enum)]
    pub signing: Option<crate::wire::Scheme>,
    /// A signing secret as the provider shows it (`whsec_...` for Standard Webhooks and Stripe;
    /// for sendgrid and discord the PRIVATE key, base64 of its PKCS#8 DER, which `hookbench keys
    /// NAME` makes). Give it twice, old and new, to hold the rotation check to both.
    #[arg(long, env = "HOOKBENCH_AUDIT_SECRET", hide_env_values = true)]
    pub secret: Vec<String>,
    /// The bodies: hookbench, a provider's own (stripe: an Event; github: the event's payload
    /// with X-GitHub-Event; shopify: the topic's resource with the X-Shopify-* headers;
    /// standard-webhooks: {type, timestamp, data}; slack, twilio, square, paddle, sendgrid,
    /// discord, linear, gitlab, zoom, twitch: each provider's event, docs/audit.md), or a template
    /// file (docs/audit.md) [default: the provider --signing names, when given; else hookbench].
    #[arg(long, value_name = "hookbench|PROVIDER|FILE")]
    pub payload: Option<String>,
    /// The provider's event type a credit or an update is sent as (repeatable; a provider's
    /// payload only). Defaults: stripe credit=payment_intent.succeeded,
    /// update=customer.subscription.updated; github credit=issues.opened, update=issues.edited;
    /// shopify credit=orders/create, update=customers/update; standard-webhooks
    /// credit=credit.added, update=plan.updated. The known types: docs/audit.md.
    #[arg(long = "event-type", value_name = "credit|update=TYPE")]
    pub event_type: Vec<crate::wire::EventTypeChoice>,
    /// Where the account, the amount or the version is written in a provider's body, a JSON
    /// pointer (repeatable), e.g. account=/data/object/metadata/account. A string there keeps
    /// its id prefix (cus_<account>); anything else becomes the number. Defaults: stripe
    /// account=/data/object/customer, amount=/data/object/amount (invoice amount_paid, checkout
    /// amount_total), version=/data/object/current_period_end (subscriptions); github
    /// account=/repository/id, version=/issue/comments; shopify account=/customer/id (customers:
    /// /id), amount=/total_price, version=/orders_count (customers); standard-webhooks /data/account,
    /// /data/amount, /data/version.
    #[arg(long = "field", value_name = "account|amount|version=POINTER")]
    pub field: Vec<crate::wire::FieldMapping>,
    /// The URL Twilio and Square sign, when it is not the URL audited: a receiver behind a proxy
    /// verifies against the address its provider knows [default: the URL audited].
    #[arg(long = "signed-url", value_name = "URL")]
    pub signed_url: Option<String>,
}

impl TargetArgs {
    /// The receiver at `url` as these flags speak to it, held to `provider`'s rules (else to the
    /// provider `--signing` names).
    pub fn target(
        &self,
        url: &str,
        provider: Option<crate::wire::Provider>,
    ) -> anyhow::Result<crate::audit::Target> {
        let signing = self.signing.unwrap_or_default();
        let name = crate::wire::Payload::implied(self.payload.as_deref(), self.signing);
        Ok(crate::audit::Target {
            url: url.to_string(),
            signing,
            provider: provider.or(signing.provider()),
            secrets: self.secret.clone(),
            payload: crate::wire::Payload::with(&name, &self.event_type, &self.field)?,
            signed_url: self.signed_url.clone(),
        })
    }
}
