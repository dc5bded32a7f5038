//! Check 7, hostile input: requests that must be refused (a tampered body, a wrong secret, no
//! signature headers, timestamps an hour old and ahead, malformed JSON, an oversized body), the
//! cases that broke hookbench's own receivers (one signed delivery to other paths, one id with
//! another body, credits whose sum overflows 64 bits), and a body stalled after 10 bytes. What
//! must be refused is what the provider's own library refuses (`Verification`): Stripe's accepts
//! a timestamp an hour ahead, so a receiver may too. PASS: every refusal a 4xx (the oversized body
//! may instead be cut off) and never applied; the rest applied at most once and never
//! acknowledged-and-lost; the stalled body answered or closed within `--stall-wait`.

use bytes::Bytes;

use std::time::Duration;

use super::{AuditCheck, CheckSettings, Delivery, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::accounts::Layout;
use crate::audit::config::AuditConfig;
use crate::audit::config::bounds::{MINUTE, duration, ms, number, s, within};
use crate::audit::ctx::{Ctx, Delivered, Probes, now_s};
use crate::judge::{Class, Expect, Needs};
use crate::report::{Check, MALFORMED_BODY};
use crate::wire::{Fields, Provider, Scheme};

/// How long a stalled body may be held.
const STALL_WAIT: std::ops::RangeInclusive<Duration> = ms(100)..=s(10 * MINUTE);
/// The oversized body: past every provider's cap, within what one allocation should take.
const OVERSIZED_BYTES: std::ops::RangeInclusive<usize> = 1024..=(128 << 20);

/// The check's flags.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "hostile-input")]
pub struct Flags {
    /// How long a stalled body may be held open before it counts against the receiver (100ms to
    /// 10m).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub stall_wait: Duration,
    /// A size past your receiver's body limit, 1024 to 134217728 bytes: the hostile-input check
    /// sends a signed body of it, which must not be taken. Without it, the check sends the credit's
    /// own body padded to 8 MiB (or 1 MiB past the provider's own cap where it documents one: 26
    /// MiB for GitHub's 25 MB), which a receiver may take, as the provider's library would, and
    /// then must apply once.
    #[arg(long)]
    pub oversized_bytes: Option<usize>,
}

/// The check's settings, from its flags and the provider.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long a stalled body may be held.
    stall_wait: Duration,
    /// The oversized body's size.
    oversized_bytes: usize,
    /// Whether the user named that size (`--oversized-bytes`) as past their receiver's limit, so
    /// that a body of it must not be taken. Without it, a receiver may take the body: every
    /// provider's library verifies a signature over any length (@octokit/webhooks accepted
    /// GitHub's 25 MB cap plus 1 MiB), and refusing more than a provider ever sends is hardening,
    /// not the provider's rule.
    oversized_is_limit: bool,
}

impl Flags {
    /// The settings for a receiver held to `provider`'s rules, within their bounds.
    pub fn settings(&self, provider: Option<Provider>) -> Result<Settings, AuditError> {
        let oversized_bytes = self.oversized_bytes.unwrap_or_else(|| default_oversized_bytes(provider));
        within("--stall-wait", self.stall_wait, &STALL_WAIT, duration)?;
        within("--oversized-bytes", oversized_bytes, &OVERSIZED_BYTES, number)?;
        let oversized_is_limit = self.oversized_bytes.is_some();
        Ok(Settings { stall_wait: self.stall_wait, oversized_bytes, oversized_is_limit })
    }
}

impl Settings {
    /// How long a stalled body may be held (`--stall-wait`).
    pub fn stall_wait(&self) -> Duration {
        self.stall_wait
    }
}

/// The oversized body's size without `--oversized-bytes`: 8 MiB, or 1 MiB past the provider's own
/// cap where it documents one, so that a receiver sized to what its provider sends must still
/// refuse it.
fn default_oversized_bytes(provider: Option<Provider>) -> usize {
    let floor = 8 << 20;
    provider.and_then(Provider::max_payload_bytes).map_or(floor, |cap| (cap + (1 << 20)).max(floor))
}

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::HostileInput, phase: Phase::Probe, build };

/// Builds the check with `--oversized-bytes` and `--stall-wait`.
fn build<'a>(
    config: &'a AuditConfig,
    checks: &'a CheckSettings,
) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    let p = &checks.hostile_input;
    Ok(Box::new(HostileInput {
        oversized_bytes: p.oversized_bytes,
        oversized_is_limit: p.oversized_is_limit,
        stall_wait: p.stall_wait,
        overflow: overflow_unsent(config),
    }))
}

