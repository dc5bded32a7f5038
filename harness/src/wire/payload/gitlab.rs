//! GitLab's bodies: a Push Hook (`push`) or an Issue Hook (`issue.open`, `issue.update`,
//! `issue.close`) as GitLab's webhook events documentation shows them, `X-Gitlab-Event` naming
//! the hook beside the body (the token and the `X-Gitlab-Event-UUID` are the signer's). The
//! account is the project (`project.id`: one project per account, as GitHub's repository); an
//! issue's amount is its `weight` and its version its `lock_version` (GitLab's own
//! optimistic-locking version of the issue); a push's amount is its `total_commits_count`. The
//! issue (or the pushed commit) is the object an event is about.

use serde_json::{Value, json};

use super::spec::{EventSpec, Owner, Subject, joined};

const NAMESPACE: &str = "hookbench-audit";

/// GitLab's event types hookbench writes: the hook, and an issue's action.
pub(super) const EVENTS: &[EventSpec] = &[
    EventSpec {
        name: "push",
        header: "Push Hook",
        owner: Owner::Event,
        build: push,
        account: "/project/id",
        amount: Some("/total_commits_count"),
        // A push holds no version of the account's; `--field version=` names a place.
        version: None,
    },
    issue_event("issue.open", Owner::Event),
    issue_event("issue.update", Owner::Account),
    issue_event("issue.close", Owner::Account),
];

const fn issue_event(name: &'static str, owner: Owner) -> EventSpec {
    EventSpec {
        name,
        header: "Issue Hook",
        owner,
        build: issue,
        account: "/project/id",
        amount: Some("/object_attributes/weight"),
        version: Some("/object_attributes/lock_version"),
    }
}

/// The headers GitLab sends beside the body: the hook's name, the instance.
pub(super) fn headers(hook: &str) -> Vec<(&'static str, String)> {
    vec![("x-gitlab-event", hook.to_string()), ("x-gitlab-instance", "https://gitlab.com".to_string())]
}

/// GitLab's time in a hook's object attributes (`2025-11-30 00:00:00 UTC`).
fn gitlab_time(seconds: i64) -> String {
    let at = jiff::Timestamp::from_second(seconds).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}

fn user() -> Value {
    json!({
        "id": 1, "name": "hookbench", "username": NAMESPACE,
        "avatar_url": "https://gitlab.com/uploads/-/system/user/avatar/1/avatar.png", "email": "[REDACTED]",
    })
}

/// The account's project (`repo-<account>`, its id the account).
fn project(s: &Subject<'_>) -> Value {
    let path = format!("{NAMESPACE}/repo-{}", s.f.account);
    let web = format!("https://gitlab.com/{path}");
    let ssh = format!("git@gitlab.com:{path}.git");
    json!({
        "id": s.f.account, "name": format!("repo-{}", s.f.account), "description": null, "web_url": web,
        "avatar_url": null, "git_ssh_url": ssh, "git_http_url": format!("{web}.git"), "namespace": NAMESPACE,
        "visibility_level": 0, "path_with_namespace": path, "default_branch": "main", "ci_config_path": null,
        "homepage": web, "url": ssh, "ssh_url": ssh, "http_url": format!("{web}.git"),
    })
}

fn repository(s: &Subject<'_>) -> Value {
    let path = format!("{NAMESPACE}/repo-{}", s.f.account);
    let web = format!("https://gitlab.com/{path}");
    json!({
        "name": format!("repo-{}", s.f.account), "url": format!("git@gitlab.com:{path}.git"), "description": null,
        "homepage": web, "git_http_url": format!("{web}.git"), "git_ssh_url": format!("git@gitlab.com:{path}.git"),
        "visibility_level": 0,
    })
}

fn push(s: &Subject<'_>) -> Value {
    let (before, after) = (s.hex("before", 40), s.hex("after", 40));
    let web = format!("https://gitlab.com/{NAMESPACE}/repo-{}", s.f.account);
    let message = format!("hookbench event {}\n", s.token);
    let commit = json!({
        "id": after, "message": message, "title": format!("hookbench event {}", s.token),
        "timestamp": s.created_rfc3339(), "url": format!("{web}/-/commit/{after}"),
        "author": { "name": "hookbench", "email": "audit@hookbench.invalid" },
        "added": [], "modified": ["README.md"], "removed": [],
    });
    json!({
        "object_kind": "push", "event_name": "push", "before": before, "after": after,
        "ref": "refs/heads/main", "ref_protected": true, "checkout_sha": after, "message": null,
        "user_id": 1, "user_name": "hookbench", "user_username": NAMESPACE, "user_email": "",
        "user_avatar": user()["avatar_url"], "project_id": s.f.account, "project": project(s),
        "commits": [commit], "total_commits_count": 1, "push_options": {}, "repository": repository(s),
    })
}

fn issue(s: &Subject<'_>) -> Value {
    let action = s.event_type.rsplit('.').next().unwrap_or("open");
    let closed = action == "close";
    let at = gitlab_time(s.f.created);
    let iid = s.numeric_id("iid") % 100_000 + 1;
    let title = format!("hookbench event {}", s.token);
    let attributes = joined([
        json!({
            "author_id": 1, "closed_at": if closed { Value::from(at.clone()) } else { Value::Null },
            "confidential": false, "created_at": at, "description": format!("Sent by hookbench as {}.", s.f.id),
            "discussion_locked": null, "due_date": null, "id": s.numeric_id("issue"), "iid": iid,
            "last_edited_at": null, "last_edited_by_id": null, "milestone_id": null, "moved_to_id": null,
            "duplicated_to_id": null, "project_id": s.f.account, "relative_position": null,
            "state_id": if closed { 2 } else { 1 }, "time_estimate": 0, "title": title, "updated_at": at,
            "updated_by_id": 1, "weight": s.f.amount, "health_status": null, "type": "Issue",
        }),
        json!({
            "url": format!("https://gitlab.com/{NAMESPACE}/repo-{}/-/issues/{iid}", s.f.account),
            "total_time_spent": 0, "time_change": 0, "human_total_time_spent": null,
            "human_time_change": null, "human_time_estimate": null, "assignee_ids": [], "assignee_id": null,
            "labels": [], "state": if closed { "closed" } else { "opened" }, "severity": "unknown",
            "customer_relations_contacts": [], "lock_version": s.f.version, "action": action,
        }),
    ]);
    let changes = if action == "update" {
        json!({ "title": { "previous": "hookbench event (before the edit)", "current": title } })
    } else {
        json!({})
    };
    json!({
        "object_kind": "issue", "event_type": "issue", "user": user(), "project": project(s),
        "object_attributes": attributes, "repository": repository(s), "labels": [], "changes": changes,
        "assignees": [],
    })
}
