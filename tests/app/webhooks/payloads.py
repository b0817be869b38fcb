"""Builders of webhook deliveries with GitHub's real shape, checked against its schemas.

Each builder returns the JSON object GitHub would send, with every field GitHub sends (not only
the ones FrogNano reads), modelled on real deliveries. `validate` checks a payload against the
official schema of its event and action (`schemas/webhooks.json`, generated from
`@octokit/openapi-webhooks` by `schemas/generate.py`), and `request` validates before it
encodes, so no test can build a delivery GitHub would not send unless it says so
(`validated=False`, for the tests of malformed or tampered payloads).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import jsonschema

API = "https://api.github.com"
WEB = "https://github.com"
SECRET = b"webhook secret for tests"
SCHEMAS = Path(__file__).with_name("schemas") / "webhooks.json"

APP_SLUG = "frognano"
APP_LOGIN = "frognano[bot]"
APP_ID = 912345
INSTALLATION_ID = 44001122
BRANCH_PREFIX = "frognano/"
HEAD_SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
BASE_SHA = "9049f1265b7d61be4a8904a9a27120d2064dab3b"
CREATED = "2026-03-02T09:14:07Z"
UPDATED = "2026-03-04T16:40:51Z"

Payload = dict[str, Any]


# --- schemas -------------------------------------------------------------------------------


@cache
def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(SCHEMAS.read_text(encoding="utf-8"))
    return document


# jsonschema checks `date-time` and `uri` only with optional packages; these two stand-ins
# catch the mistakes a hand-written payload makes (a date without a time, a bare path).
FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return "T" in value and parsed.tzinfo is not None


@FORMATS.checks("uri")
def _uri(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    return bool(parts.scheme and parts.netloc) and " " not in value


@cache
def _validator(component: str) -> jsonschema.Draft202012Validator:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": f"#/components/schemas/{component}",
        "components": _document()["components"],
    }
    return jsonschema.Draft202012Validator(schema, format_checker=FORMATS)


def schema_events() -> dict[str, str]:
    """`event` or `event.action` -> the component schema of its payload."""
    events: dict[str, str] = _document()["events"]
    return events


def schema_headers() -> list[str]:
    """The headers the spec says every delivery carries."""
    headers: list[str] = _document()["headers"]
    return headers


def validate(event: str, payload: Payload) -> None:
    """Raise `jsonschema.ValidationError` unless `payload` has the shape GitHub sends for
    `event` and the payload's `action`."""
    action = payload.get("action")
    key = event if action is None else f"{event}.{action}"
    component = schema_events().get(key)
    if component is None:
        raise KeyError(f"no schema for {key}: add it to EVENTS in schemas/generate.py")
    error = jsonschema.exceptions.best_match(_validator(component).iter_errors(payload))
    if error is not None:
        raise error


# --- requests ------------------------------------------------------------------------------


def signature(body: bytes, secret: bytes = SECRET) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def encode(payload: Payload) -> bytes:
    """As GitHub sends it: compact UTF-8 JSON."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def headers(
    event: str,
    body: bytes,
    *,
    delivery_id: str = "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    secret: bytes = SECRET,
) -> dict[str, str]:
    """Every header of an App webhook delivery, spelled as GitHub.com sends them."""
    return {
        "Accept": "*/*",
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/a1b2c3d",
        "X-GitHub-Delivery": delivery_id,
        "X-GitHub-Event": event,
        "X-GitHub-Hook-ID": "512345678",
        "X-GitHub-Hook-Installation-Target-ID": str(APP_ID),
        "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-Hub-Signature": "sha1=" + hmac.new(secret, body, hashlib.sha1).hexdigest(),
        "X-Hub-Signature-256": signature(body, secret),
    }


def request(
    event: str, payload: Payload, *, validated: bool = True, **kwargs: Any
) -> tuple[dict[str, str], bytes]:
    """Headers and body of a delivery of `payload`, validated against its schema first."""
    if validated:
        validate(event, payload)
    body = encode(payload)
    return headers(event, body, **kwargs), body


# --- objects -------------------------------------------------------------------------------


def user(login: str = "alice", *, id: int = 1_000_001, type: str = "User") -> Payload:
    """A `simple-user`, as in `sender`, `issue.user` and `repository.owner`."""
    api = f"{API}/users/{login}"
    return {
        "login": login,
        "id": id,
        "node_id": f"U_kgDOA{id:07d}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{id}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{WEB}/{login}" if type != "Bot" else f"{WEB}/apps/{login[:-5]}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": type,
        "user_view_type": "public",
        "site_admin": False,
    }


def bot(slug: str = "dependabot", *, id: int = 49699333) -> Payload:
    """A GitHub App's bot account, e.g. `dependabot[bot]`."""
    return user(f"{slug}[bot]", id=id, type="Bot")


