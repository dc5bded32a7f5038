//! `hookbench sign`: a provider's signature headers for a body, for curl; `--public-key` prints
//! the public half of an asymmetric scheme's key as the provider's dashboard shows it.
//! `hookbench keys NAME`: a new key pair for SendGrid or Discord.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::wire::signing::Attempt;
use crate::wire::signing::keys::{KeyKind, generate};
use crate::wire::{PathQuery, Scheme, Signer};

/// Arguments of `hookbench sign`.
#[derive(Debug, Clone, Args)]
pub struct SignArgs {
    /// How to sign, as the provider named signs (the names --signing takes in `audit`).
    #[arg(long, value_enum, default_value_t = Scheme::StandardWebhooks)]
    pub signing: Scheme,
    /// Signing secret as the provider shows it (`whsec_<base64>` for Standard Webhooks and
    /// Stripe; base64 of a PKCS#8 private key for sendgrid and discord); repeat it to sign with
    /// several (key rotation, where the provider sends several signatures).
    #[arg(long, required = true, env = "HOOKBENCH_SECRET", hide_env_values = true)]
    pub secret: Vec<String>,
    /// Print the public key of the first --secret as the provider's dashboard shows it (SendGrid:
    /// base64 of the DER SubjectPublicKeyInfo; Discord: hex of the raw 32 bytes), and nothing
    /// else.
    #[arg(long = "public-key")]
    pub public_key: bool,
    /// The delivery id, stable across a delivery's attempts (`webhook-id`, `X-GitHub-Delivery`,
    /// `Linear-Delivery`, ...; ignored by the schemes whose id is in the body).
    #[arg(long, required_unless_present = "public_key")]
    pub id: Option<String>,
    /// The event type, for the schemes that name it in a header (`X-GitHub-Event`,
    /// `X-Shopify-Topic`, `Linear-Event`).
    #[arg(long = "event-type", default_value = "")]
    pub event_type: String,
    /// The receiver's URL as the provider knows it: Twilio and Square sign it.
    #[arg(long)]
    pub url: Option<String>,
    /// Unix time in seconds to sign at [default: now].
    #[arg(long, allow_negative_numbers = true)]
    pub timestamp: Option<i64>,
    /// File holding the exact body bytes; `-` or nothing reads standard input. At most 64 MiB.
    #[arg(value_name = "FILE|-")]
    pub body: Option<PathBuf>,
}

/// Arguments of `hookbench keys`.
#[derive(Debug, Clone, Args)]
pub struct KeysArgs {
    /// The scheme to make a pair for: sendgrid (ECDSA P-256) or discord (Ed25519).
    #[arg(value_enum)]
    pub signing: Scheme,
}

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

/// `hookbench sign`: the sender's own signer, as every delivery is signed.
pub(super) fn run(args: &SignArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let signer =
        Signer::new(args.signing, &args.secret).map_err(|e| super::usage(format!("bad --secret: {e}")))?;
    if args.public_key {
        let key = signer.public_key().ok_or_else(|| {
            super::usage(format!(
                "--public-key: --signing {} signs with a shared secret, which has no public key",
                args.signing.as_str()
            ))
        })?;
        writeln!(out, "{key}")?;
        return Ok(());
    }
    let id = args.id.as_deref().unwrap_or_default();
    if id.is_empty() || id.contains(['\r', '\n']) {
        return Err(super::usage("--id must be a non-empty single line"));
    }
    let signer = match (&args.url, args.signing.signs_url()) {
        (Some(url), _) => signer.for_url(url),
        (None, true) => {
            return Err(super::usage(format!(
                "--signing {} signs the receiver's URL: give it with --url",
                args.signing.as_str()
            )));
        }
        (None, false) => signer,
    };
    let body = match args.body.as_deref() {
        None => stdin_capped()?,
        Some(p) if p.as_os_str() == "-" => stdin_capped()?,
        Some(p) => crate::files::read_capped(p, MAX_BODY_BYTES, "a body to sign")
            .map_err(|e| super::usage(format!("reading the body from {e}")))?,
    };
    let timestamp = args.timestamp.unwrap_or_else(|| jiff::Timestamp::now().as_second());
    // Twilio signs a form's pairs, and any other body through its hash in the URL.
    let json = body.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|b| matches!(b, b'{' | b'['));
    let query = if args.signing == Scheme::Twilio && json { PathQuery::BodySha256 } else { PathQuery::Plain };
    let attempt = Attempt { id, event_type: &args.event_type, timestamp, body: &body, query };
    for (name, value) in signer.headers(&attempt) {
        writeln!(out, "{name}: {value}")?;
    }
    if query != PathQuery::Plain {
        writeln!(out, "# post to: {}", query.apply(signer.url(), &body))?;
    }
    Ok(())
}

/// `hookbench keys NAME`: a new pair, the private key for `--secret` and the public key for the
/// receiver.
pub(super) fn run_keys(args: &KeysArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let kind = args.signing.key_kind();
    if kind == KeyKind::Shared {
        return Err(super::usage(format!(
            "--signing {} signs with a shared secret, not a key pair; only sendgrid and discord have pairs",
            args.signing.as_str()
        )));
    }
    let pair = generate(kind).context("the system's random source made no key")?;
    writeln!(out, "secret: {}", pair.private)?;
    writeln!(out, "public-key: {}", pair.public)?;
    Ok(())
}
