"""RepoClient's reads and reactions for follow-ups: the issue, a review's line comments."""

from __future__ import annotations

from frognano.github.client import RepoClient
from frognano.github.models import FileChange, IssueText, ReviewComment
from tests.fakes.app_env import *  # noqa: F403 (the fixtures)
from tests.fakes.app_env import REPO
from tests.fakes.github import FakeGitHub

BRANCH = "frognano/issue-1"


async def test_the_issue_is_read_with_a_null_body_as_empty(
    fake: FakeGitHub, client: RepoClient
) -> None:
    fake.add_issue(REPO, 1, "Bug", "It breaks")
    assert await client.issue(1) == IssueText(1, "Bug", "It breaks", "open")
    fake.repo(REPO).issues[1]["body"] = None
    assert (await client.issue(1)).body == ""


async def test_a_comment_gets_one_reaction_however_often_asked(
    fake: FakeGitHub, client: RepoClient
) -> None:
    fake.add_issue(REPO, 1, "Bug", "It breaks")
    comment = fake.add_comment(REPO, 1, "/frognano please", user="alice")
    await client.react_to_comment(comment, "eyes")
    await client.react_to_comment(comment, "eyes")
    reactions = fake.repo(REPO).issues[1]["comments"][0]["reactions"]
    assert [(r["user"], r["content"]) for r in reactions] == [("frognano[bot]", "eyes")]


async def test_a_reviews_line_comments_in_order(fake: FakeGitHub, client: RepoClient) -> None:
    fake.add_collaborator(REPO, "alice", "write")
    _name, base = await client.default_branch()
    head = await client.create_commit(base, [FileChange("a.txt", "100644", b"1")], "fix")
    await client.upsert_branch(BRANCH, head, app_login="frognano[bot]")
    pull = await client.find_or_create_pull(BRANCH, "main", "Fix", "body")
    review = fake.submit_review(
        REPO,
        pull.number,
        user="alice",
        state="commented",
        body="/frognano fix these",
        comments=[("a.txt", 1, "@@ -0,0 +1 @@\n+1", "say 2"), ("b.py", 3, "@@ x", "and here")],
    )
    fake.submit_review(REPO, pull.number, user="alice", state="commented")
    assert await client.review_comments(pull.number, review["id"]) == [
        ReviewComment("a.txt", 1, "@@ -0,0 +1 @@\n+1", "say 2", "alice"),
        ReviewComment("b.py", 3, "@@ x", "and here", "alice"),
    ]
    second = review["id"] + 2  # ids are handed out in order: the review, then its comments
    assert await client.review_comment(second) == ReviewComment(
        "b.py", 3, "@@ x", "and here", "alice"
    )
