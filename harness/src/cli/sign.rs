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
    /// File holding the exact body bytes; `-` or nothing reads standard input. At most 64 MiB.
    #[arg(value_name = "FILE|-")]
    pub body: Option<PathBuf>,
}

/// `hookbench sign`: the sender's own signer, as every delivery is signed.
/// The largest body `sign` reads (64 MiB): far above any webhook a provider sends.
pub const MAX_BODY_BYTES: u64 = 64 << 20;

/// Standard input, at most [`MAX_BODY_BYTES`] of it.
fn stdin_capped() -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    io::stdin()
        .take(MAX_BODY_BYTES + 1)
        .read_to_end(&mut body)
        .context("reading the body from standard input")?;
    if body.len() as u64 > MAX_BODY_BYTES {
        return Err(super::usage(format!(
            "the body on standard input is larger than {MAX_BODY_BYTES} bytes"
        )));
    }
    Ok(body)
}

pub(super) fn run(args: &SignArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let signer = Signer::new(Scheme::StandardWebhooks, &args.secret)
        .map_err(|e| super::usage(format!("bad --secret: {e}")))?;
    if args.id.is_empty() || args.id.contains(['\r', '\n']) {
        return Err(super::usage("--id must be a non-empty single line"));
    }
    let body = match args.body.as_deref() {
        None => stdin_capped()?,
        Some(p) if p.as_os_str() == "-" => stdin_capped()?,
        Some(p) => crate::files::read_capped(p, MAX_BODY_BYTES, "a body to sign")
            .map_err(|e| super::usage(format!("reading the body from {e}")))?,
    };
    let timestamp = args.timestamp.unwrap_or_else(|| jiff::Timestamp::now().as_second());
    let attempt = Attempt { id: &args.id, event_type: "", timestamp, body: &body };
    for (name, value) in signer.headers(&attempt) {
        writeln!(out, "{name}: {value}")?;
    }
    Ok(())
}
