//! The providers, as data: how each one's own library verifies a delivery ([`Verification`]:
//! the timestamp tolerance in the past and the future, whether several signatures may ride one
//! header, which header carries the delivery's id), held to the libraries by the committed
//! vectors (`harness/tests/vectors/verification.json`, made by `scripts/signing-vectors/`), and
//! the delivery timeout and retry schedule an audit holds a receiver to. The timeouts and
//! schedules are those docs/audit.md tabulates with their sources; where a provider documents
//! only a window ("8 retries over 4 hours", "up to 3 days with exponential backoff"), the schedule
//! is hookbench's reading of it, doubling waits that fill the window, and the table says so.

use std::time::Duration;

use super::Scheme;
/// The report's type: a provider as a report names it.
pub use crate::report::model::Provider;

/// How far from the receiver's clock a signed timestamp may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timestamps {
    /// The scheme signs no timestamp.
    Unsigned,
    /// At most `past_s` seconds old, and at most `future_s` ahead (`None`: any distance ahead).
    Within {
        /// Seconds in the past accepted.
        past_s: i64,
        /// Seconds in the future accepted (`None`: unbounded).
        future_s: Option<i64>,
    },
}

/// How many signatures one delivery may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signatures {
    /// Several in one header, any of them valid: a provider rolling its secret signs with both.
    Many,
    /// One.
    One,
}

/// Where a delivery's id (the same on every attempt) travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdFrom {
    /// A header.
    Header(&'static str),
    /// A field of the JSON body.
    BodyField(&'static str),
}

/// What a receiver following its provider's own library accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verification {
    /// The timestamp tolerance.
    pub timestamps: Timestamps,
    /// How many signatures a delivery may carry.
    pub signatures: Signatures,
    /// Where the delivery id is.
    pub id: IdFrom,
    /// The library and the rule's place in it.
    pub source: &'static str,
}

impl Verification {
    /// Whether a timestamp `offset_s` seconds from the receiver's clock is accepted.
    pub fn accepts_offset(&self, offset_s: i64) -> bool {
        match self.timestamps {
            Timestamps::Unsigned => true,
            Timestamps::Within { past_s, future_s } => {
                -offset_s <= past_s && future_s.is_none_or(|f| offset_s <= f)
            }
        }
    }

    /// Whether a delivery `offset_s` from the receiver's clock, signed (in order) by secrets the
    /// receiver holds (`true`) or not (`false`), is accepted.
    pub fn accepts(&self, offset_s: i64, signed_with: &[bool]) -> bool {
        let signed = match self.signatures {
            Signatures::Many => signed_with.iter().any(|&held| held),
            Signatures::One => signed_with == [true],
        };
        signed && self.accepts_offset(offset_s)
    }
}

impl Scheme {
    /// How the scheme's provider's own library verifies (`None`: `--signing none`).
    pub fn verification(self) -> Option<Verification> {
        Some(match self {
            Self::StandardWebhooks => Verification {
                timestamps: Timestamps::Within { past_s: 300, future_s: Some(300) },
                signatures: Signatures::Many,
                id: IdFrom::Header("webhook-id"),
                source: "standardwebhooks 1.1.1 Webhook.verify (dist/index.js: WEBHOOK_TOLERANCE_IN_SECONDS = 300; \
                         `now - timestamp > tolerance` too old, `timestamp > now + tolerance` too new; any `v1,` \
                         entry of the space-separated header)",
            },
            Self::Stripe => Verification {
                timestamps: Timestamps::Within { past_s: 300, future_s: None },
                signatures: Signatures::Many,
                id: IdFrom::BodyField("id"),
                source: "stripe 23.1.0 webhooks.constructEvent (esm/Webhooks.js: DEFAULT_TOLERANCE 300; refused \
                         only when `timestampAge > tolerance`, so a timestamp ahead is accepted; any `v1=` entry)",
            },
            Self::Github => Verification {
                timestamps: Timestamps::Unsigned,
                signatures: Signatures::One,
                id: IdFrom::Header("x-github-delivery"),
                source: "@octokit/webhooks-methods 6.0.0 verify (one `sha256=` HMAC of the body, no timestamp)",
            },
            Self::Shopify => Verification {
                timestamps: Timestamps::Unsigned,
                signatures: Signatures::One,
                id: IdFrom::Header("x-shopify-webhook-id"),
                source: "@shopify/shopify-api 13.1.0 webhooks.validate (one base64 HMAC of the body, no timestamp)",
            },
            Self::None => return None,
        })
    }

    /// The provider whose library this scheme is (`None`: `--signing none`).
    pub fn provider(self) -> Option<Provider> {
        match self {
            Self::StandardWebhooks => Some(Provider::StandardWebhooks),
            Self::Stripe => Some(Provider::Stripe),
            Self::Github => Some(Provider::Github),
            Self::Shopify => Some(Provider::Shopify),
            Self::None => None,
        }
    }
}

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;

