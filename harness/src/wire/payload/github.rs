//! GitHub's bodies: the payload of the event and action named (`issues.opened` is the `issues`
//! event with `action: "opened"`), shaped as `@octokit/webhooks-schemas` (7.6.1) requires, with
//! `X-GitHub-Event` and `X-GitHub-Delivery` beside it. The account is a repository
//! (`repository.id`); the tests validate every type's body against that schema
//! (scripts/provider-schemas/).

use serde_json::{Value, json};

use super::Fields;
use super::spec::{EventSpec, Owner, Subject, joined};

const OWNER: &str = "hookbench-audit";
const REPOSITORY: &str = "/repository/id";

/// GitHub's event types hookbench writes.
pub(super) const EVENTS: &[EventSpec] = &[
    issue_event("issues.opened", Owner::Event),
    issue_event("issues.edited", Owner::Account),
    issue_event("issues.closed", Owner::Account),
    issue_event("issues.reopened", Owner::Account),
    pull_request_event("pull_request.opened", Owner::Event),
    pull_request_event("pull_request.edited", Owner::Account),
    star_event("star.created"),
    star_event("star.deleted"),
    EventSpec {
        name: "push",
        header: "push",
        owner: Owner::Event,
        build: push,
        account: REPOSITORY,
        amount: None,
        // A push event's repository has `pushed_at` as Unix seconds, an integer.
        version: Some("/repository/pushed_at"),
    },
];

const fn issue_event(name: &'static str, owner: Owner) -> EventSpec {
    EventSpec {
        name,
        header: "issues",
        owner,
        build: issues,
        account: REPOSITORY,
        amount: None,
        version: Some("/issue/comments"),
    }
}

const fn pull_request_event(name: &'static str, owner: Owner) -> EventSpec {
    EventSpec {
        name,
        header: "pull_request",
        owner,
        build: pull_request,
        account: REPOSITORY,
        amount: None,
        // The pull request's commit count, which grows as it is pushed to.
        version: Some("/pull_request/commits"),
    }
}

const fn star_event(name: &'static str) -> EventSpec {
    EventSpec {
        name,
        header: "star",
        owner: Owner::Account,
        build: star,
        account: REPOSITORY,
        amount: None,
        version: Some("/repository/stargazers_count"),
    }
}

/// The headers GitHub sends beside the body (the signature is the signer's).
pub(super) fn headers(event: &str, f: &Fields) -> Vec<(&'static str, String)> {
    vec![("x-github-event", event.to_string()), ("x-github-delivery", f.id.clone())]
}

fn action<'a>(s: &Subject<'a>) -> &'a str {
    s.event_type.split_once('.').map_or("", |(_, a)| a)
}

/// The user who sends every event.
fn user() -> Value {
    let api = format!("https://api.github.com/users/{OWNER}");
    json!({
        "login": OWNER, "id": 1, "node_id": "MDQ6VXNlcjE=",
        "avatar_url": "https://avatars.githubusercontent.com/u/1?v=4", "gravatar_id": "",
        "url": api, "html_url": format!("https://github.com/{OWNER}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"), "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": "User", "site_admin": false,
    })
}

/// A repository's API links: each key and its path under `/repos/<owner>/<name>`.
const REPOSITORY_LINKS: &[(&str, &str)] = &[
    ("forks_url", "/forks"),
    ("keys_url", "/keys{/key_id}"),
    ("collaborators_url", "/collaborators{/collaborator}"),
    ("teams_url", "/teams"),
    ("hooks_url", "/hooks"),
    ("issue_events_url", "/issues/events{/number}"),
    ("events_url", "/events"),
    ("assignees_url", "/assignees{/user}"),
    ("branches_url", "/branches{/branch}"),
    ("tags_url", "/tags"),
    ("blobs_url", "/git/blobs{/sha}"),
    ("git_tags_url", "/git/tags{/sha}"),
    ("git_refs_url", "/git/refs{/sha}"),
    ("trees_url", "/git/trees{/sha}"),
    ("statuses_url", "/statuses/{sha}"),
    ("languages_url", "/languages"),
    ("stargazers_url", "/stargazers"),
    ("contributors_url", "/contributors"),
    ("subscribers_url", "/subscribers"),
    ("subscription_url", "/subscription"),
    ("commits_url", "/commits{/sha}"),
    ("git_commits_url", "/git/commits{/sha}"),
    ("comments_url", "/comments{/number}"),
    ("issue_comment_url", "/issues/comments{/number}"),
    ("contents_url", "/contents/{+path}"),
    ("compare_url", "/compare/{base}...{head}"),
    ("merges_url", "/merges"),
    ("archive_url", "/{archive_format}{/ref}"),
    ("downloads_url", "/downloads"),
    ("issues_url", "/issues{/number}"),
    ("pulls_url", "/pulls{/number}"),
    ("milestones_url", "/milestones{/number}"),
    ("notifications_url", "/notifications{?since,all,participating}"),
    ("labels_url", "/labels{/name}"),
    ("releases_url", "/releases{/id}"),
    ("deployments_url", "/deployments"),
];