def app_bot() -> Payload:
    """This app's own bot account."""
    return bot(APP_SLUG, id=APP_ID + 100_000_000)


def organization(login: str = "acme", *, id: int = 9_000_001) -> Payload:
    return user(login, id=id, type="Organization")


def repository(
    full_name: str = "acme/widgets", *, id: int = 700_100_200, private: bool = True
) -> Payload:
    """A repository as in `repository`, `pull_request.head.repo` and `.base.repo`."""
    owner_login, name = full_name.split("/")
    api = f"{API}/repos/{full_name}"
    return {
        "id": id,
        "node_id": f"R_kgDOK{id:09d}",
        "name": name,
        "full_name": full_name,
        "private": private,
        "owner": organization(owner_login),
        "html_url": f"{WEB}/{full_name}",
        "description": "Widgets for the acme platform",
        "fork": False,
        "url": api,
        "forks_url": f"{api}/forks",
        "keys_url": f"{api}/keys{{/key_id}}",
        "collaborators_url": f"{api}/collaborators{{/collaborator}}",
        "teams_url": f"{api}/teams",
        "hooks_url": f"{api}/hooks",
        "issue_events_url": f"{api}/issues/events{{/number}}",
        "events_url": f"{api}/events",
        "assignees_url": f"{api}/assignees{{/user}}",
        "branches_url": f"{api}/branches{{/branch}}",
        "tags_url": f"{api}/tags",
        "blobs_url": f"{api}/git/blobs{{/sha}}",
        "git_tags_url": f"{api}/git/tags{{/sha}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "trees_url": f"{api}/git/trees{{/sha}}",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "languages_url": f"{api}/languages",
        "stargazers_url": f"{api}/stargazers",
        "contributors_url": f"{api}/contributors",
        "subscribers_url": f"{api}/subscribers",
        "subscription_url": f"{api}/subscription",
        "commits_url": f"{api}/commits{{/sha}}",
        "git_commits_url": f"{api}/git/commits{{/sha}}",
        "comments_url": f"{api}/comments{{/number}}",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "merges_url": f"{api}/merges",
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        "downloads_url": f"{api}/downloads",
        "issues_url": f"{api}/issues{{/number}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "milestones_url": f"{api}/milestones{{/number}}",
        "notifications_url": f"{api}/notifications{{?since,all,participating}}",
        "labels_url": f"{api}/labels{{/name}}",
        "releases_url": f"{api}/releases{{/id}}",
        "deployments_url": f"{api}/deployments",
        "created_at": "2024-11-18T10:02:33Z",
        "updated_at": UPDATED,
        "pushed_at": UPDATED,
        "git_url": f"git://github.com/{full_name}.git",
        "ssh_url": f"git@github.com:{full_name}.git",
        "clone_url": f"{WEB}/{full_name}.git",
        "svn_url": f"{WEB}/{full_name}",
        "homepage": None,
        "size": 1834,
        "stargazers_count": 12,
        "watchers_count": 12,
        "language": "Python",
        "has_issues": True,
        "has_projects": True,
        "has_downloads": True,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "forks_count": 1,
        "mirror_url": None,
        "archived": False,
        "disabled": False,
        "open_issues_count": 7,
        "license": {
            "key": "apache-2.0",
            "name": "Apache License 2.0",
            "spdx_id": "Apache-2.0",
            "url": f"{API}/licenses/apache-2.0",
            "node_id": "MDc6TGljZW5zZTI=",
        },
        "allow_forking": False,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": ["python", "widgets"],
        "visibility": "private" if private else "public",
        "forks": 1,
        "open_issues": 7,
        "watchers": 12,
        "default_branch": "main",
        "custom_properties": {},
    }


def installation_ref(id: int = INSTALLATION_ID) -> Payload:
    """`installation` in events other than `installation*`: only the id and node id."""
    return {"id": id, "node_id": f"MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u{id}"}


