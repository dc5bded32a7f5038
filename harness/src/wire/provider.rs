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
    /// The scheme signs a timestamp, but its library does not compare it with the clock
    /// (SendGrid's, Discord's): a delivery of any age is accepted.
    Unchecked,
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
    /// A field of the JSON body, as a JSON pointer (`/id`, `/0/sg_event_id`).
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
            Timestamps::Unsigned | Timestamps::Unchecked => true,
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
                id: IdFrom::BodyField("/id"),
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
            Self::Slack => Verification {
                timestamps: Timestamps::Within { past_s: 300, future_s: Some(300) },
                signatures: Signatures::One,
                id: IdFrom::BodyField("/event_id"),
                source: "slack_sdk 3.48.0 SignatureVerifier.is_valid_request (slack_sdk/signature/__init__.py \
                         line 69: `abs(self.clock.now() - int(timestamp)) > 60 * 5` refused; one `v0=`)",
            },
            Self::Twilio => Verification {
                timestamps: Timestamps::Unsigned,
                signatures: Signatures::One,
                id: IdFrom::Header("i-twilio-idempotency-token"),
                source: "twilio 9.13.0 RequestValidator.validate (twilio/request_validator.py line 146: \
                         HMAC-SHA1 of the URL and the sorted form pairs; no timestamp)",
            },
            Self::Square => Verification {
                timestamps: Timestamps::Unsigned,
                signatures: Signatures::One,
                id: IdFrom::BodyField("/event_id"),
                source: "squareup 46.0.0.20260916 square.utils.webhooks_helper.verify_signature (HMAC-SHA256 \
                         of the notification URL and the body; no timestamp)",
            },
            Self::Paddle => Verification {
                timestamps: Timestamps::Within { past_s: 5, future_s: Some(5) },
                signatures: Signatures::One,
                id: IdFrom::BodyField("/event_id"),
                source: "paddle-python-sdk 1.16.1 Verifier.verify (paddle_billing/Notifications/Verifier.py \
                         lines 40-47: `now > timestamp + 5` too old, `timestamp - 5 > now` too new; one `h1`)",
            },
            Self::Sendgrid => Verification {
                timestamps: Timestamps::Unchecked,
                signatures: Signatures::One,
                id: IdFrom::BodyField("/0/sg_event_id"),
                source: "sendgrid 6.12.5 EventWebhook.verify_signature (sendgrid/helpers/eventwebhook/__init__.py \
                         lines 34-56: ECDSA over timestamp + payload; no clock)",
            },
            Self::Discord => Verification {
                timestamps: Timestamps::Unchecked,
                signatures: Signatures::One,
                id: IdFrom::BodyField("/id"),
                source: "PyNaCl 1.6.2 VerifyKey.verify over timestamp + body, as Discord's documentation \
                         verifies (nacl/signing.py line 98); no clock",
            },
            Self::Linear => Verification {
                timestamps: Timestamps::Within { past_s: 60, future_s: Some(60) },
                signatures: Signatures::One,
                id: IdFrom::Header("linear-delivery"),
                source: "@linear/sdk 98.0.0 LinearWebhookClient.verify (dist/webhooks-*.mjs line 225: \
                         `abs(Date.now() - webhookTimestamp) > 60000` refused; the header timestamp ignored)",
            },
            Self::Gitlab => Verification {
                timestamps: Timestamps::Unsigned,
                signatures: Signatures::One,
                id: IdFrom::Header("x-gitlab-event-uuid"),
                source: "GitLab's documentation: X-Gitlab-Token equals the secret token; nothing is signed",
            },
            Self::Zoom => Verification {
                timestamps: Timestamps::Unchecked,
                signatures: Signatures::One,
                id: IdFrom::Header("x-zm-trackingid"),
                source: "Zoom's documentation: HMAC-SHA256 of `v0:timestamp:body`; it gives no window, and its \
                         official sample (zoom/webhook-sample) compares no clock",
            },
            Self::Twitch => Verification {
                timestamps: Timestamps::Within { past_s: 600, future_s: None },
                signatures: Signatures::One,
                id: IdFrom::Header("twitch-eventsub-message-id"),
                source: "Twitch's EventSub documentation: HMAC-SHA256 of id, timestamp and body; \
                         messages older than 10 minutes refused",
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
            Self::Slack => Some(Provider::Slack),
            Self::Twilio => Some(Provider::Twilio),
            Self::Square => Some(Provider::Square),
            Self::Paddle => Some(Provider::Paddle),
            Self::Sendgrid => Some(Provider::Sendgrid),
            Self::Discord => Some(Provider::Discord),
            Self::Linear => Some(Provider::Linear),
            Self::Gitlab => Some(Provider::Gitlab),
            Self::Zoom => Some(Provider::Zoom),
            Self::Twitch => Some(Provider::Twitch),
            Self::None => None,
        }
    }
}

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;

