//! `hookbench discover URL`: its flags (the audit's own for the receiver and its database), the
//! discovery, its words on stderr and, on stdout, a `--config` file for `hookbench audit` whose
//! queries judge the effect: `hookbench discover URL ... > hookbench.toml` then `hookbench audit
//! --config hookbench.toml`. Exit 2 naming what to fix when nothing could be proposed.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use clap::Args;
use toml::Value;

use super::flags::{TargetArgs, duration_within};
use super::{runtime, usage};
use crate::audit::discover::{self, DiscoverConfig, Discovery};
use crate::progress::StepLines;

/// Arguments of `hookbench discover`.
#[derive(Debug, Clone, Args)]
pub struct DiscoverArgs {
    /// The receiver's webhook URL (http://host:port/path).
    #[arg(value_parser = super::flags::receiver_url)]
    pub url: String,
    /// How deliveries are signed and what they carry, as `audit` takes them.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The receiver's database, read-only (postgres://... or sqlite:...): a copy or a test
    /// database of its own, which nothing else writes to while discover runs.
    #[arg(long, value_name = "URL")]
    pub observe_db: String,
    /// What each of discover's queries may take.
    #[command(flatten)]
    pub query_limits: super::query_limits::QueryLimitArgs,
    /// How long the database must show no change to count as quiet (100ms to 10m).
    #[arg(long, default_value = "1s", value_parser = duration_within(Duration::from_millis(100), Duration::from_secs(600)))]
    pub quiet: Duration,
    /// How long to wait at most for the database to be quiet after a delivery (1s to 1h).
    #[arg(long, default_value = "60s", value_parser = duration_within(Duration::from_secs(1), Duration::from_secs(3600)))]
    pub settle_max: Duration,
    /// An attempt taking longer counts as no answer (10ms to 10m).
    #[arg(long, default_value = "10s", value_parser = duration_within(Duration::from_millis(10), Duration::from_secs(600)))]
    pub timeout: Duration,
    /// The prefix of the ids discover sends (default: `d` and the time in base 36).
    #[arg(long)]
    pub id_prefix: Option<String>,
    /// The account the credit goes to, 0 to 10^15 (default: from the time, one no audit used;
    /// the receiver must take a credit to an account it does not know yet, or point this at one
    /// that exists).
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..=1_000_000_000_000_000))]
    pub account_base: Option<i64>,
    /// No live status line: plain lines on stderr instead.
    #[arg(long)]
    pub no_progress: bool,
}

/// Any error before or during discover is exit status 2.
fn could_not_run(err: impl std::fmt::Display) -> anyhow::Error {
    usage(format!("discover could not run: {err:#}"))
}

pub(super) fn run(args: &DiscoverArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let target = args.target.target(&args.url, None).map_err(could_not_run)?;
    target.signer().map_err(could_not_run)?;
    let config = DiscoverConfig {
        target,
        observe_db: args.observe_db.clone(),
        query_limits: args.query_limits.limits(),
        quiet: args.quiet,
        settle_max: args.settle_max,
        timeout: args.timeout,
        id_prefix: args.id_prefix.clone(),
        account_base: args.account_base,
    };
    let lines = StepLines::new("hookbench discover", !args.no_progress && io::stderr().is_terminal());
    let step = move |what: &str| lines.say(what);
    let found = runtime()
        .map_err(could_not_run)?
        .block_on(discover::discover(&config, &step))
        .map_err(could_not_run)?;
    let mut stderr = io::stderr();
    for line in &found.words {
        writeln!(stderr, "hookbench discover: {}", crate::printable::line(line))?;
    }
    if found.proposal.is_empty() {
        return Err(usage(format!(
            "nothing the credit changed carries its account ({}) or its amount ({}), so no query can count its applies: \
             the tables above are bookkeeping, logs or unrelated; point --observe-db at the database the handler's \
             effect is written to, or give the audit --sink for an effect outside it",
            found.credit.account, found.credit.amount
        )));
    }
    write!(out, "{}", config_file(args, &config, &found))?;
    Ok(())
}

/// The `--config` file for `hookbench audit`: what discover was told about the receiver, the
/// queries it proposes, and its words as comments. The secret is never written.
fn config_file(args: &DiscoverArgs, config: &DiscoverConfig, found: &Discovery) -> String {
    let t = &config.target;
    let mut out = String::from(
        "#:schema https://raw.githubusercontent.com/hookbench/hookbench/main/docs/schema/hookbench.audit.schema.json\n",
    );
    out.push_str(&format!(
        "# Written by `hookbench discover` on {} against {}: a proposal, to read before\n\
         #   hookbench audit --config THIS_FILE\n\
         # (the signing secret from --secret or HOOKBENCH_AUDIT_SECRET: it is never written here).\n#\n",
        jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M UTC"),
        crate::printable::line(&t.url)
    ));
    for line in &found.words {
        out.push_str(&format!("# {}\n", crate::printable::line(line)));
    }
    let string = |s: &str| Value::String(s.to_string()).to_string();
    let list = |v: Vec<String>| Value::Array(v.into_iter().map(Value::String).collect()).to_string();
    out.push_str(&format!("url = {}\n", string(&t.url)));
    out.push_str(&format!("signing = {}\n", string(t.signing.as_str())));
    let a = &args.target;
    // As `--payload` takes it (a report's name of a provider's bodies adds their types).
    out.push_str(&format!(
        "payload = {}\n",
        string(&crate::wire::Payload::implied(a.payload.as_deref(), a.signing))
    ));
    if !a.event_type.is_empty() {
        out.push_str(&format!(
            "event-type = {}\n",
            list(a.event_type.iter().map(ToString::to_string).collect())
        ));
    }
    if !a.field.is_empty() {
        out.push_str(&format!("field = {}\n", list(a.field.iter().map(ToString::to_string).collect())));
    }
    out.push_str(&format!("observe-db = {}\n", string(&config.observe_db)));
    let p = &found.proposal;
    for (key, query) in
        [("applied-query", &p.applied), ("balance-query", &p.balance), ("count-query", &p.count)]
    {
        if let Some(q) = query {
            out.push_str(&format!("{key} = {}\n", string(q)));
        }
    }
    out
}