def label(name: str = "frognano", *, id: int = 8_100_001, repo: str = "acme/widgets") -> Payload:
    return {
        "id": id,
        "node_id": f"LA_kwDOK{id:09d}",
        "url": f"{API}/repos/{repo}/labels/{quote(name)}",
        "name": name,
        "color": "0e8a16",
        "default": False,
        "description": "Ask FrogNano for a draft pull request",
    }


def issue(
    number: int = 42,
    *,
    title: str = "Widget.render crashes on an empty list",
    body: str | None = "Steps:\n\n1. `Widget([]).render()`\n2. IndexError\n",
    labels: list[Payload] | None = None,
    state: str = "open",
    author: Payload | None = None,
    repo: str = "acme/widgets",
    pull_request: bool = False,
) -> Payload:
    """An issue as in `issues` events; `pull_request=True` makes it the issue of a PR."""
    api = f"{API}/repos/{repo}/issues/{number}"
    closed = state == "closed"
    value: Payload = {
        "url": api,
        "repository_url": f"{API}/repos/{repo}",
        "labels_url": f"{api}/labels{{/name}}",
        "comments_url": f"{api}/comments",
        "events_url": f"{api}/events",
        "html_url": f"{WEB}/{repo}/{'pull' if pull_request else 'issues'}/{number}",
        "id": 3_000_000_000 + number,
        "node_id": f"I_kwDOK{number:010d}",
        "number": number,
        "title": title,
        "user": author if author is not None else user("carol", id=1_000_003),
        "labels": labels if labels is not None else [],
        "state": state,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": 2,
        "created_at": CREATED,
        "updated_at": UPDATED,
        "closed_at": UPDATED if closed else None,
        "author_association": "MEMBER",
        "type": None,
        "active_lock_reason": None,
        "sub_issues_summary": {"total": 0, "completed": 0, "percent_completed": 0},
        "body": body,
        "reactions": {
            "url": f"{api}/reactions",
            "total_count": 1,
            "+1": 1,
            "-1": 0,
            "laugh": 0,
            "hooray": 0,
            "confused": 0,
            "heart": 0,
            "rocket": 0,
            "eyes": 0,
        },
        "timeline_url": f"{api}/timeline",
        "performed_via_github_app": None,
        "state_reason": "completed" if closed else None,
    }
    if pull_request:
        pulls = f"{API}/repos/{repo}/pulls/{number}"
        value["draft"] = True
        value["pull_request"] = {
            "url": pulls,
            "html_url": f"{WEB}/{repo}/pull/{number}",
            "diff_url": f"{WEB}/{repo}/pull/{number}.diff",
            "patch_url": f"{WEB}/{repo}/pull/{number}.patch",
            "merged_at": None,
        }
    return value


def pull_request(
    number: int = 57,
    *,
    head_ref: str = f"{BRANCH_PREFIX}issue-42",
    head_sha: str = HEAD_SHA,
    author: Payload | None = None,
    base_repo: Payload | None = None,
    head_repo: Payload | None = None,
    fork: bool = False,
) -> Payload:
    """A pull request as in `pull_request` and `pull_request_review` events.

    By default it is the app's draft PR from a branch of the same repository; `fork=True`
    makes the head a fork's (`head_repo`, by default a fork owned by someone else).
    """
    base = base_repo if base_repo is not None else repository()
    repo = base["full_name"]
    if fork and head_repo is None:
        head_repo = repository(f"mallory/{base['name']}", id=base["id"] + 1, private=False)
        head_repo["fork"] = True
    head = head_repo if head_repo is not None else base
    author = author if author is not None else app_bot()
    api = f"{API}/repos/{repo}/pulls/{number}"
    issue_api = f"{API}/repos/{repo}/issues/{number}"
    return {
        "url": api,
        "id": 2_100_000_000 + number,
        "node_id": f"PR_kwDOK{number:010d}",
        "html_url": f"{WEB}/{repo}/pull/{number}",
        "diff_url": f"{WEB}/{repo}/pull/{number}.diff",
        "patch_url": f"{WEB}/{repo}/pull/{number}.patch",
        "issue_url": issue_api,
        "number": number,
        "state": "open",
        "locked": False,
        "title": "Fix Widget.render on an empty list (#42)",
        "user": author,
        "body": "Drafted by FrogNano for #42. Needs a human review.",
        "created_at": CREATED,
        "updated_at": UPDATED,
        "closed_at": None,
        "merged_at": None,
        "merge_commit_sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6",
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [user("dave", id=1_000_004)],
        "requested_teams": [],
        "labels": [],
        "milestone": None,
        "draft": True,
        "commits_url": f"{api}/commits",
        "review_comments_url": f"{api}/comments",
        "review_comment_url": f"{API}/repos/{repo}/pulls/comments{{/number}}",
        "comments_url": f"{issue_api}/comments",
        "statuses_url": f"{API}/repos/{repo}/statuses/{head_sha}",
        "head": {
            "label": f"{head['owner']['login']}:{head_ref}",
            "ref": head_ref,
            "sha": head_sha,
            "user": head["owner"],
            "repo": head,
        },
        "base": {
            "label": f"{base['owner']['login']}:main",
            "ref": "main",
            "sha": BASE_SHA,
            "user": base["owner"],
            "repo": base,
        },
        "_links": {
            "self": {"href": api},
            "html": {"href": f"{WEB}/{repo}/pull/{number}"},
            "issue": {"href": issue_api},
            "comments": {"href": f"{issue_api}/comments"},
            "review_comments": {"href": f"{api}/comments"},
            "review_comment": {"href": f"{API}/repos/{repo}/pulls/comments{{/number}}"},
            "commits": {"href": f"{api}/commits"},
            "statuses": {"href": f"{API}/repos/{repo}/statuses/{head_sha}"},
        },
        "author_association": "NONE",
        "auto_merge": None,
        "active_lock_reason": None,
        "merged": False,
        "mergeable": None,
        "rebaseable": None,
        "mergeable_state": "unknown",
        "merged_by": None,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": 1,
        "additions": 4,
        "deletions": 1,
        "changed_files": 1,
    }