struct HostileInput {
    oversized_bytes: usize,
    oversized_is_limit: bool,
    stall_wait: Duration,
    /// Why the two overflowing credits are not sent, when they are not.
    overflow: Option<&'static str>,
}

/// The most times one of its credits reaches the receiver: a signed delivery replayed to two
/// other paths.
const REACH: u32 = 3;

/// Its credits at most: the refusals (5), malformed, oversized, the replays (2, and 1 to
/// another path where the URL is signed), the overflowing pair, the stall.
const CREDITS: usize = 13;

/// Why the two credits of 2^62 to one account cannot be judged, when they cannot: in the scarce
/// layout every account's amounts are place values, and a count of rows cannot tell which of the
/// two was applied (their amounts tell a balance, and ids an applied query or a sink).
fn overflow_unsent(config: &AuditConfig) -> Option<&'static str> {
    let q = &config.watch.queries;
    let by_id = q.applied.is_some() || config.watch.sink.is_some();
    if matches!(config.layout, Layout::Scarce { .. }) {
        Some("two credits of 2^62 to one account (--accounts shares accounts by place values)")
    } else if !by_id && q.balance.is_none() && q.count.is_some() {
        Some("two credits of 2^62 to one account (a count of rows cannot say which was applied)")
    } else {
        None
    }
}

/// What a delivery with a timestamp `offset_s` from now is expected to meet under `scheme`'s
/// provider's library: refused when the library refuses it, else at most once.
fn timestamp_expect(scheme: Scheme, offset_s: i64) -> Expect {
    match scheme.verification() {
        Some(v) if !v.accepts_offset(offset_s) => Expect::Refused,
        _ => Expect::AtMostOnce,
    }
}

/// What a tampered body with a valid signature header must meet, and its note: refused where the
/// scheme signs the body; where it does not (GitLab's token is the secret itself, sent as it is),
/// the provider itself could send that request, so a correct receiver accepts it, at most once.
fn tampered_expect(scheme: Scheme) -> (Expect, &'static str) {
    if scheme.signs_body() {
        (Expect::Refused, "tampered body")
    } else {
        (
            Expect::AtMostOnce,
            "tampered body under the right token (the token signs no body: a receiver may take it)",
        )
    }
}

/// The body sent under `signed`'s signature as a tampered one: `raised` (the credit with its
/// amount raised) when it differs from what was signed, else `signed` with a key added after its
/// opening brace. A body that carries no amount (a GitHub issue) renders the same with any
/// amount, and sending the signed bytes as "tampered" would fail a receiver for accepting an
/// untouched delivery.
fn tamper(signed: &Bytes, raised: Bytes) -> Bytes {
    if raised != signed {
        return raised;
    }
    let mut body = signed.to_vec();
    match body.iter().position(|&b| b == b'{') {
        Some(at) => {
            body.splice(at + 1..at + 1, b"\"hookbench_tampered\":true,".iter().copied());
        }
        None => body.extend_from_slice(b" "),
    }
    Bytes::from(body)
}

/// Other paths on the same receiver: the last segment changed, and one added.
fn other_paths(path: &str) -> Vec<String> {
    let path = path.split('?').next().unwrap_or(path).trim_end_matches('/');
    let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
    vec![format!("{parent}/hookbench-other"), format!("{path}-replayed")]
}

fn oversized_body(id: &str, bytes: usize) -> Bytes {
    let mut body = format!("{{\"id\":\"{id}\",\"padding\":\"").into_bytes();
    body.resize(bytes.saturating_sub(2).max(body.len()), b'x');
    body.extend_from_slice(b"\"}");
    Bytes::from(body)
}

/// `body` grown to `bytes` by a padding key after its opening brace (`None` when it has no
/// opening brace, or is already that long): still the event, only larger.
fn padded(body: &[u8], bytes: usize) -> Option<Bytes> {
    const KEY: &[u8] = b"\"hookbench_padding\":\"";
    let at = body.iter().position(|&b| b == b'{')? + 1;
    // An empty object takes the key without the comma that would separate it from the next.
    let empty = body[at..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'}');
    let close: &[u8] = if empty { b"\"" } else { b"\"," };
    let fill = bytes.checked_sub(body.len() + KEY.len() + close.len())?;
    let mut out = Vec::with_capacity(bytes);
    out.extend_from_slice(&body[..at]);
    out.extend_from_slice(KEY);
    out.resize(out.len() + fill, b'x');
    out.extend_from_slice(close);
    out.extend_from_slice(&body[at..]);
    Some(Bytes::from(out))
}

/// The check's next credit: ids `hos_0001` on, each to an account of its own.
struct Next(usize);