/// The account's repository, `hookbench-audit/repo-<account>`.
fn repository(s: &Subject<'_>) -> Value {
    let name = format!("repo-{}", s.f.account);
    let full = format!("{OWNER}/{name}");
    let api = format!("https://api.github.com/repos/{full}");
    let created = s.created_rfc3339();
    let mut repo = json!({
        "id": s.f.account, "node_id": format!("R_{}", s.account_hex("repo", 12)), "name": name, "full_name": full,
        "private": false, "owner": user(), "html_url": format!("https://github.com/{full}"),
        "description": null, "fork": false, "url": api,
        "created_at": created, "updated_at": created, "pushed_at": created,
        "git_url": format!("git://github.com/{full}.git"), "ssh_url": format!("git@github.com:{full}.git"),
        "clone_url": format!("https://github.com/{full}.git"), "svn_url": format!("https://github.com/{full}"),
    });
    let counts = json!({
        "homepage": null, "size": 0, "stargazers_count": 0, "watchers_count": 0, "language": null,
        "has_issues": true, "has_projects": true, "has_downloads": true, "has_wiki": true,
        "has_pages": false, "has_discussions": false, "forks_count": 0, "mirror_url": null,
        "archived": false, "disabled": false, "open_issues_count": 1, "license": null,
        "allow_forking": true, "forks": 0, "open_issues": 1, "watchers": 0, "default_branch": "main",
        "is_template": false, "web_commit_signoff_required": false, "topics": [],
        "visibility": "public", "custom_properties": {},
    });
    repo = joined([repo, counts]);
    for (key, path) in REPOSITORY_LINKS {
        repo[*key] = Value::from(format!("{api}{path}"));
    }
    if s.event_type == "push" {
        // GitHub writes a push event's repository times as Unix seconds, and names its owner.
        repo["created_at"] = Value::from(s.f.created);
        repo["pushed_at"] = Value::from(s.f.created);
        repo["stargazers"] = Value::from(0);
        repo["master_branch"] = Value::from("main");
    }
    repo
}

/// The issue the event is about: its id and number made from the object's token.
fn issue(s: &Subject<'_>) -> Value {
    let number = s.numeric_id("issue-number") % 100_000 + 1;
    let full = format!("{OWNER}/repo-{}", s.f.account);
    let api = format!("https://api.github.com/repos/{full}/issues/{number}");
    let created = s.created_rfc3339();
    let closed = action(s) == "closed";
    json!({
        "url": api, "repository_url": format!("https://api.github.com/repos/{full}"),
        "labels_url": format!("{api}/labels{{/name}}"), "comments_url": format!("{api}/comments"),
        "events_url": format!("{api}/events"), "html_url": format!("https://github.com/{full}/issues/{number}"),
        "id": s.numeric_id("issue"), "node_id": format!("I_{}", s.hex("issue", 16)), "number": number,
        "title": format!("hookbench event {}", s.token), "user": user(), "labels": [],
        "state": if closed { "closed" } else { "open" }, "locked": false, "assignee": null,
        "assignees": [], "milestone": null, "comments": 0, "created_at": created, "updated_at": created,
        "closed_at": if closed { Value::from(created.clone()) } else { Value::Null },
        "author_association": "OWNER", "active_lock_reason": null,
        "body": format!("Sent by hookbench as {}.", s.f.id),
        "reactions": {
            "url": format!("{api}/reactions"), "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
            "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0,
        },
        "timeline_url": format!("{api}/timeline"), "performed_via_github_app": null,
        "state_reason": if closed { Value::from("completed") } else { Value::Null },
    })
}

fn issues(s: &Subject<'_>) -> Value {
    let mut body =
        json!({ "action": action(s), "issue": issue(s), "repository": repository(s), "sender": user() });
    if action(s) == "edited" {
        body["changes"] = json!({ "title": { "from": "hookbench event (before the edit)" } });
    }
    body
}