def review(
    *,
    state: str = "approved",
    commit_id: str = HEAD_SHA,
    reviewer: Payload | None = None,
    repo: str = "acme/widgets",
    number: int = 57,
) -> Payload:
    """A review as in `pull_request_review` events (`state` is lower case there)."""
    review_id = 2_500_000_001
    html = f"{WEB}/{repo}/pull/{number}#pullrequestreview-{review_id}"
    pulls = f"{API}/repos/{repo}/pulls/{number}"
    return {
        "id": review_id,
        "node_id": f"PRR_kwDOK{review_id}",
        "user": reviewer if reviewer is not None else user("dave", id=1_000_004),
        "body": None if state == "approved" else "Please keep the old behaviour for None.",
        "commit_id": commit_id,
        "submitted_at": UPDATED,
        "state": state,
        "html_url": html,
        "pull_request_url": pulls,
        "author_association": "MEMBER",
        "_links": {"html": {"href": html}, "pull_request": {"href": pulls}},
    }


def full_installation(id: int = INSTALLATION_ID) -> Payload:
    """`installation` in `installation` and `installation_repositories` events."""
    account = organization()
    return {
        "id": id,
        "client_id": "Iv23liAbCdEfGhIjKlMn",
        "account": account,
        "repository_selection": "selected",
        "access_tokens_url": f"{API}/app/installations/{id}/access_tokens",
        "repositories_url": f"{API}/installation/repositories",
        "html_url": f"{WEB}/organizations/{account['login']}/settings/installations/{id}",
        "app_id": APP_ID,
        "app_slug": APP_SLUG,
        "target_id": account["id"],
        "target_type": "Organization",
        "permissions": {
            "checks": "write",
            "contents": "write",
            "issues": "write",
            "metadata": "read",
            "pull_requests": "write",
        },
        "events": ["issues", "pull_request", "pull_request_review"],
        "created_at": CREATED,
        "updated_at": UPDATED,
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }


def _short_repository(full: Payload) -> Payload:
    return {key: full[key] for key in ("id", "node_id", "name", "full_name", "private")}


# --- events --------------------------------------------------------------------------------


def _envelope(action: str, sender: Payload | None, repo: Payload | None) -> Payload:
    return {
        "action": action,
        "repository": repo if repo is not None else repository(),
        "organization": _organization_simple(),
        "sender": sender if sender is not None else user(),
        "installation": installation_ref(),
    }


def _organization_simple() -> Payload:
    api = f"{API}/orgs/acme"
    return {
        "login": "acme",
        "id": 9_000_001,
        "node_id": "O_kgDOA9000001",
        "url": api,
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events",
        "hooks_url": f"{api}/hooks",
        "issues_url": f"{api}/issues",
        "members_url": f"{api}/members{{/member}}",
        "public_members_url": f"{api}/public_members{{/member}}",
        "avatar_url": "https://avatars.githubusercontent.com/u/9000001?v=4",
        "description": "Acme platform team",
    }


