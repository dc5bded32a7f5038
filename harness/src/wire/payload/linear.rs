//! Linear's bodies: a data change webhook `{action, type, data, url, createdAt, organizationId,
//! webhookTimestamp, webhookId, actor}` about an issue (`Issue.create`, `Issue.update`,
//! `Issue.remove`), `data` with the keys `@linear/sdk`'s `IssueWebhookPayload` requires. The
//! delivery's id travels in `Linear-Delivery` and the event in `Linear-Event` (the signer's).
//! `webhookTimestamp` is the attempt's time in milliseconds, not the event's: Linear's library
//! refuses a body whose timestamp is more than a minute from its clock, so each attempt's body
//! is its own ([`super::Payload::timestamped`]).
//!
//! The account is the issue's team (`data.team.key`: a team per customer is how Linear's
//! workspaces keep customers apart); the amount is the issue's `estimate` (points of work
//! added), and an update's version is the `estimate` it sets (the latest applied wins). The
//! issue is the object an event is about.

use serde_json::{Value, json};

use super::spec::{EventSpec, Owner, Subject, joined};

const ORGANIZATION: &str = "6f1c8a52-9b0e-4d3a-8f27-5c4e1b2a9d01";
const WEBHOOK: &str = "0b8e6d4c-2a19-4f57-9e3c-7d1a5b6f8c02";
const WORKSPACE: &str = "hookbench";
const ESTIMATE: &str = "/data/estimate";

/// Linear's event types hookbench writes, as `<type>.<action>`.
pub(super) const EVENTS: &[EventSpec] = &[
    issue("Issue.create", Owner::Event),
    issue("Issue.update", Owner::Account),
    issue("Issue.remove", Owner::Account),
];

const fn issue(name: &'static str, owner: Owner) -> EventSpec {
    EventSpec {
        name,
        header: "Issue",
        owner,
        build: issue_event,
        account: "/data/team/key",
        amount: Some(ESTIMATE),
        version: Some(ESTIMATE),
    }
}

fn issue_event(s: &Subject<'_>) -> Value {
    let action = s.event_type.rsplit('.').next().unwrap_or("create");
    let at = s.created_fraction(3);
    let key = s.f.account.to_string();
    let number = s.numeric_id("number") % 100_000 + 1;
    let url = format!("https://linear.app/{WORKSPACE}/issue/{key}-{number}/hookbench-event");
    let user = json!({
        "id": s.account_uuid("user"), "name": "hookbench", "email": "audit@hookbench.invalid",
        "url": format!("https://linear.app/{WORKSPACE}/profiles/hookbench"), "avatarUrl": null,
    });
    let estimate = match s.f.kind {
        super::Kind::Credit => s.f.amount,
        super::Kind::Update => s.f.version,
    };
    let data = joined([
        json!({
            "id": s.uuid("issue"), "createdAt": at, "updatedAt": at,
            "archivedAt": if action == "remove" { Value::from(at.clone()) } else { Value::Null },
            "number": number, "identifier": format!("{key}-{number}"),
            "title": format!("hookbench event {}", s.token),
            "description": format!("Sent by hookbench as {}.", s.f.id), "priority": 0,
            "priorityLabel": "No priority", "prioritySortOrder": 0, "sortOrder": 0, "estimate": estimate,
            "labelIds": [], "labels": [], "previousIdentifiers": [], "subscriberIds": [user["id"]],
            "reactionData": {}, "releases": [], "url": url,
        }),
        json!({
            "teamId": s.account_uuid("team"),
            "team": { "id": s.account_uuid("team"), "key": key, "name": format!("Account {key}") },
            "stateId": s.account_uuid("state"),
            "state": { "id": s.account_uuid("state"), "name": "Todo", "color": "#e2e2e2", "type": "unstarted" },
            "creatorId": user["id"], "creator": user, "assigneeId": null, "cycleId": null,
            "projectId": null, "parentId": null, "dueDate": null, "trashed": action == "remove",
            "startedAt": null, "completedAt": null, "canceledAt": null, "botActor": null,
        }),
    ]);
    let mut body = json!({
        "action": action,
        "actor": { "id": user["id"], "name": "hookbench", "email": "audit@hookbench.invalid", "url": user["url"], "type": "user" },
        "createdAt": at,
        "data": data,
        "url": url,
        "type": "Issue",
        "organizationId": ORGANIZATION,
        "webhookTimestamp": s.sent_at.saturating_mul(1000),
        "webhookId": WEBHOOK,
    });
    if action == "update" {
        body["updatedFrom"] = json!({ "updatedAt": at, "estimate": null });
    }
    body
}
