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
//! | slack | `v0:timestamp:body` | the signing secret | `X-Slack-Signature: v0=<hex>` | `event_id` in the body |
//! | twilio | URL + sorted form pairs (HMAC-SHA1) | the auth token | `X-Twilio-Signature: <base64>` | `I-Twilio-Idempotency-Token` |
//! | square | notification URL + body | the signature key | `x-square-hmacsha256-signature: <base64>` | `event_id` in the body |
//! | paddle | `timestamp:body` | the secret key | `Paddle-Signature: ts=..;h1=<hex>` | `event_id` in the body |
//! | sendgrid | timestamp + body (ECDSA P-256) | a private key | `X-Twilio-Email-Event-Webhook-Signature: <base64 DER>` | each event's `sg_event_id` |
//! | discord | timestamp + body (Ed25519) | a private key | `X-Signature-Ed25519: <hex>` | the interaction's `id` |
//! | linear | the body (its `webhookTimestamp` inside) | the secret | `Linear-Signature: <hex>` | `Linear-Delivery` |
//! | gitlab | nothing: the token is sent as it is | the token | `X-Gitlab-Token` | `X-Gitlab-Event-UUID` |
//! | zoom | `v0:timestamp:body` | the secret token | `x-zm-signature: v0=<hex>` | `x-zm-trackingid` |
//! | twitch | `id + timestamp + body` | the secret | `Twitch-Eventsub-Message-Signature: sha256=<hex>` | `Twitch-Eventsub-Message-Id` |
//! | none | nothing | none | none | `webhook-id` |
//!
//! Every scheme but Standard Webhooks and Stripe carries one signature, so with several secrets
//! it signs with the first; the secret-rotation check signs with each secret alone instead. This
//! code shares nothing with the receivers' verification: tests check it against the providers'
//! own libraries (`tests/vectors/`, produced by `scripts/signing-vectors/` and
//! `scripts/provider-vectors/`).

pub mod keys;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};
use sha2::Sha256;

use keys::{Key, KeyKind, WrongKind};

type HmacSha256 = hmac::Hmac<Sha256>;
type HmacSha1 = hmac::Hmac<sha1::Sha1>;

/// The shop a Shopify delivery says it comes from.
pub(crate) const SHOPIFY_SHOP_DOMAIN: &str = "hookbench-audit.myshopify.com";
/// The Admin API version a Shopify delivery names.
pub(crate) const SHOPIFY_API_VERSION: &str = "2025-10";

/// How deliveries are signed (`--signing`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
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
    /// Slack: `X-Slack-Signature: v0=<hex HMAC of "v0:timestamp:body">`,
    /// `X-Slack-Request-Timestamp`.
    Slack,
    /// Twilio: `X-Twilio-Signature: <base64 HMAC-SHA1 of the URL and the sorted form pairs>`,
    /// `I-Twilio-Idempotency-Token`; the body is form-encoded.
    Twilio,
    /// Square: `x-square-hmacsha256-signature: <base64 HMAC of the notification URL and the
    /// body>`.
    Square,
    /// Paddle Billing: `Paddle-Signature: ts=<timestamp>;h1=<hex HMAC of "timestamp:body">`.
    Paddle,
    /// SendGrid's Event Webhook: an ECDSA P-256 signature of the timestamp and the body
    /// (`--secret`: the private key, base64 of its PKCS#8 DER).
    Sendgrid,
    /// Discord interactions: an Ed25519 signature of the timestamp and the body (`--secret`: the
    /// private key, base64 of its PKCS#8 DER).
    Discord,
    /// Linear: `Linear-Signature: <hex HMAC of the body>`, `Linear-Delivery`; the timestamp is
    /// the body's `webhookTimestamp`.
    Linear,
    /// GitLab: `X-Gitlab-Token: <the secret token itself>`, `X-Gitlab-Event-UUID`.
    Gitlab,
    /// Zoom: `x-zm-signature: v0=<hex HMAC of "v0:timestamp:body">`, `x-zm-request-timestamp`.
    Zoom,
    /// Twitch EventSub: `Twitch-Eventsub-Message-Signature: sha256=<hex HMAC of id, timestamp
    /// and body>`, `Twitch-Eventsub-Message-Id`, `-Timestamp`.
    Twitch,
    /// No signature; the id goes in `webhook-id`.
    None,
}