/// Which failures a provider sends again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOn {
    /// Any answer but a 2xx, a timeout or no connection.
    Failure,
    /// Only a connection that could not be made (Twilio's default: `#rc=1`, `#rp=ct`).
    ConnectFailure,
    /// None: a failed delivery is not sent again.
    Never,
    /// It retries, but its documentation names neither how often nor when (Twitch: until
    /// "too many" failures revoke the subscription).
    Undocumented,
}

impl Provider {
    /// Every provider, as `--provider` lists them.
    pub const ALL: &[Self] = <Self as strum::VariantArray>::VARIANTS;

    /// The name `--provider` takes (the serde and clap name too).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// How long the provider waits for an answer before it counts the delivery as failed, when
    /// it states a number (`None`: SendGrid and Twitch state none; Twitch says "within a few
    /// seconds"). Stripe does not state one on the pages found; 30 s is the figure third-party
    /// guides give; GitLab's 10 s too comes from third parties.
    pub fn timeout(self) -> Option<Duration> {
        let s = match self {
            Self::Stripe => 30,
            Self::Github | Self::Gitlab | Self::Square => 10,
            Self::Shopify | Self::Paddle | Self::Linear => 5,
            Self::StandardWebhooks | Self::Twilio => 15,
            Self::Slack | Self::Discord | Self::Zoom => 3,
            Self::Sendgrid | Self::Twitch => return None,
        };
        Some(Duration::from_secs(s))
    }

    /// Which failures it sends again.
    pub fn retries_on(self) -> RetryOn {
        match self {
            Self::Github | Self::Gitlab | Self::Discord => RetryOn::Never,
            Self::Twilio => RetryOn::ConnectFailure,
            Self::Twitch => RetryOn::Undocumented,
            _ => RetryOn::Failure,
        }
    }

    /// The waits before each retry of a failed delivery, in the provider's time; empty when it
    /// does not retry on its own (GitHub, GitLab, Discord's interactions) or does not say when
    /// (Twitch).
    pub fn retry_delays(self) -> Vec<Duration> {
        let secs = |s: &[u64]| s.iter().copied().map(Duration::from_secs).collect();
        match self {
            Self::Github | Self::Gitlab | Self::Discord | Self::Twitch => Vec::new(),
            // "immediately, 5 seconds, 5 minutes, 30 minutes, 2 hours, 5 hours, 10 hours, 10 hours"
            Self::StandardWebhooks => {
                secs(&[0, 5, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR])
            }
            // "8 times over 4 hours", exponential: doubling waits that add up to 4 hours.
            Self::Shopify => doubling(8, Duration::from_secs(4 * HOUR)),
            // "up to 3 days with exponential backoff": doubling waits that add up to 3 days.
            Self::Stripe => doubling(10, Duration::from_secs(72 * HOUR)),
            // "nearly immediately", "after 1 minute", "after 5 minutes"
            Self::Slack => secs(&[0, MINUTE, 5 * MINUTE]),
            // Retry count `rc` default 1, "if its connection to your webhook fails"; no wait named.
            Self::Twilio => secs(&[0]),
            // 1, 2, 4, 8, 16, 32 minutes, then every 60 minutes, "for up to 24 hours".
            Self::Square => {
                let mut waits: Vec<u64> = [1, 2, 4, 8, 16, 32].iter().map(|m| m * MINUTE).collect();
                waits.extend(std::iter::repeat_n(HOUR, 22));
                secs(&waits)
            }
            // "retried at increasing intervals for up to 24 hours": doubling waits filling it.
            Self::Sendgrid => doubling(10, Duration::from_secs(24 * HOUR)),
            // "up to 60 times over 3 days": even waits filling it (no intervals are published).
            Self::Paddle => vec![Duration::from_secs(72 * HOUR / 60); 60],
            // "after 1 minute, 1 hour, and 6 hours"
            Self::Linear => secs(&[MINUTE, HOUR, 6 * HOUR]),
            // 5 minutes, then 20 minutes after the first retry, then 60 after the second.
            Self::Zoom => secs(&[5 * MINUTE, 20 * MINUTE, 60 * MINUTE]),
        }
    }

