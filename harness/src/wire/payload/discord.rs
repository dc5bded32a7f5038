//! Discord's bodies: an interaction `{id, application_id, type, data, guild_id, channel_id,
//! member, token, version: 1, ...}`, the delivery's id in `id`: a button pressed on the app's
//! message (`message_component`, type 3), a modal submitted (`modal_submit`, type 5) or a slash
//! command (`application_command`, type 2). The account is the guild (`guild_id`, a snowflake
//! string: the server the app is installed in). A component's or a modal's `data.custom_id` is
//! the app's own string, where apps keep what the interaction is about: here `credit_<amount>`
//! or `plan_<version>`, which is where the amount and the version sit. A slash command carries
//! them in `data.options`, an array a `--field` cannot reach, so that type places neither by
//! default. The message the component is on (or the command's target) is the object.

use serde_json::{Value, json};

use super::Kind;
use super::spec::{EventSpec, Owner, Subject, joined};

const APPLICATION: &str = "1100000000000000001";
const BOT_USER: &str = "1100000000000000002";
const CUSTOM_ID: &str = "/data/custom_id";

/// Discord's interaction types hookbench writes.
pub(super) const EVENTS: &[EventSpec] = &[
    EventSpec {
        name: "message_component",
        header: "",
        owner: Owner::Event,
        build: component,
        account: "/guild_id",
        amount: Some(CUSTOM_ID),
        version: Some(CUSTOM_ID),
    },
    EventSpec {
        name: "modal_submit",
        header: "",
        owner: Owner::Event,
        build: modal,
        account: "/guild_id",
        amount: Some(CUSTOM_ID),
        version: Some(CUSTOM_ID),
    },
    EventSpec {
        name: "application_command",
        header: "",
        owner: Owner::Event,
        build: command,
        account: "/guild_id",
        // In `data.options`, an array.
        amount: None,
        version: None,
    },
];

/// A snowflake made from `n` (a decimal string, as Discord writes ids).
fn snowflake(n: i64) -> String {
    (1_100_000_000_000_000_000 + n).to_string()
}

/// The app's own id of what the interaction is about.
fn custom_id(s: &Subject<'_>) -> String {
    match s.f.kind {
        Kind::Credit => format!("credit_{}", s.f.amount),
        Kind::Update => format!("plan_{}", s.f.version),
    }
}

/// The interaction of `type` around `data` (and the fields of its type).
fn interaction(s: &Subject<'_>, kind: u8, data: Value, own: Value) -> Value {
    let guild = s.f.account.to_string();
    let channel = snowflake(s.f.account.rem_euclid(1_000_000_000) * 1_000);
    let at = s.created_rfc3339();
    let user = json!({
        "id": snowflake(s.f.account.rem_euclid(1_000_000_000) * 1_000 + 1), "username": "hookbench",
        "global_name": "hookbench", "discriminator": "0", "avatar": null, "public_flags": 0,
    });
    let head = json!({
        "id": s.f.id, "application_id": APPLICATION, "type": kind, "data": data,
        "guild_id": guild, "guild": { "id": guild, "features": [], "locale": "en-US" },
        "guild_locale": "en-US", "locale": "en-US", "channel_id": channel,
        "channel": { "id": channel, "guild_id": guild, "name": "general", "type": 0, "flags": 0, "nsfw": false, "parent_id": null, "position": 0, "permissions": "2248473465835073" },
        "member": {
            "user": user, "roles": [], "joined_at": at, "premium_since": null, "permissions": "2248473465835073",
            "nick": null, "avatar": null, "deaf": false, "mute": false, "flags": 0, "pending": false,
            "communication_disabled_until": null,
        },
        "token": format!("aW50ZXJhY3Rpb246{}", s.event_hex("token", 64)),
        "version": 1, "app_permissions": "2248473465835073", "entitlements": [],
        "authorizing_integration_owners": { "0": guild }, "context": 0, "attachment_size_limit": 26_214_400,
    });
    joined([head, own])
}

/// The app's message the interaction is about (its id made from the object's token).
fn message(s: &Subject<'_>) -> Value {
    let channel = snowflake(s.f.account.rem_euclid(1_000_000_000) * 1_000);
    json!({
        "id": snowflake(s.numeric_id("message") % 100_000_000_000_000), "channel_id": channel, "type": 0,
        "content": format!("hookbench event {}", s.token), "timestamp": s.created_rfc3339(),
        "edited_timestamp": null, "tts": false, "mention_everyone": false, "mentions": [],
        "mention_roles": [], "attachments": [], "embeds": [], "pinned": false, "flags": 0,
        "author": { "id": BOT_USER, "username": "hookbench", "global_name": null, "discriminator": "0", "avatar": null, "bot": true, "public_flags": 0 },
        "components": [{ "type": 1, "id": 1, "components": [{ "type": 2, "id": 2, "style": 1, "label": "Apply", "custom_id": custom_id(s) }] }],
    })
}

fn component(s: &Subject<'_>) -> Value {
    let data = json!({ "custom_id": custom_id(s), "component_type": 2, "id": 2 });
    interaction(s, 3, data, json!({ "message": message(s) }))
}

fn modal(s: &Subject<'_>) -> Value {
    let data = json!({
        "custom_id": custom_id(s),
        "components": [{ "type": 1, "id": 1, "components": [{ "type": 4, "id": 2, "custom_id": "note", "value": format!("hookbench event {}", s.token) }] }],
    });
    interaction(s, 5, data, json!({ "message": message(s) }))
}

fn command(s: &Subject<'_>) -> Value {
    let option = |name: &str, kind: u8, value: Value| json!({ "name": name, "type": kind, "value": value });
    let object = option("object", 3, Value::from(s.token.clone()));
    let (name, options) = match s.f.kind {
        Kind::Credit => ("credit", vec![option("amount", 4, Value::from(s.f.amount)), object]),
        Kind::Update => (
            "plan",
            vec![
                option("plan", 3, Value::from(s.f.plan.clone())),
                option("version", 4, Value::from(s.f.version)),
                object,
            ],
        ),
    };
    let data = json!({
        "id": snowflake(3), "name": name, "type": 1, "guild_id": s.f.account.to_string(), "options": options,
    });
    interaction(s, 2, data, json!({}))
}
