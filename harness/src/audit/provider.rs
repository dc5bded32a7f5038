//! The providers whose delivery timeout and retry schedule an audit holds a receiver to. The
//! figures are those docs/audit.md tabulates with their sources; where a provider documents only a
//! window ("8 retries over 4 hours", "up to 3 days with exponential backoff"), the schedule is
//! hookbench's reading of it, doubling waits that fill the window, and the table says so.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A webhook provider.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// Stripe.
    Stripe,
    /// GitHub.
    Github,
    /// Shopify.
    Shopify,
    /// Svix and the Standard Webhooks senders that follow its schedule.
    StandardWebhooks,
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