impl Scheme {
    /// Every scheme, as `--signing` lists them.
    pub const ALL: &[Self] = <Self as strum::VariantArray>::VARIANTS;

    /// The name `--signing` takes (the serde and clap name too).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whether the scheme signs a timestamp (so stale and future timestamps can be sent). Linear's
    /// rides in the body, which is rebuilt for each attempt.
    pub fn has_timestamp(self) -> bool {
        !matches!(
            self,
            Self::Github | Self::Shopify | Self::Twilio | Self::Square | Self::Gitlab | Self::None
        )
    }

    /// Whether the scheme signs at all.
    pub fn signs(self) -> bool {
        self != Self::None
    }

    /// Whether the scheme signs the URL the delivery is posted to (so a delivery replayed to
    /// another path fails its signature).
    pub fn signs_url(self) -> bool {
        matches!(self, Self::Twilio | Self::Square)
    }

    /// Whether a receiver following the provider's documentation refuses a delivery signed for its
    /// URL and received at another path: Twilio's documentation validates the URL the request
    /// arrived at. Square's examples pass a constant notification URL to its library instead, so a
    /// receiver on a catch-all route rightly accepts the replay; Square signs the URL, but the
    /// other path is not expected refused.
    pub fn refuses_other_paths(self) -> bool {
        self == Self::Twilio
    }

    /// Whether the body is covered: GitLab's token is sent as it is, so a tampered body with the
    /// right token is what its provider would send.
    pub fn signs_body(self) -> bool {
        !matches!(self, Self::Gitlab | Self::None)
    }

    /// The kind of key `--secret` holds.
    pub fn key_kind(self) -> KeyKind {
        match self {
            Self::Sendgrid => KeyKind::EcdsaP256,
            Self::Discord => KeyKind::Ed25519,
            _ => KeyKind::Shared,
        }
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
    /// An asymmetric scheme's key that is not a private key of its kind.
    #[error("--secret {index}: --signing {scheme} needs {}; `hookbench keys {scheme}` makes a pair", .kind.0.describe())]
    WrongKind {
        /// Which `--secret` (1-based).
        index: usize,
        /// The scheme's name.
        scheme: &'static str,
        /// The kind it needs.
        kind: WrongKind,
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
    /// What the URL carries after its path (Twilio's hash of a JSON body).
    pub query: super::PathQuery,
}

/// Signs attempts under one scheme with one or more secrets.
#[derive(Clone)]
pub struct Signer {
    scheme: Scheme,
    keys: Vec<Key>,
    /// The URL Twilio and Square sign (the receiver's, as its provider knows it).
    url: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        write!(f, "Signer({}, {} secrets)", self.scheme.as_str(), self.keys.len())
    }
}

impl Signer {
    /// A signer for `scheme` with `secrets` as the provider shows them (a `whsec_` string for
    /// Standard Webhooks and Stripe, base64 of a PKCS#8 private key for SendGrid and Discord, the
    /// plain secret for the rest).
    pub fn new(scheme: Scheme, secrets: &[String]) -> Result<Self, SecretError> {
        if scheme.signs() && secrets.is_empty() {
            return Err(SecretError::Missing(scheme.as_str()));
        }
        let keys =
            secrets.iter().enumerate().map(|(i, s)| key(scheme, s, i + 1)).collect::<Result<_, _>>()?;
        Ok(Self { scheme, keys, url: String::new() })
    }

    /// A signer for `scheme` from raw key bytes (hookbench's own runs make their secrets).
    pub fn from_key(scheme: Scheme, key: Vec<u8>) -> Self {
        Self { scheme, keys: vec![Key::Shared(key)], url: String::new() }
    }