impl Next {
    fn credit(&mut self, ctx: &Ctx) -> Result<Fields, AuditError> {
        self.0 += 1;
        ctx.credit("hos", self.0, 100, REACH)
    }

    /// The next credit, of `amount` to `account`, whatever the layout.
    fn credit_to(&mut self, ctx: &Ctx, account: i64, amount: i64) -> Fields {
        self.0 += 1;
        ctx.credit_to("hos", self.0, account, amount)
    }
}

impl HostileInput {
    /// The oversized delivery of `f`: what it must meet, its body and its note. Past the limit
    /// the user named, a body the receiver must not take; else `f`'s own body padded to the size,
    /// which the provider's library would verify, so a receiver may take it (and then apply it
    /// once) or refuse it.
    fn oversized(&self, ctx: &Ctx, f: &Fields) -> (Expect, Bytes, String) {
        let n = self.oversized_bytes;
        if self.oversized_is_limit {
            let note = format!("{n}{}", crate::report::model::PAST_THE_LIMIT);
            (Expect::NotAcked, oversized_body(&f.id, n), note)
        } else {
            let note =
                format!("{n} byte body, signed (a receiver may take it: the provider's library would)");
            (
                Expect::AtMostOnce,
                padded(&ctx.wire.body(f, now_s()), n).unwrap_or_else(|| oversized_body(&f.id, n)),
                note,
            )
        }
    }

    /// The requests a scheme that signs must refuse: tampered, wrong secret, unsigned, and the
    /// timestamps its library refuses.
    async fn refusals(&self, ctx: &Ctx, next: &mut Next, p: &mut Probes) -> Result<(), AuditError> {
        let scheme = ctx.wire.signer.scheme();
        let f = next.credit(ctx)?;
        let (signed, headers) = ctx.wire.attempt(&f, now_s());
        let mut tampered = f.clone();
        // Not a multiple of any credit's amount: applied, it cannot pass for other credits' applies.
        tampered.amount += 1_000_001;
        // Where the body is not signed (GitLab), the tampered body is the event itself with a key
        // added: a receiver right to take it applies what the event says, and the judge books it
        // as that event.
        let raised = if scheme.signs_body() { ctx.wire.body(&tampered, now_s()) } else { signed.clone() };
        let tampered = tamper(&signed, raised);
        let (expect, note) = tampered_expect(scheme);
        let mut sent = Delivered::new(f, expect);
        sent.push(ctx.probe.post(None, &headers, tampered, note).await);
        p.events.push(sent);

        let mut sent = Delivered::new(next.credit(ctx)?, Expect::Refused);
        let stranger = ctx.wire.signed_by(ctx.wire.signer.stranger());
        sent.push(ctx.deliver_over(&stranger, &sent.fields, "wrong secret").await);
        p.events.push(sent);

        let mut sent = Delivered::new(next.credit(ctx)?, Expect::Refused);
        let body = ctx.wire.body(&sent.fields, now_s());
        let json = [("content-type", "application/json".to_string())];
        sent.push(ctx.probe.post(None, &json, body, "no signature headers").await);
        p.events.push(sent);

        if scheme.has_timestamp() {
            for (offset, what) in [(-3600, "an hour old"), (3600, "an hour ahead")] {
                let expect = timestamp_expect(scheme, offset);
                let f = next.credit(ctx)?;
                let (body, headers) = ctx.wire.attempt(&f, now_s() + offset);
                let mut sent = Delivered::new(f, expect);
                let note = match expect {
                    Expect::Refused => format!("timestamp {what}"),
                    _ => format!("timestamp {what} (the provider's library accepts it)"),
                };
                sent.push(ctx.probe.post(None, &headers, body, &note).await);
                p.events.push(sent);
            }
        }
        Ok(())
    }