impl Provider {
    /// The name `--provider` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stripe => "stripe",
            Self::Github => "github",
            Self::Shopify => "shopify",
            Self::StandardWebhooks => "standard-webhooks",
        }
    }

    /// How long the provider waits for an answer before it counts the delivery as failed. Stripe
    /// does not state one on the pages found; 30 s is the figure third-party guides give.
    pub fn timeout(self) -> Duration {
        Duration::from_secs(match self {
            Self::Stripe => 30,
            Self::Github => 10,
            Self::Shopify => 5,
            Self::StandardWebhooks => 15,
        })
    }

    /// The waits before each retry of a failed delivery, in the provider's time; empty when it
    /// does not retry on its own (GitHub).
    pub fn retry_delays(self) -> Vec<Duration> {
        match self {
            Self::Github => Vec::new(),
            // "immediately, 5 seconds, 5 minutes, 30 minutes, 2 hours, 5 hours, 10 hours, 10 hours"
            Self::StandardWebhooks => {
                [0, 5, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]
                    .map(Duration::from_secs)
                    .to_vec()
            }
            // "8 times over 4 hours", exponential: doubling waits that add up to 4 hours.
            Self::Shopify => doubling(8, Duration::from_secs(4 * HOUR)),
            // "up to 3 days with exponential backoff": doubling waits that add up to 3 days.
            Self::Stripe => doubling(10, Duration::from_secs(72 * HOUR)),
        }
    }

    /// The largest payload the provider delivers, when it documents one: a receiver sized to it
    /// may acknowledge any body up to it. GitHub: "Payloads are capped at 25 MB"
    /// (https://docs.github.com/en/webhooks/webhook-events-and-payloads).
    pub fn max_payload_bytes(self) -> Option<usize> {
        match self {
            Self::Github => Some(25 << 20),
            Self::Stripe | Self::Shopify | Self::StandardWebhooks => None,
        }
    }

    /// Where the figures come from.
    pub fn source(self) -> &'static str {
        match self {
            Self::Stripe => "https://docs.stripe.com/webhooks (retries); timeout: third-party guides",
            Self::Github => {
                "https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries"
            }
            Self::Shopify => "https://shopify.dev/changelog/updates-to-webhook-retry-mechanism",
            Self::StandardWebhooks => "https://docs.svix.com/retries",
        }
    }
}

/// `n` waits, each twice the one before, adding up to `window`.
fn doubling(n: u32, window: Duration) -> Vec<Duration> {
    let units = f64::from((1u32 << n) - 1);
    (0..n).map(|i| window.mul_f64(f64::from(1u32 << i) / units)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Cases {
        cases: Vec<Case>,
    }

    #[derive(serde::Deserialize)]
    struct Case {
        scheme: Scheme,
        offset_s: i64,
        signed_with: Vec<String>,
        accepted: bool,
    }

    /// Every case the providers' own libraries decided (scripts/signing-vectors/produce.mjs) is
    /// decided the same way by the rules hookbench holds receivers to.
    #[test]
    fn the_rules_are_the_providers_libraries() {
        let file: Cases = serde_json::from_str(include_str!("../../tests/vectors/verification.json"))
            .expect("verification vectors are JSON");
        let schemes: std::collections::BTreeSet<&str> =
            file.cases.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes.len(), 4, "cases for each signing scheme: {schemes:?}");
        for c in &file.cases {
            let rules = c.scheme.verification().expect("a scheme that signs");
            let held: Vec<bool> = c.signed_with.iter().map(|s| s == "held").collect();
            assert_eq!(
                rules.accepts(c.offset_s, &held),
                c.accepted,
                "{} at {:+} s signed with {:?}",
                c.scheme.as_str(),
                c.offset_s,
                c.signed_with
            );
        }
    }

    #[test]
    fn a_timestamp_an_hour_ahead_is_refused_by_standard_webhooks_and_accepted_by_stripe() {
        let sw = Scheme::StandardWebhooks.verification().expect("signs");
        let stripe = Scheme::Stripe.verification().expect("signs");
        assert!(!sw.accepts_offset(3600) && stripe.accepts_offset(3600));
        assert!(!sw.accepts_offset(-3600) && !stripe.accepts_offset(-3600));
        assert!(Scheme::Github.verification().expect("signs").accepts_offset(3600), "no timestamp signed");
        assert_eq!(Scheme::None.verification(), None);
    }

    #[test]
    fn schedules_fill_the_documented_windows() {
        let total = |p: Provider| p.retry_delays().iter().sum::<Duration>();
        assert_eq!(Provider::Shopify.retry_delays().len(), 8);
        assert!((total(Provider::Shopify).as_secs_f64() - 4.0 * 3600.0).abs() < 1e-6);
        assert!((total(Provider::Stripe).as_secs_f64() - 72.0 * 3600.0).abs() < 1e-6);
        assert_eq!(total(Provider::StandardWebhooks), Duration::from_secs(5 + 300 + 1800 + 3600 * 27));
        assert!(Provider::Github.retry_delays().is_empty());
        let s = Provider::Shopify.retry_delays();
        assert!((s[1].as_secs_f64() / s[0].as_secs_f64() - 2.0).abs() < 1e-9, "doubling");
    }
}
