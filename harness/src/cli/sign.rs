//! `hookbench sign`: the Standard Webhooks headers for a body, for curl.

use std::io::{self, Read, Write};

use anyhow::Context;

use crate::wire::signing::Attempt;
use crate::wire::{Scheme, Signer};
use clap::Args;
use std::path::PathBuf;

/// Arguments of `hookbench sign`.
#[derive(Debug, Clone, Args)]
pub struct SignArgs {
    /// Signing secret, `whsec_<base64>`; repeat it to sign with several (key rotation).
    #[arg(long, required = true, env = "HOOKBENCH_SECRET", hide_env_values = true)]
    pub secret: Vec<String>,
    /// The message id (`webhook-id`), stable across a message's attempts.
    #[arg(long)]
    pub id: String,
    /// Unix time in seconds to sign at [default: now].
    #[arg(long, allow_negative_numbers = true)]
    pub timestamp: Option<i64>,
    /// File holding the exact body bytes; `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    pub body: Option<PathBuf>,
}

/// `hookbench sign`: the sender's own signer, as every delivery is signed.
pub(super) fn run(args: &SignArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let signer = Signer::new(Scheme::StandardWebhooks, &args.secret)
        .map_err(|e| super::usage(format!("bad --secret: {e}")))?;
    if args.id.is_empty() || args.id.contains(['\r', '\n']) {
        return Err(super::usage("--id must be a non-empty single line"));
    }
    let mut body = Vec::new();
    match args.body.as_deref() {
        None => io::stdin().read_to_end(&mut body).context("reading the body from standard input")?,
        Some(p) if p.as_os_str() == "-" => {
            io::stdin().read_to_end(&mut body).context("reading the body from standard input")?
        }
        Some(p) => {
            body = std::fs::read(p)
                .map_err(|e| super::usage(format!("reading the body from {}: {e}", p.display())))?;
            body.len()
        }
    };
    let timestamp = args.timestamp.unwrap_or_else(|| jiff::Timestamp::now().as_second());
    let attempt = Attempt { id: &args.id, event_type: "", timestamp, body: &body };
    for (name, value) in signer.headers(&attempt) {
        writeln!(out, "{name}: {value}")?;
    }
    Ok(())
}