def issues_labeled(
    *,
    name: str = "frognano",
    sender: Payload | None = None,
    the_issue: Payload | None = None,
    repo: Payload | None = None,
) -> Payload:
    """`issues` / `labeled`: `sender` added the label `name` to the issue."""
    added = label(name)
    payload = _envelope("labeled", sender, repo)
    target = copy.deepcopy(the_issue) if the_issue is not None else issue()
    if all(existing["name"] != name for existing in target["labels"]):
        target["labels"] = [*target["labels"], added]
    payload["issue"] = target
    payload["label"] = added
    return _ordered(payload)


def issues_unlabeled(
    *,
    name: str = "frognano",
    sender: Payload | None = None,
    the_issue: Payload | None = None,
    repo: Payload | None = None,
) -> Payload:
    """`issues` / `unlabeled`: `sender` removed the label `name` from the issue."""
    payload = _envelope("unlabeled", sender, repo)
    payload["issue"] = the_issue if the_issue is not None else issue()
    payload["label"] = label(name)
    return _ordered(payload)


def issues_closed(
    *, sender: Payload | None = None, the_issue: Payload | None = None, repo: Payload | None = None
) -> Payload:
    """`issues` / `closed`."""
    payload = _envelope("closed", sender, repo)
    payload["issue"] = (
        the_issue if the_issue is not None else issue(state="closed", labels=[label()])
    )
    return _ordered(payload)


def comment(
    body: str, *, id: int = 2_100_000_001, author: Payload | None = None, number: int = 42,
    repo: str = "acme/widgets",
) -> Payload:  # fmt: skip
    """An issue comment, as in `issue_comment` events."""
    api = f"{API}/repos/{repo}/issues"
    return {
        "url": f"{api}/comments/{id}",
        "html_url": f"{WEB}/{repo}/issues/{number}#issuecomment-{id}",
        "issue_url": f"{api}/{number}",
        "id": id,
        "node_id": f"IC_kwDOK{id:010d}",
        "user": author if author is not None else user(),
        "created_at": UPDATED,
        "updated_at": UPDATED,
        "author_association": "MEMBER",
        "body": body,
        "reactions": {
            "url": f"{api}/comments/{id}/reactions",
            "total_count": 0,
            "+1": 0,
            "-1": 0,
            "laugh": 0,
            "hooray": 0,
            "confused": 0,
            "heart": 0,
            "rocket": 0,
            "eyes": 0,
        },
        "performed_via_github_app": None,
    }


def issue_comment(
    body: str = "/frognano retry",
    *,
    sender: Payload | None = None,
    the_issue: Payload | None = None,
    repo: Payload | None = None,
    comment_id: int = 2_100_000_001,
) -> Payload:
    """`issue_comment` / `created`: `sender` commented `body` on the issue."""
    payload = _envelope("created", sender, repo)
    target = the_issue if the_issue is not None else issue()
    payload["issue"] = target
    full_name = payload["repository"]["full_name"]
    payload["comment"] = comment(
        body, id=comment_id, author=payload["sender"], number=target["number"], repo=full_name
    )
    return _ordered(payload)


def pull_request_review(
    action: str = "submitted",
    *,
    pull: Payload | None = None,
    the_review: Payload | None = None,
    sender: Payload | None = None,
) -> Payload:
    """`pull_request_review` / `submitted` or `dismissed`."""
    the_pull = pull if pull is not None else pull_request()
    reviewer = sender if sender is not None else user("dave", id=1_000_004)
    if the_review is None:
        state = "dismissed" if action == "dismissed" else "approved"
        the_review = review(state=state, reviewer=reviewer, number=the_pull["number"])
    payload = _envelope(action, reviewer, the_pull["base"]["repo"])
    payload["review"] = the_review
    payload["pull_request"] = the_pull
    return _ordered(payload)