    /// The same signer signing `url` as the receiver's address (Twilio and Square sign it).
    pub fn for_url(self, url: &str) -> Self {
        Self { url: url.to_string(), ..self }
    }

    /// The URL it signs.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// How many secrets it signs with.
    pub fn secrets(&self) -> usize {
        self.keys.len()
    }

    /// The public key of its first secret as the provider's dashboard shows it (`None` for a
    /// shared secret).
    pub fn public_key(&self) -> Option<String> {
        self.keys.first().and_then(Key::public)
    }

    /// The same scheme with only secret `i` (for the secret-rotation check).
    pub fn only(&self, i: usize) -> Self {
        Self { keys: self.keys.get(i).cloned().into_iter().collect(), ..self.clone() }
    }

    /// The same scheme with a key no receiver holds.
    pub fn stranger(&self) -> Self {
        self.signing_with(&[None])
    }

    /// The same scheme signing with, in this order, secret `i` for each `Some(i)` and a key no
    /// receiver holds for each `None` (a provider rolling its secret signs with the old and the new
    /// one in one header).
    pub fn signing_with(&self, keys: &[Option<usize>]) -> Self {
        let kind = self.scheme.key_kind();
        let keys = keys
            .iter()
            .map(|k| k.and_then(|i| self.keys.get(i).cloned()).unwrap_or_else(|| Key::stranger(kind)))
            .collect();
        Self { keys, ..self.clone() }
    }

    /// The first key's shared secret (empty when it has none).
    fn first(&self) -> &[u8] {
        self.keys.first().map_or(&[], Key::shared)
    }

    /// The first key's signature over `message` (asymmetric schemes).
    fn first_signature(&self, message: &[u8]) -> Vec<u8> {
        self.keys.first().map(|k| k.sign(message)).unwrap_or_default()
    }