/// The pull request the event is about, from `feature-<number>` into `main` of the account's
/// repository: its id and number made from the object's token.
fn pull_request(s: &Subject<'_>) -> Value {
    let number = s.numeric_id("pull-number") % 100_000 + 1;
    let full = format!("{OWNER}/repo-{}", s.f.account);
    let api = format!("https://api.github.com/repos/{full}");
    let html = format!("https://github.com/{full}/pull/{number}");
    let at = s.created_rfc3339();
    let side = |branch: &str, sha: String| json!({ "label": format!("{OWNER}:{branch}"), "ref": branch, "sha": sha, "user": user(), "repo": repository(s) });
    let link = |href: String| json!({ "href": href });
    let head = json!({
        "url": format!("{api}/pulls/{number}"), "id": s.numeric_id("pull"),
        "node_id": format!("PR_{}", s.hex("pull", 16)), "html_url": html, "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"), "issue_url": format!("{api}/issues/{number}"),
        "number": number, "state": "open", "locked": false, "title": format!("hookbench event {}", s.token),
        "user": user(), "body": format!("Sent by hookbench as {}.", s.f.id), "created_at": at,
        "updated_at": at, "closed_at": null, "merged_at": null, "merge_commit_sha": null,
        "assignee": null, "assignees": [], "requested_reviewers": [], "requested_teams": [],
        "labels": [], "milestone": null,
    });
    let rest = json!({
        "commits_url": format!("{api}/pulls/{number}/commits"),
        "review_comments_url": format!("{api}/pulls/{number}/comments"),
        "review_comment_url": format!("{api}/pulls/comments{{/number}}"),
        "comments_url": format!("{api}/issues/{number}/comments"),
        "statuses_url": format!("{api}/statuses/{}", s.hex("head", 40)),
        "head": side(&format!("feature-{number}"), s.hex("head", 40)), "base": side("main", s.hex("base", 40)),
        "_links": {
            "self": link(format!("{api}/pulls/{number}")), "html": link(html.clone()),
            "issue": link(format!("{api}/issues/{number}")),
            "comments": link(format!("{api}/issues/{number}/comments")),
            "review_comments": link(format!("{api}/pulls/{number}/comments")),
            "review_comment": link(format!("{api}/pulls/comments{{/number}}")),
            "commits": link(format!("{api}/pulls/{number}/commits")),
            "statuses": link(format!("{api}/statuses/{}", s.hex("head", 40))),
        },
        "author_association": "OWNER", "auto_merge": null, "active_lock_reason": null, "draft": false,
        "merged": false, "mergeable": null, "rebaseable": null, "mergeable_state": "unknown",
        "merged_by": null, "comments": 0, "review_comments": 0, "maintainer_can_modify": false,
        "commits": 1, "additions": 1, "deletions": 0, "changed_files": 1,
    });
    let mut body = json!({
        "action": action(s), "number": number, "pull_request": joined([head, rest]),
        "repository": repository(s), "sender": user(),
    });
    if action(s) == "edited" {
        body["changes"] = json!({ "title": { "from": "hookbench event (before the edit)" } });
    }
    body
}

fn star(s: &Subject<'_>) -> Value {
    let starred_at = if action(s) == "created" { Value::from(s.created_rfc3339()) } else { Value::Null };
    json!({ "action": action(s), "starred_at": starred_at, "repository": repository(s), "sender": user() })
}

fn push(s: &Subject<'_>) -> Value {
    let (before, after) = (s.hex("before", 40), s.hex("after", 40));
    let full = format!("{OWNER}/repo-{}", s.f.account);
    let author = json!({ "name": OWNER, "email": "audit@hookbench.invalid", "username": OWNER });
    let commit = json!({
        "id": after, "tree_id": s.hex("tree", 40), "distinct": true,
        "message": format!("hookbench event {}", s.token), "timestamp": s.created_rfc3339(),
        "url": format!("https://github.com/{full}/commit/{after}"),
        "author": author, "committer": author, "added": [], "removed": [], "modified": ["README.md"],
    });
    json!({
        "ref": "refs/heads/main", "before": before, "after": after, "created": false, "deleted": false,
        "forced": false, "base_ref": null,
        "compare": format!("https://github.com/{full}/compare/{}...{}", &before[..12], &after[..12]),
        "commits": [commit], "head_commit": commit, "repository": repository(s),
        "pusher": { "name": OWNER, "email": "audit@hookbench.invalid" }, "sender": user(),
    })
}