    /// The headers the provider adds to its `n`th retry (1-based) of a delivery whose last
    /// attempt ended as `last`: Slack's `x-slack-retry-num` and `x-slack-retry-reason` (its
    /// reasons: `http_timeout`, `connection_failed`, `http_error`, and `unknown_error` for what
    /// it names otherwise). Empty for the first delivery and for every other provider (none
    /// documents such a header on the pages found).
    pub fn retry_headers(self, n: usize, last: crate::report::model::Fate) -> Vec<(&'static str, String)> {
        use crate::report::model::Fate;
        if self != Self::Slack || n == 0 {
            return Vec::new();
        }
        let reason = match last {
            Fate::TimedOut => "http_timeout",
            Fate::NoConnection => "connection_failed",
            Fate::Answered(_) => "http_error",
            // An answer the sender never heard is a timeout to it.
            Fate::AckLost(_) => "http_timeout",
            Fate::Reset => "unknown_error",
        };
        vec![("x-slack-retry-num", n.to_string()), ("x-slack-retry-reason", reason.to_string())]
    }

    /// The largest payload the provider delivers, when it documents one: a receiver sized to it
    /// may acknowledge any body up to it. GitHub: "Payloads are capped at 25 MB"
    /// (https://docs.github.com/en/webhooks/webhook-events-and-payloads).
    pub fn max_payload_bytes(self) -> Option<usize> {
        match self {
            Self::Github => Some(25 << 20),
            _ => None,
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
            Self::Slack => "https://api.slack.com/apis/connections/events-api (retries, 3 s)",
            Self::Twilio => {
                "https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides (rt, tt, rc)"
            }
            Self::Square => {
                "https://developer.squareup.com/docs/webhooks/troubleshooting (10 s, 24 hours); \
                 https://developer.squareup.com/docs/webhooks-api/delivery-sla (intervals)"
            }
            Self::Paddle => "https://developer.paddle.com/webhooks/about/respond-to-webhooks",
            Self::Sendgrid => {
                "https://docs.sendgrid.com/for-developers/tracking-events/troubleshooting (24 hours)"
            }
            Self::Discord => {
                "https://discord.com/developers/docs/interactions/receiving-and-responding (3 s)"
            }
            Self::Linear => "https://developers.linear.app/docs/graphql/webhooks (5 s, 3 retries)",
            Self::Gitlab => {
                "https://docs.gitlab.com/user/project/integrations/webhooks/ (no retries); 10 s: third parties"
            }
            Self::Zoom => "https://developers.zoom.us/blog/webhook-delays (3 s, 5/20/60 minutes)",
            Self::Twitch => "https://dev.twitch.tv/docs/eventsub/handling-webhook-events (\"a few seconds\")",
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
        assert!(schemes.len() >= 4, "cases for each signing scheme: {schemes:?}");
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

    #[derive(serde::Deserialize)]
    struct ProviderCases {
        cases: Vec<ProviderCase>,
    }

    #[derive(serde::Deserialize)]
    struct ProviderCase {
        provider: Scheme,
        case: String,
        timestamp: i64,
        now: i64,
        accepted: bool,
    }

    /// What the ten providers' libraries decided about hookbench's deliveries
    /// (harness/tests/vectors/providers.json: valid, tampered, wrong key, stale, just inside the
    /// tolerance, an hour ahead, replayed to another path) is what the rules say they accept.
    #[test]
    fn the_rules_are_the_ten_providers_libraries() {
        let file: ProviderCases = serde_json::from_str(include_str!("../../tests/vectors/providers.json"))
            .expect("provider vectors are JSON");
        for c in &file.cases {
            let (scheme, what) = (c.provider, format!("{} {}", c.provider.as_str(), c.case));
            let rules = scheme.verification().expect("signs");
            let expected = match c.case.as_str() {
                "valid" => true,
                "wrong-key" => false,
                "tampered-body" => !scheme.signs_body(),
                "other-path" => !scheme.signs_url(),
                "stale" | "just-inside" | "future" => rules.accepts_offset(c.timestamp - c.now),
                other => panic!("{what}: a case the rules do not know: {other}"),
            };
            assert_eq!(expected, c.accepted, "{what}");
        }
        let cases = |name: &str| file.cases.iter().filter(|c| c.case == name).count();
        // Ten providers, Twilio twice (a form, and JSON through its hash in the URL).
        assert_eq!((cases("valid"), cases("tampered-body"), cases("wrong-key")), (11, 11, 11));
        assert_eq!(cases("other-path"), 3, "Twilio (both bodies) and Square sign the URL");
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
        // The ten added later: the windows their documentation gives.
        assert!((total(Provider::Sendgrid).as_secs_f64() - 24.0 * 3600.0).abs() < 1e-6);
        assert_eq!(Provider::Paddle.retry_delays().len(), 60);
        assert_eq!(total(Provider::Paddle), Duration::from_secs(72 * 3600));
        assert!(total(Provider::Square) <= Duration::from_secs(24 * 3600), "up to 24 hours");
        assert_eq!(Provider::Square.retry_delays()[..3], [60, 120, 240].map(Duration::from_secs));
        assert_eq!(Provider::Slack.retry_delays(), [0, 60, 300].map(Duration::from_secs));
        assert_eq!(Provider::Zoom.retry_delays(), [300, 1200, 3600].map(Duration::from_secs));
        for p in Provider::ALL.iter().copied() {
            let never = matches!(p.retries_on(), RetryOn::Never | RetryOn::Undocumented);
            assert_eq!(
                never,
                p.retry_delays().is_empty(),
                "{}: a schedule exactly when it retries",
                p.as_str()
            );
        }
        assert_eq!(Provider::Twilio.retries_on(), RetryOn::ConnectFailure);
    }

    /// Slack numbers its retries and says why; the first delivery, and other providers, carry
    /// nothing of the kind.
    #[test]
    fn slack_retries_say_their_number_and_reason() {
        use crate::report::model::Fate;
        let h = Provider::Slack.retry_headers(2, Fate::NoConnection);
        assert_eq!(
            h,
            [
                ("x-slack-retry-num", "2".to_string()),
                ("x-slack-retry-reason", "connection_failed".to_string())
            ]
        );
        assert_eq!(Provider::Slack.retry_headers(1, Fate::Answered(500))[1].1, "http_error");
        assert_eq!(Provider::Slack.retry_headers(3, Fate::TimedOut)[1].1, "http_timeout");
        assert!(Provider::Slack.retry_headers(0, Fate::TimedOut).is_empty());
        assert!(Provider::Zoom.retry_headers(1, Fate::TimedOut).is_empty());
    }

    /// Every provider a scheme names is the scheme's own, and each name is the same on both.
    #[test]
    fn each_scheme_names_its_provider() {
        for scheme in Scheme::ALL.iter().copied() {
            match scheme.provider() {
                Some(p) => assert_eq!(p.as_str(), scheme.as_str()),
                None => assert_eq!(scheme, Scheme::None),
            }
        }
        assert_eq!(Provider::ALL.len() + 1, Scheme::ALL.len());
    }
}