    /// The headers of one attempt.
    pub fn headers(&self, a: &Attempt<'_>) -> Vec<(&'static str, String)> {
        let ts = a.timestamp.to_string();
        let id = || a.id.to_string();
        match self.scheme {
            Scheme::StandardWebhooks => {
                let signed = [a.id.as_bytes(), b".", ts.as_bytes(), b".", a.body];
                let sigs: Vec<String> = self
                    .keys
                    .iter()
                    .map(|k| format!("v1,{}", STANDARD.encode(mac(k.shared(), &signed))))
                    .collect();
                vec![("webhook-id", id()), ("webhook-timestamp", ts), ("webhook-signature", sigs.join(" "))]
            }
            Scheme::Stripe => {
                let signed = [ts.as_bytes(), b".", a.body];
                let mut header = format!("t={ts}");
                for k in &self.keys {
                    header.push_str(",v1=");
                    header.push_str(&hex::encode(mac(k.shared(), &signed)));
                }
                vec![("stripe-signature", header)]
            }
            Scheme::Github => {
                let sig = hex::encode(mac(self.first(), &[a.body]));
                vec![
                    ("x-hub-signature-256", format!("sha256={sig}")),
                    ("x-github-delivery", id()),
                    ("x-github-event", a.event_type.to_string()),
                ]
            }
            Scheme::Shopify => {
                let sig = STANDARD.encode(mac(self.first(), &[a.body]));
                vec![
                    ("x-shopify-hmac-sha256", sig),
                    ("x-shopify-webhook-id", id()),
                    ("x-shopify-event-id", id()),
                    ("x-shopify-topic", a.event_type.to_string()),
                    // Shopify's library refuses a request without these two.
                    ("x-shopify-shop-domain", SHOPIFY_SHOP_DOMAIN.to_string()),
                    ("x-shopify-api-version", SHOPIFY_API_VERSION.to_string()),
                ]
            }
            Scheme::Slack => {
                let sig = hex::encode(mac(self.first(), &[b"v0:", ts.as_bytes(), b":", a.body]));
                vec![("x-slack-signature", format!("v0={sig}")), ("x-slack-request-timestamp", ts)]
            }
            Scheme::Twilio => {
                // A form's pairs are signed after the URL; any other body through its hash in it.
                let signed = match a.query {
                    super::PathQuery::Plain => twilio_signed(&self.url, a.body),
                    super::PathQuery::BodySha256 => a.query.apply(&self.url, a.body).into_owned(),
                };
                let sig = STANDARD.encode(mac_sha1(self.first(), signed.as_bytes()));
                vec![("x-twilio-signature", sig), ("i-twilio-idempotency-token", id())]
            }
            Scheme::Square => {
                let sig = STANDARD.encode(mac(self.first(), &[self.url.as_bytes(), a.body]));
                vec![("x-square-hmacsha256-signature", sig)]
            }
            Scheme::Paddle => {
                let sig = hex::encode(mac(self.first(), &[ts.as_bytes(), b":", a.body]));
                vec![("paddle-signature", format!("ts={ts};h1={sig}"))]
            }
            Scheme::Sendgrid => {
                let sig = self.first_signature(&[ts.as_bytes(), a.body].concat());
                vec![
                    ("x-twilio-email-event-webhook-signature", STANDARD.encode(sig)),
                    ("x-twilio-email-event-webhook-timestamp", ts),
                ]
            }
            Scheme::Discord => {
                let sig = self.first_signature(&[ts.as_bytes(), a.body].concat());
                vec![("x-signature-ed25519", hex::encode(sig)), ("x-signature-timestamp", ts)]
            }
            Scheme::Linear => {
                let sig = hex::encode(mac(self.first(), &[a.body]));
                vec![
                    ("linear-signature", sig),
                    ("linear-delivery", id()),
                    ("linear-event", a.event_type.to_string()),
                ]
            }
            Scheme::Gitlab => {
                let token = String::from_utf8_lossy(self.first()).into_owned();
                vec![("x-gitlab-token", token), ("x-gitlab-event-uuid", id()), ("idempotency-key", id())]
            }
            Scheme::Zoom => {
                let sig = hex::encode(mac(self.first(), &[b"v0:", ts.as_bytes(), b":", a.body]));
                vec![
                    ("x-zm-signature", format!("v0={sig}")),
                    ("x-zm-request-timestamp", ts),
                    ("x-zm-trackingid", id()),
                ]
            }
            Scheme::Twitch => {
                let at = twitch_timestamp(a.timestamp);
                let sig = hex::encode(mac(self.first(), &[a.id.as_bytes(), at.as_bytes(), a.body]));
                vec![
                    ("twitch-eventsub-message-signature", format!("sha256={sig}")),
                    ("twitch-eventsub-message-id", id()),
                    ("twitch-eventsub-message-timestamp", at),
                    ("twitch-eventsub-message-type", "notification".to_string()),
                ]
            }
            Scheme::None => vec![("webhook-id", id())],
        }
    }
}

/// What Twilio signs for a form-encoded body: the URL, then each parameter's name and value,
/// sorted by name (and, for a name given twice, by value), as its RequestValidator computes it.
fn twilio_signed(url: &str, body: &[u8]) -> String {
    let mut pairs: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
    pairs.sort();
    pairs.dedup();
    let mut signed = url.to_string();
    for (name, value) in pairs {
        signed.push_str(&name);
        signed.push_str(&value);
    }
    signed
}

/// Twitch's message timestamp: RFC 3339 in UTC.
fn twitch_timestamp(unix_s: i64) -> String {
    jiff::Timestamp::from_second(unix_s).map_or_else(|_| unix_s.to_string(), |t| t.to_string())
}

fn key(scheme: Scheme, secret: &str, index: usize) -> Result<Key, SecretError> {
    if secret.is_empty() {
        return Err(SecretError::Empty { index });
    }
    match scheme {
        Scheme::StandardWebhooks => secret
            .strip_prefix("whsec_")
            .and_then(|b64| STANDARD.decode(b64).ok())
            .filter(|k| !k.is_empty())
            .map(Key::Shared)
            .ok_or(SecretError::NotWhsec { index }),
        _ => Key::private(scheme.key_kind(), secret).map_err(|kind| SecretError::WrongKind {
            index,
            scheme: scheme.as_str(),
            kind,
        }),
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

fn mac_sha1(key: &[u8], message: &[u8]) -> [u8; 20] {
    let mut m = <HmacSha1 as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    m.update(message);
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
        let file: Vectors = serde_json::from_str(include_str!("../../../tests/vectors/signing.json"))
            .expect("vectors are JSON");
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
                query: super::super::PathQuery::Plain,
            };
            let ours: std::collections::BTreeMap<String, String> =
                signer.headers(&attempt).into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            assert_eq!(ours, v.headers, "{} {}", v.scheme.as_str(), v.id);
        }
    }