def pull_request_review_comment(
    body: str = "/frognano rename this",
    *,
    pull: Payload | None = None,
    sender: Payload | None = None,
    comment_id: int = 2_600_000_001,
) -> Payload:
    """`pull_request_review_comment` / `created`: `sender` commented `body` on a line."""
    the_pull = pull if pull is not None else pull_request()
    author = sender if sender is not None else user("dave", id=1_000_004)
    payload = _envelope("created", author, the_pull["base"]["repo"])
    repo, number = payload["repository"]["full_name"], the_pull["number"]
    pulls = f"{API}/repos/{repo}/pulls"
    html = f"{WEB}/{repo}/pull/{number}#discussion_r{comment_id}"
    reactions = {"url": f"{pulls}/comments/{comment_id}/reactions", "total_count": 0,
                 **dict.fromkeys(("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket",
                                  "eyes"), 0)}  # fmt: skip
    payload["comment"] = {
        "url": f"{pulls}/comments/{comment_id}", "pull_request_review_id": 2_500_000_001,
        "id": comment_id, "node_id": f"PRRC_kwDOK{comment_id}", "diff_hunk": "@@ -1 +1 @@\n-a\n+b",
        "path": "widget.py", "position": 1, "original_position": 1, "commit_id": HEAD_SHA,
        "original_commit_id": HEAD_SHA, "user": author, "body": body, "created_at": UPDATED,
        "updated_at": UPDATED, "html_url": html, "pull_request_url": f"{pulls}/{number}",
        "author_association": "MEMBER",
        "_links": {"self": {"href": f"{pulls}/comments/{comment_id}"}, "html": {"href": html},
                   "pull_request": {"href": f"{pulls}/{number}"}},
        "start_line": None, "original_start_line": None, "original_line": 1, "line": 1,
        "start_side": None, "side": "RIGHT", "subject_type": "line", "reactions": reactions,
    }  # fmt: skip
    payload["pull_request"] = the_pull
    return _ordered(payload)


def pull_request_event(
    action: str = "synchronize",
    *,
    pull: Payload | None = None,
    sender: Payload | None = None,
    before: str = BASE_SHA,
) -> Payload:
    """`pull_request` / `synchronize`, `reopened` or `opened`."""
    the_pull = pull if pull is not None else pull_request()
    payload = _envelope(action, sender if sender is not None else app_bot(), None)
    payload["repository"] = the_pull["base"]["repo"]
    payload["number"] = the_pull["number"]
    payload["pull_request"] = the_pull
    if action == "synchronize":
        payload["before"] = before
        payload["after"] = the_pull["head"]["sha"]
    return _ordered(payload)


def installation_event(action: str = "created", *, sender: Payload | None = None) -> Payload:
    """`installation` / `created`, `deleted`, `suspend`, `unsuspend` or
    `new_permissions_accepted`."""
    installation = full_installation()
    who = sender if sender is not None else user("erin", id=1_000_005)
    if action == "suspend":
        installation["suspended_by"] = who
        installation["suspended_at"] = UPDATED
    payload: Payload = {"action": action, "installation": installation, "sender": who}
    if action in ("created", "deleted"):
        payload["repositories"] = [_short_repository(repository())]
    if action == "created":
        payload["requester"] = None
    return payload


def installation_repositories(action: str = "added", *, sender: Payload | None = None) -> Payload:
    """`installation_repositories` / `added` or `removed`."""
    changed = [_short_repository(repository("acme/gears", id=700_100_201))]
    return {
        "action": action,
        "installation": full_installation(),
        "repository_selection": "selected",
        "repositories_added": changed if action == "added" else [],
        "repositories_removed": changed if action == "removed" else [],
        "requester": None,
        "sender": sender if sender is not None else user("erin", id=1_000_005),
    }


def ping() -> Payload:
    """`ping` to an App's webhook, sent when the App is registered: no installation."""
    hook_id = 512345678
    return {
        "zen": "Design for failure.",
        "hook_id": hook_id,
        "hook": {
            "type": "App",
            "id": hook_id,
            "name": "web",
            "active": True,
            "events": ["issues", "pull_request", "pull_request_review"],
            "config": {
                "content_type": "json",
                "insecure_ssl": "0",
                "url": "https://frognano.acme.example/webhooks/github",
            },
            "updated_at": CREATED,
            "created_at": CREATED,
            "app_id": APP_ID,
            "deliveries_url": f"{API}/app/hook/deliveries",
        },
    }


def watch_started(*, sender: Payload | None = None) -> Payload:
    """`watch` / `started`: someone starred the repository (an event FrogNano does not use)."""
    return _ordered(_envelope("started", sender, None))


_ORDER = (
    "action", "number", "before", "after", "issue", "comment", "label", "review",
    "pull_request",
)  # fmt: skip


def _ordered(payload: Payload) -> Payload:
    """Keys in GitHub's order: the action and subject first, then the envelope."""
    first = {key: payload[key] for key in _ORDER if key in payload}
    return copy.deepcopy({**first, **payload})
