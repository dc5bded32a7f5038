//! The providers' signing schemes, from the sender's side: the headers one attempt carries.
//!
//! Each scheme signs what its provider signs, with the key its provider uses, and names the
//! delivery the way its provider does (the header that stays the same across attempts):
//!
//! | scheme | signed bytes | key | signature header | delivery id |
//! |---|---|---|---|---|
//! | standard-webhooks | `id.timestamp.body` | `whsec_` secret, base64-decoded | `webhook-signature: v1,<base64>` (one per secret) | `webhook-id` |
//! | stripe | `timestamp.body` | the `whsec_...` string itself | `Stripe-Signature: t=..,v1=<hex>` (one `v1` per secret) | the event's `id` in the body |
//! | github | the body | the secret string | `X-Hub-Signature-256: sha256=<hex>` | `X-GitHub-Delivery` |
//! | shopify | the body | the secret string | `X-Shopify-Hmac-Sha256: <base64>` | `X-Shopify-Webhook-Id` |
//! | none | nothing | none | none | `webhook-id` |
//!
//! GitHub and Shopify carry one signature, so with several secrets they sign with the first; the
//! secret-rotation check signs with each secret alone instead. This code shares nothing with the
//! receivers' verification: tests check it against the providers' own libraries
//! (`tests/vectors/`, produced by `scripts/signing-vectors/`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

/// The shop a Shopify delivery says it comes from.
pub(crate) const SHOPIFY_SHOP_DOMAIN: &str = "hookbench-audit.myshopify.com";
/// The Admin API version a Shopify delivery names.
pub(crate) const SHOPIFY_API_VERSION: &str = "2025-10";

/// How deliveries are signed (`--signing`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// Standard Webhooks (Svix and the providers built on it): `webhook-id`, `webhook-timestamp`,
    /// `webhook-signature`.
    #[default]
    StandardWebhooks,
    /// Stripe: `Stripe-Signature: t=<timestamp>,v1=<hex HMAC of "timestamp.body">`.
    Stripe,
    /// GitHub: `X-Hub-Signature-256: sha256=<hex HMAC of the body>`, `X-GitHub-Delivery`,
    /// `X-GitHub-Event`.
    Github,
    /// Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC of the body>`, `X-Shopify-Webhook-Id`,
    /// `X-Shopify-Event-Id`, `X-Shopify-Topic`.
    Shopify,
    /// No signature; the id goes in `webhook-id`.
    None,
}

impl Scheme {
    /// The name `--signing` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StandardWebhooks => "standard-webhooks",
            Self::Stripe => "stripe",
            Self::Github => "github",
            Self::Shopify => "shopify",
            Self::None => "none",
        }
    }

    /// Whether the scheme signs a timestamp (so stale and future timestamps can be refused).
    pub fn has_timestamp(self) -> bool {
        matches!(self, Self::StandardWebhooks | Self::Stripe)
    }

    /// Whether the scheme signs at all.
    pub fn signs(self) -> bool {
        self != Self::None
    }
}

/// A secret the scheme cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// A Standard Webhooks secret is not `whsec_<base64>`.
    #[error(
        "secret {index}: a Standard Webhooks secret is `whsec_` followed by base64 (as the provider shows it)"
    )]
    NotWhsec {
        /// Which `--secret` (1-based).
        index: usize,
    },
    /// A scheme that signs got no secret.
    #[error("--signing {0} needs at least one --secret")]
    Missing(&'static str),
    /// An empty secret.
    #[error("secret {index} is empty")]
    Empty {
        /// Which `--secret` (1-based).
        index: usize,
    },
}

/// One attempt as it is signed: the delivery's id, its event type, the attempt's timestamp and
/// the exact body bytes.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// The delivery id, the same on every attempt.
    pub id: &'a str,
    /// The event type (`X-GitHub-Event`, `X-Shopify-Topic`).
    pub event_type: &'a str,
    /// Unix seconds.
    pub timestamp: i64,
    /// The body as sent.
    pub body: &'a [u8],
}

/// Signs attempts under one scheme with one or more secrets.
#[derive(Clone)]
pub struct Signer {
    scheme: Scheme,
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        write!(f, "Signer({}, {} secrets)", self.scheme.as_str(), self.keys.len())
    }
}

impl Signer {
    /// A signer for `scheme` with `secrets` as the provider shows them (a `whsec_` string for
    /// Standard Webhooks and Stripe, the plain secret for GitHub and Shopify).
    pub fn new(scheme: Scheme, secrets: &[String]) -> Result<Self, SecretError> {
        if scheme.signs() && secrets.is_empty() {
            return Err(SecretError::Missing(scheme.as_str()));
        }
        let keys =
            secrets.iter().enumerate().map(|(i, s)| key_bytes(scheme, s, i + 1)).collect::<Result<_, _>>()?;
        Ok(Self { scheme, keys })
    }

