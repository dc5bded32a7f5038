//! Twitch's bodies: an EventSub notification `{subscription: {id, status, type, version, cost,
//! condition, transport, created_at}, event}` as Twitch's EventSub reference shows each type's,
//! with `Twitch-Eventsub-Subscription-Type` and `-Version` beside it (the message's id,
//! timestamp, type and signature are the signer's). The account is the broadcaster
//! (`event.broadcaster_user_id`, a string of digits: the channel is the customer); a redemption's
//! amount is the reward's `cost` in channel points, a cheer's its `bits`; a resubscription's
//! version is its `cumulative_months`. The redemption (its `id`) is the object an event is about.

use serde_json::{Value, json};

use super::spec::{EventSpec, Owner, Subject, joined};

const REDEMPTION: &str = "channel.channel_points_custom_reward_redemption.add";

/// Twitch's subscription types hookbench writes.
pub(super) const EVENTS: &[EventSpec] = &[
    EventSpec {
        name: REDEMPTION,
        header: "",
        owner: Owner::Event,
        build: redemption,
        account: "/event/broadcaster_user_id",
        amount: Some("/event/reward/cost"),
        version: None,
    },
    EventSpec {
        name: "channel.cheer",
        header: "",
        owner: Owner::Event,
        build: cheer,
        account: "/event/broadcaster_user_id",
        amount: Some("/event/bits"),
        version: None,
    },
    EventSpec {
        name: "channel.subscription.message",
        header: "",
        owner: Owner::Account,
        build: resubscription,
        account: "/event/broadcaster_user_id",
        amount: None,
        version: Some("/event/cumulative_months"),
    },
    EventSpec {
        name: "channel.follow",
        header: "",
        owner: Owner::Event,
        build: follow,
        account: "/event/broadcaster_user_id",
        amount: None,
        version: None,
    },
];

/// The version of a subscription type (`channel.follow` is at 2).
fn version(name: &str) -> &'static str {
    if name == "channel.follow" { "2" } else { "1" }
}

/// The headers Twitch sends beside the body: the subscription's type and version.
pub(super) fn headers(name: &str) -> Vec<(&'static str, String)> {
    vec![
        ("twitch-eventsub-subscription-type", name.to_string()),
        ("twitch-eventsub-subscription-version", version(name).to_string()),
    ]
}

/// The broadcaster (the account) and the viewer, as an event names them.
fn people(s: &Subject<'_>) -> Value {
    let broadcaster = s.f.account.to_string();
    json!({
        "broadcaster_user_id": broadcaster, "broadcaster_user_login": format!("account{broadcaster}"),
        "broadcaster_user_name": format!("Account{broadcaster}"),
        "user_id": (s.numeric_id("viewer") % 1_000_000_000).to_string(),
        "user_login": "hookbench_viewer", "user_name": "hookbench_viewer",
    })
}

/// The notification of the account's subscription to `condition`, around `event`.
fn notification(s: &Subject<'_>, condition: Value, event: Value) -> Value {
    json!({
        "subscription": {
            "id": s.account_uuid(s.event_type), "status": "enabled", "type": s.event_type,
            "version": version(s.event_type), "cost": 0, "condition": condition,
            "transport": { "method": "webhook", "callback": "https://hookbench.invalid/webhooks/twitch" },
            "created_at": s.created_fraction(9),
        },
        "event": event,
    })
}

fn broadcaster_condition(s: &Subject<'_>) -> Value {
    json!({ "broadcaster_user_id": s.f.account.to_string() })
}

fn redemption(s: &Subject<'_>) -> Value {
    let reward = s.account_uuid("reward");
    let event = joined([
        people(s),
        json!({
            "id": s.uuid("redemption"), "user_input": format!("hookbench event {}", s.token),
            "status": "unfulfilled", "redeemed_at": s.created_fraction(9),
            "reward": { "id": reward, "title": "hookbench credit", "cost": s.f.amount, "prompt": "Credits the account." },
        }),
    ]);
    let condition = json!({ "broadcaster_user_id": s.f.account.to_string(), "reward_id": reward });
    notification(s, condition, event)
}

fn cheer(s: &Subject<'_>) -> Value {
    let event = joined([
        people(s),
        json!({
            "is_anonymous": false, "bits": s.f.amount,
            "message": format!("Cheer{} hookbench event {}", s.f.amount, s.token),
        }),
    ]);
    notification(s, broadcaster_condition(s), event)
}

fn resubscription(s: &Subject<'_>) -> Value {
    let event = joined([
        people(s),
        json!({
            "tier": "1000", "message": { "text": format!("hookbench {}", s.f.plan), "emotes": [] },
            "cumulative_months": s.f.version, "streak_months": null, "duration_months": 1,
        }),
    ]);
    notification(s, broadcaster_condition(s), event)
}

fn follow(s: &Subject<'_>) -> Value {
    let event = joined([people(s), json!({ "followed_at": s.created_fraction(9) })]);
    let condition = json!({ "broadcaster_user_id": s.f.account.to_string(), "moderator_user_id": s.f.account.to_string() });
    notification(s, condition, event)
}