    /// The cases that broke hookbench's own receivers.
    async fn replays(&self, ctx: &Ctx, next: &mut Next, p: &mut Probes) -> Result<(), AuditError> {
        let f = next.credit(ctx)?;
        let (body, headers) = ctx.wire.attempt(&f, now_s());
        let mut sent = Delivered::new(f, Expect::AtMostOnce);
        sent.push(ctx.probe.post(None, &headers, body.clone(), "to the URL").await);
        for other in other_paths(ctx.probe.path()) {
            let note = format!("the same signed delivery to {other}");
            sent.push(ctx.probe.post(Some(&other), &headers, body.clone(), &note).await);
        }
        p.events.push(sent);

        if ctx.wire.signer.scheme().refuses_other_paths() {
            // Signed for the URL, received at another: the provider's library refuses it.
            let f = next.credit(ctx)?;
            let (body, headers) = ctx.wire.attempt(&f, now_s());
            let mut sent = Delivered::new(f, Expect::Refused);
            for other in other_paths(ctx.probe.path()).into_iter().take(1) {
                let note = format!("signed for the URL, sent only to {other} (the URL is signed)");
                sent.push(ctx.probe.post(Some(&other), &headers, body.clone(), &note).await);
            }
            p.events.push(sent);
        }

        let f = next.credit(ctx)?;
        let mut sent = Delivered::new(f.clone(), Expect::AtMostOnce);
        sent.push(ctx.deliver(&f, "first body").await);
        let mut rebodied = f;
        rebodied.amount = 999;
        sent.push(ctx.deliver(&rebodied, "the same id with another body").await);
        p.events.push(sent);

        if self.overflow.is_some() {
            return Ok(());
        }
        let account = ctx.account();
        for i in 0..2 {
            // Two amounts, so that a balance can say which of the two was applied.
            let f = next.credit_to(ctx, account, (1 << 62) + i);
            let mut sent = Delivered::new(f, Expect::AtMostOnce);
            let note = format!("credit {} of 2 of 2^62 to one account (their sum overflows 64 bits)", i + 1);
            sent.push(ctx.deliver(&sent.fields, &note).await);
            p.events.push(sent);
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl AuditCheck for HostileInput {
    fn plan(&self, _config: &AuditConfig) -> Plan {
        Plan::credits(CREDITS, REACH)
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let ctx = run.ctx;
        let fail = [
            Class::Duplicate,
            Class::Lost,
            Class::RefusedApplied,
            Class::NotRefused,
            Class::HeldOpen,
            Class::UnexplainedChange,
        ];
        let mut p = Probes::new(INFO.check, &fail, &[Needs::Applies]);
        let mut next = Next(0);
        let scheme = ctx.wire.signer.scheme();
        let mut skipped = Vec::new();
        if scheme.signs() {
            self.refusals(ctx, &mut next, &mut p).await?;
            if !scheme.has_timestamp() {
                skipped.push("stale and future timestamps (the scheme signs none)");
            }
        } else {
            skipped.push("tampered, wrong-secret, unsigned and stale requests (--signing none)");
        }
        let f = next.credit(ctx)?;
        let malformed = Bytes::from(format!("{{\"id\": \"{}\", \"amount\": ", f.id));
        let headers = ctx.wire.headers(&f, &malformed, now_s());
        // To a form-encoded provider (Twilio) that text is a well-formed form of one odd field,
        // validly signed: a receiver may acknowledge a callback it does not know, as Twilio's
        // handlers usually do, so it is not expected refused there.
        let form = ctx.wire.payload.content_type().ends_with("x-www-form-urlencoded");
        let mut sent = Delivered::new(f, if form { Expect::AtMostOnce } else { Expect::Refused });
        sent.push(ctx.probe.post(None, &headers, malformed, MALFORMED_BODY).await);
        p.events.push(sent);

        let f = next.credit(ctx)?;
        let (expect, oversized, note) = self.oversized(ctx, &f);
        let headers = ctx.wire.headers(&f, &oversized, now_s());
        let mut sent = Delivered::new(f, expect);
        sent.push(ctx.probe.post(None, &headers, oversized, &note).await);
        p.events.push(sent);

        self.replays(ctx, &mut next, &mut p).await?;
        skipped.extend(self.overflow);

        let f = next.credit(ctx)?;
        let (body, headers) = ctx.wire.attempt(&f, now_s());
        let (took, log) = ctx.probe.stall(&headers, 1_000_000, (&body, 10), self.stall_wait).await;
        let mut sent = Delivered::new(f, Expect::NotAcked);
        match took {
            Some(_) => sent.unanswered(log),
            None => sent.held_open(log),
        }
        p.events.push(sent);
        let stall = took.map_or_else(
            || format!("stalled body still held after {:?}", self.stall_wait),
            |t| format!("stalled body closed after {:.1} s", t.as_secs_f64()),
        );
        p.note =
            if skipped.is_empty() { stall } else { format!("{stall}; not sent: {}", skipped.join("; ")) };
        Ok(Box::new(p) as Box<dyn Delivery>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An hour ahead is refused where the provider's library refuses it (Standard Webhooks) and
    /// may be accepted where it accepts it (Stripe); an hour old is refused by both.
    #[test]
    fn what_must_be_refused_is_what_the_providers_library_refuses() {
        assert_eq!(timestamp_expect(Scheme::StandardWebhooks, 3600), Expect::Refused);
        assert_eq!(timestamp_expect(Scheme::Stripe, 3600), Expect::AtMostOnce);
        assert_eq!(timestamp_expect(Scheme::StandardWebhooks, -3600), Expect::Refused);
        assert_eq!(timestamp_expect(Scheme::Stripe, -3600), Expect::Refused);
        // Libraries that sign a timestamp and never read the clock accept any age.
        for lax in [Scheme::Sendgrid, Scheme::Discord, Scheme::Zoom] {
            assert_eq!(timestamp_expect(lax, -3600), Expect::AtMostOnce, "{}", lax.as_str());
        }
        // Paddle's library allows 5 s either way; Slack's 5 minutes both ways; Linear's 60 s both
        // ways; Twitch's documentation 10 minutes in the past and any distance ahead.
        assert_eq!(timestamp_expect(Scheme::Paddle, -6), Expect::Refused);
        assert_eq!(timestamp_expect(Scheme::Paddle, -5), Expect::AtMostOnce);
        assert_eq!(timestamp_expect(Scheme::Paddle, 6), Expect::Refused);
        assert_eq!(timestamp_expect(Scheme::Twitch, 3600), Expect::AtMostOnce);
        assert_eq!(timestamp_expect(Scheme::Slack, 301), Expect::Refused);
        assert_eq!(timestamp_expect(Scheme::Slack, -300), Expect::AtMostOnce);
        assert_eq!(timestamp_expect(Scheme::Linear, 61), Expect::Refused);
        assert_eq!(timestamp_expect(Scheme::Twitch, -601), Expect::Refused);
        assert_eq!(timestamp_expect(Scheme::Twitch, -600), Expect::AtMostOnce);
    }

    /// GitLab's token signs no body: a tampered body under the right token is what GitLab itself
    /// could send, so it is not expected refused; every scheme that signs the body refuses it.
    #[test]
    fn a_tampered_body_is_expected_refused_only_where_the_body_is_signed() {
        assert_eq!(tampered_expect(Scheme::Gitlab).0, Expect::AtMostOnce);
        for scheme in Scheme::ALL.iter().copied().filter(|s| s.signs() && *s != Scheme::Gitlab) {
            assert_eq!(tampered_expect(scheme).0, Expect::Refused, "{}", scheme.as_str());
        }
    }

    #[test]
    fn a_tampered_body_never_goes_out_as_the_signed_bytes() {
        let signed = Bytes::from_static(br#"{"action":"opened","issue":{}}"#);
        // The raised amount changed the body: it is the tampered one.
        let raised = Bytes::from_static(br#"{"amount":1000100}"#);
        assert_eq!(tamper(&signed, raised.clone()), raised);
        // A body with no amount renders the same: a key goes in, and the JSON still parses.
        let tampered = tamper(&signed, signed.clone());
        assert_ne!(tampered, signed);
        let v: serde_json::Value = serde_json::from_slice(&tampered).expect("JSON");
        assert_eq!(v["hookbench_tampered"], true);
        assert_eq!(v["action"], "opened");
        // Not JSON at all: still not the signed bytes.
        let odd = Bytes::from_static(b"x");
        assert_ne!(tamper(&odd, odd.clone()), odd);
    }

    #[test]
    fn a_padded_body_is_the_event_at_the_size_asked() {
        let body = br#"{"id":"evt_1","amount":100}"#;
        let big = padded(body, 4096).expect("room to pad");
        assert_eq!(big.len(), 4096);
        let v: serde_json::Value = serde_json::from_slice(&big).expect("JSON");
        assert_eq!((v["id"].as_str(), v["amount"].as_i64()), (Some("evt_1"), Some(100)));
        let empty = padded(b"{}", 64).expect("room to pad");
        assert_eq!(empty.len(), 64);
        serde_json::from_slice::<serde_json::Value>(&empty).expect("an empty object padded is JSON");
        assert_eq!(padded(body, 10), None, "already longer");
        assert_eq!(padded(b"[1]", 4096), None, "no object to pad");
    }

    #[test]
    fn the_oversized_body_is_past_the_providers_cap() {
        assert_eq!(default_oversized_bytes(None), 8 << 20);
        assert_eq!(default_oversized_bytes(Some(Provider::Stripe)), 8 << 20);
        assert_eq!(default_oversized_bytes(Some(Provider::Github)), 26 << 20);
    }

    #[test]
    fn other_paths_change_the_last_segment_and_add_one() {
        assert_eq!(other_paths("/webhooks/acme"), ["/webhooks/hookbench-other", "/webhooks/acme-replayed"]);
    }
}
