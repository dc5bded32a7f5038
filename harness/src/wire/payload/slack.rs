//! Slack's bodies: an Events API `event_callback` (`token`, `team_id`, `api_app_id`, `event`,
//! `event_id`, `event_time`, `authorizations`), the delivery's id in `event_id`. The inner event
//! is a message the app posted with message metadata (`message`, `message_metadata_posted`) or a
//! change of that metadata (`message_metadata_updated`): the metadata's `event_payload` is where
//! an app's own data travels in Slack's events, so the account, the amount and the version sit
//! there (`/event/metadata/event_payload/account`, `.../amount`, `.../version`). The message
//! (its `ts`) is the object an event is about.

use serde_json::{Value, json};

use super::Kind;
use super::spec::{EventSpec, Owner, Subject};

const TEAM: &str = "T0HOOKBENCH";
const APP: &str = "A0HOOKBENCH";
const BOT: &str = "B0HOOKBENCH";
const BOT_USER: &str = "U0HOOKBENCH";
const CHANNEL: &str = "C0HOOKBENCH";
/// The app's verification token (deprecated by Slack in favour of the signature, still sent).
const VERIFICATION_TOKEN: &str = "hookbenchVerificationToken0";

/// Slack's event types hookbench writes.
pub(super) const EVENTS: &[EventSpec] = &[
    metadata_event("message", Owner::Event, message),
    metadata_event("message_metadata_posted", Owner::Event, metadata_posted),
    metadata_event("message_metadata_updated", Owner::Account, metadata_updated),
];

const fn metadata_event(name: &'static str, owner: Owner, build: fn(&Subject<'_>) -> Value) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner,
        build,
        account: "/event/metadata/event_payload/account",
        amount: Some("/event/metadata/event_payload/amount"),
        version: Some("/event/metadata/event_payload/version"),
    }
}

/// The `event_callback` around `event`.
fn callback(s: &Subject<'_>, event: Value) -> Value {
    json!({
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM,
        "context_team_id": TEAM,
        "context_enterprise_id": null,
        "api_app_id": APP,
        "event": event,
        "type": "event_callback",
        "event_id": s.f.id,
        "event_time": s.f.created,
        "authorizations": [{
            "enterprise_id": null, "team_id": TEAM, "user_id": BOT_USER, "is_bot": true,
            "is_enterprise_install": false,
        }],
        "is_ext_shared_channel": false,
        "event_context": format!("4-{}", s.event_hex("context", 48)),
    })
}

/// The message's metadata: the app's own type and its payload.
fn metadata(s: &Subject<'_>) -> Value {
    match s.f.kind {
        Kind::Credit => json!({
            "event_type": "credit_added",
            "event_payload": { "id": s.token, "account": s.f.account, "amount": s.f.amount },
        }),
        Kind::Update => json!({
            "event_type": "plan_updated",
            "event_payload": { "id": s.token, "account": s.f.account, "plan": s.f.plan, "version": s.f.version },
        }),
    }
}

/// The message's `ts` (its id in the channel): stable for the object's token.
fn message_ts(s: &Subject<'_>) -> String {
    let n = s.numeric_id("ts");
    format!("{}.{:06}", 1_700_000_000 + n % 60_000_000, (n / 60_000_000) % 1_000_000)
}

/// When the event happened, as Slack writes it (`<seconds>.<microseconds>`).
fn event_ts(s: &Subject<'_>) -> String {
    format!("{}.{:06}", s.f.created, s.numeric_id("event-ts") % 1_000_000)
}

fn message(s: &Subject<'_>) -> Value {
    let ts = message_ts(s);
    callback(
        s,
        json!({
            "type": "message", "channel": CHANNEL, "channel_type": "channel", "user": BOT_USER,
            "bot_id": BOT, "app_id": APP, "team": TEAM,
            "text": format!("hookbench event {}", s.token), "blocks": [],
            "ts": ts, "event_ts": ts, "metadata": metadata(s),
        }),
    )
}

fn metadata_posted(s: &Subject<'_>) -> Value {
    callback(
        s,
        json!({
            "type": "message_metadata_posted", "app_id": APP, "bot_id": BOT, "user_id": BOT_USER,
            "team_id": TEAM, "channel_id": CHANNEL, "metadata": metadata(s),
            "message_ts": message_ts(s), "event_ts": event_ts(s),
        }),
    )
}

fn metadata_updated(s: &Subject<'_>) -> Value {
    let previous = json!({ "event_type": metadata(s)["event_type"], "event_payload": { "id": s.token } });
    callback(
        s,
        json!({
            "type": "message_metadata_updated", "app_id": APP, "bot_id": BOT, "user_id": BOT_USER,
            "team_id": TEAM, "channel_id": CHANNEL, "previous_metadata": previous,
            "metadata": metadata(s), "message_ts": message_ts(s), "event_ts": event_ts(s),
        }),
    )
}