    #[derive(serde::Deserialize)]
    struct ProviderCases {
        cases: Vec<ProviderCase>,
    }

    #[derive(serde::Deserialize)]
    struct ProviderCase {
        provider: Scheme,
        case: String,
        signing_key: String,
        id: String,
        event_type: String,
        timestamp: i64,
        signed_body: String,
        signed_url: Option<String>,
        headers: std::collections::BTreeMap<String, String>,
        #[serde(default)]
        query: super::super::PathQuery,
    }

    /// Every header hookbench made for the ten providers' libraries to judge
    /// (harness/tests/vectors/providers.json, scripts/provider-vectors/make.py) is the one this
    /// signer makes from the same inputs; SendGrid's ECDSA signature, randomized, is checked by
    /// verifying it under the signing key's public half instead.
    #[test]
    fn signatures_are_the_ones_the_providers_libraries_judged() {
        use ring::signature::{ECDSA_P256_SHA256_ASN1, UnparsedPublicKey};
        let file: ProviderCases = serde_json::from_str(include_str!("../../../tests/vectors/providers.json"))
            .expect("provider vectors are JSON");
        let schemes: std::collections::BTreeSet<&str> =
            file.cases.iter().map(|c| c.provider.as_str()).collect();
        assert_eq!(schemes.len(), 10, "cases for each of the ten providers: {schemes:?}");
        for c in &file.cases {
            let what = format!("{} {}", c.provider.as_str(), c.case);
            let signer = Signer::new(c.provider, std::slice::from_ref(&c.signing_key)).expect(&what);
            let signer = signer.for_url(c.signed_url.as_deref().unwrap_or_default());
            let attempt = Attempt {
                id: &c.id,
                event_type: &c.event_type,
                timestamp: c.timestamp,
                body: c.signed_body.as_bytes(),
                query: c.query,
            };
            let mut ours: std::collections::BTreeMap<String, String> =
                signer.headers(&attempt).into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let mut theirs = c.headers.clone();
            if c.provider == Scheme::Sendgrid {
                let name = "x-twilio-email-event-webhook-signature";
                let sig = STANDARD.decode(theirs.remove(name).expect(name)).expect("base64");
                ours.remove(name);
                let spki = STANDARD.decode(signer.public_key().expect("a public key")).expect("base64");
                let signed = [c.timestamp.to_string().as_bytes(), c.signed_body.as_bytes()].concat();
                UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &spki[26..])
                    .verify(&signed, &sig)
                    .unwrap_or_else(|_| panic!("{what}: the signature verifies"));
            }
            assert_eq!(ours, theirs, "{what}");
        }
    }

    /// Of the two schemes that sign the URL, only Twilio's documented receivers verify the URL a
    /// request arrived at.
    #[test]
    fn only_twilio_refuses_a_delivery_received_at_another_path() {
        let refusing: Vec<Scheme> = Scheme::ALL.iter().copied().filter(|s| s.refuses_other_paths()).collect();
        assert_eq!(refusing, [Scheme::Twilio]);
        assert!(Scheme::Square.signs_url() && !Scheme::Square.refuses_other_paths());
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
