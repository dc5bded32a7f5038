//! `hookbench sign`: the Standard Webhooks headers for a body, for curl.

use std::io::{self, Read, Write};

use anyhow::{Context, bail};
use receivers::signature::{HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP, Secret};

use super::SignArgs;

/// `hookbench sign`.
pub(super) fn run(args: &SignArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let secrets = args
        .secret
        .iter()
        .map(|s| s.parse::<Secret>())
        .collect::<Result<Vec<_>, _>>()
        .context("bad --secret")?;
    if args.id.is_empty() || args.id.contains(['\r', '\n']) {
        bail!("--id must be a non-empty single line");
    }
    let mut body = Vec::new();
    match args.body.as_deref() {
        None => io::stdin().read_to_end(&mut body).context("reading the body from standard input")?,
        Some(p) if p.as_os_str() == "-" => {
            io::stdin().read_to_end(&mut body).context("reading the body from standard input")?
        }
        Some(p) => {
            body = std::fs::read(p).with_context(|| format!("reading the body from {}", p.display()))?;
            body.len()
        }
    };
    let timestamp = args.timestamp.unwrap_or_else(|| jiff::Timestamp::now().as_second());
    let signatures: Vec<String> = secrets.iter().map(|s| s.sign(&args.id, timestamp, &body)).collect();
    writeln!(out, "{HEADER_ID}: {}", args.id)?;
    writeln!(out, "{HEADER_TIMESTAMP}: {timestamp}")?;
    writeln!(out, "{HEADER_SIGNATURE}: {}", signatures.join(" "))?;
    Ok(())
}