    /// A signer for `scheme` from raw key bytes (hookbench's own runs make their secrets).
    pub fn from_key(scheme: Scheme, key: Vec<u8>) -> Self {
        Self { scheme, keys: vec![key] }
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// How many secrets it signs with.
    pub fn secrets(&self) -> usize {
        self.keys.len()
    }

    /// The same scheme with only secret `i` (for the secret-rotation check).
    pub fn only(&self, i: usize) -> Self {
        Self { scheme: self.scheme, keys: self.keys.get(i).cloned().into_iter().collect() }
    }

    /// The same scheme with a key no receiver holds.
    pub fn stranger(&self) -> Self {
        self.signing_with(&[None])
    }

    /// The same scheme signing with, in this order, secret `i` for each `Some(i)` and a key no
    /// receiver holds for each `None` (a provider rolling its secret signs with the old and the new
    /// one in one header).
    pub fn signing_with(&self, keys: &[Option<usize>]) -> Self {
        let stranger = || b"hookbench-a-secret-no-receiver-holds".to_vec();
        let keys =
            keys.iter().map(|k| k.and_then(|i| self.keys.get(i).cloned()).unwrap_or_else(stranger)).collect();
        Self { scheme: self.scheme, keys }
    }

    /// The headers of one attempt.
    pub fn headers(&self, a: &Attempt<'_>) -> Vec<(&'static str, String)> {
        let ts = a.timestamp.to_string();
        match self.scheme {
            Scheme::StandardWebhooks => {
                let signed = [a.id.as_bytes(), b".", ts.as_bytes(), b".", a.body];
                let sigs: Vec<String> =
                    self.keys.iter().map(|k| format!("v1,{}", STANDARD.encode(mac(k, &signed)))).collect();
                vec![
                    ("webhook-id", a.id.to_string()),
                    ("webhook-timestamp", ts),
                    ("webhook-signature", sigs.join(" ")),
                ]
            }
            Scheme::Stripe => {
                let signed = [ts.as_bytes(), b".", a.body];
                let mut header = format!("t={ts}");
                for k in &self.keys {
                    header.push_str(",v1=");
                    header.push_str(&hex::encode(mac(k, &signed)));
                }
                vec![("stripe-signature", header)]
            }
            Scheme::Github => {
                let sig = self.keys.first().map(|k| hex::encode(mac(k, &[a.body]))).unwrap_or_default();
                vec![
                    ("x-hub-signature-256", format!("sha256={sig}")),
                    ("x-github-delivery", a.id.to_string()),
                    ("x-github-event", a.event_type.to_string()),
                ]
            }
            Scheme::Shopify => {
                let sig = self.keys.first().map(|k| STANDARD.encode(mac(k, &[a.body]))).unwrap_or_default();
                vec![
                    ("x-shopify-hmac-sha256", sig),
                    ("x-shopify-webhook-id", a.id.to_string()),
                    ("x-shopify-event-id", a.id.to_string()),
                    ("x-shopify-topic", a.event_type.to_string()),
                    // Shopify's library refuses a request without these two.
                    ("x-shopify-shop-domain", SHOPIFY_SHOP_DOMAIN.to_string()),
                    ("x-shopify-api-version", SHOPIFY_API_VERSION.to_string()),
                ]
            }
            Scheme::None => vec![("webhook-id", a.id.to_string())],
        }
    }
}

fn key_bytes(scheme: Scheme, secret: &str, index: usize) -> Result<Vec<u8>, SecretError> {
    if secret.is_empty() {
        return Err(SecretError::Empty { index });
    }
    match scheme {
        Scheme::StandardWebhooks => secret
            .strip_prefix("whsec_")
            .and_then(|b64| STANDARD.decode(b64).ok())
            .filter(|k| !k.is_empty())
            .ok_or(SecretError::NotWhsec { index }),
        _ => Ok(secret.as_bytes().to_vec()),
    }
}

fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes keys of any length, so this cannot fail.
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Vectors {
        vectors: Vec<Vector>,
    }

    #[derive(serde::Deserialize)]
    struct Vector {
        scheme: Scheme,
        secrets: Vec<String>,
        id: String,
        event_type: String,
        timestamp: i64,
        body: String,
        headers: std::collections::BTreeMap<String, String>,
    }

    /// Every signature the providers' own libraries made or accepted
    /// (scripts/signing-vectors/produce.mjs) is the one this signer makes.
    #[test]
    fn signatures_match_the_providers_libraries() {
        let file: Vectors =
            serde_json::from_str(include_str!("../../tests/vectors/signing.json")).expect("vectors are JSON");
        let schemes: std::collections::BTreeSet<&str> =
            file.vectors.iter().map(|v| v.scheme.as_str()).collect();
        assert_eq!(schemes.len(), 4, "a vector for each signing scheme: {schemes:?}");
        for v in &file.vectors {
            let signer = Signer::new(v.scheme, &v.secrets).expect("the vector's secrets");
            let attempt = Attempt {
                id: &v.id,
                event_type: &v.event_type,
                timestamp: v.timestamp,
                body: v.body.as_bytes(),
            };
            let ours: std::collections::BTreeMap<String, String> =
                signer.headers(&attempt).into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            assert_eq!(ours, v.headers, "{} {}", v.scheme.as_str(), v.id);
        }
    }

    #[test]
    fn a_standard_webhooks_secret_must_be_whsec_base64() {
        let secrets = ["not-a-whsec".to_string()];
        assert_eq!(
            Signer::new(Scheme::StandardWebhooks, &secrets).err(),
            Some(SecretError::NotWhsec { index: 1 })
        );
        assert_eq!(Signer::new(Scheme::Github, &[]).err(), Some(SecretError::Missing("github")));
        assert!(Signer::new(Scheme::None, &[]).is_ok());
    }
}
