"""RepoClient against the fake GitHub over HTTP: each operation, its idempotency, retries."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from frognano.errors import UnsafePathError
from frognano.github.archive import LeftOutLink
from frognano.github.auth import ACKNOWLEDGE, GitHubApp
from frognano.github.client import RepoClient
from frognano.github.errors import BranchConflict, GitHubUnavailable
from frognano.github.models import BODY_LIMIT, FileChange
from frognano.github.retry import Transport
from tests.fakes.app_env import *  # noqa: F403 (the fixtures)
from tests.fakes.app_env import (
    FILES,
    REPO,
    MakeClient,
    Sleeps,
    make_transport,
)
from tests.fakes.github import FakeGitHub

MARKER = "<!-- frognano:status:run-1 -->"
BRANCH = "frognano/issue-1"


def lose_next_response(fake: FakeGitHub, method: str, path_end: str, sleeps: Sleeps) -> None:
    """GitHub carries out the next matching request but its response never arrives in time
    (the client's read times out); the client's first retry wait restores the network."""
    original = fake.handle
    armed = [True]

    def handle(verb: str, raw_path: str, headers: dict[str, str], body: bytes) -> Any:
        response = original(verb, raw_path, headers, body)
        if armed[0] and verb == method and raw_path.split("?", maxsplit=1)[0].endswith(path_end):
            armed[0] = False
            fake.latency = 2.0
        return response

    fake.handle = handle  # type: ignore[method-assign,assignment]
    sleeps.then = lambda: setattr(fake, "latency", 0.0)


async def human_client(fake: FakeGitHub, transport: Transport, login: str) -> RepoClient:
    fake.add_collaborator(REPO, login, "write")
    return RepoClient(REPO, fake.add_user_token(login), transport=transport)


# -- issues ---------------------------------------------------------------------------------


async def test_permission_reports_role_names(fake: FakeGitHub, client: RepoClient) -> None:
    fake.add_collaborator(REPO, "mia", "maintain")
    fake.add_collaborator(REPO, "tom", "triage")
    fake.add_collaborator(REPO, "cus", "write", role_name="release-manager")
    assert await client.permission("mia") == "maintain"  # `permission` alone would say write
    assert await client.permission("tom") == "triage"
    assert await client.permission("cus") == "release-manager"
    assert await client.permission("octo") == "admin"
    assert await client.permission("nobody-at-all") == "none"
    assert await client.permission_levels("mia") == ("maintain", "write")
    assert await client.permission_levels("tom") == ("triage", "read")
    assert await client.permission_levels("cus") == ("release-manager", "write")
    assert await client.permission_levels("nobody-at-all") == ("none", "none")


async def test_react_twice_leaves_one_reaction(fake: FakeGitHub, client: RepoClient) -> None:
    fake.add_issue(REPO, 1, "Bug", "It breaks")
    await client.react(1, "eyes")
    await client.react(1, "eyes")
    reactions = fake.repo(REPO).issues[1]["reactions"]
    assert [(r["user"], r["content"]) for r in reactions] == [("frognano[bot]", "eyes")]


async def test_status_comment_is_edited_in_place_and_found_again_after_a_crash(
    fake: FakeGitHub, make_client: MakeClient, transport: Transport
) -> None:
    fake.add_issue(REPO, 1, "Bug", "It breaks")
    # Someone quotes the marker, and 105 other comments push the app's onto a later page.
    fake.add_collaborator(REPO, "alice", "write")
    alice_token = fake.add_user_token("alice")
    human = RepoClient(REPO, alice_token, transport=transport)
    await human.upsert_status_comment(1, MARKER, "copied marker")
    client = await make_client(REPO, ACKNOWLEDGE)
    first = await client.upsert_status_comment(1, MARKER, "Queued")
    async with httpx.AsyncClient(
        base_url=fake.base_url, headers={"Authorization": f"token {alice_token}"}
    ) as http:
        for n in range(105):
            await http.post(f"/repos/{REPO}/issues/1/comments", json={"body": f"chatter {n}"})
    assert await client.upsert_status_comment(1, MARKER, "Running") == first

    restarted = await make_client(REPO, ACKNOWLEDGE)
    assert await restarted.upsert_status_comment(1, MARKER, "Done" + "x" * 70_000) == first
    human.close()

    comments = fake.repo(REPO).comments(1)
    mine = [c for c in comments if c["user"] == "frognano[bot]"]
    assert [c["id"] for c in mine] == [first]
    body = mine[0]["body"]
    assert body.startswith(MARKER + "\nDone")
    assert len(body) < BODY_LIMIT
    assert "comment truncated" in body
    assert comments[0]["body"] == "<!-- frognano:status:run-1 -->\ncopied marker"  # untouched
    assert len(fake.requests_to("POST", r"/issues/1/comments$")) == 107  # 1 app + 106 human


# -- fetch ----------------------------------------------------------------------------------


async def test_default_branch_and_download_tree(
    fake: FakeGitHub, client: RepoClient, tmp_path: Path
) -> None:
    name, sha = await client.default_branch()
    assert (name, sha) == ("main", fake.repo(REPO).branch_sha("main"))
    commit = await client.create_commit(
        sha,
        [
            FileChange("bin/run.sh", "100755", b"#!/bin/sh\necho hi\n"),
            FileChange("docs/readme-link", "120000", b"../README.md"),
        ],
        "add a script",
    )
    extracted = await client.download_tree(commit, tmp_path / "tree")
    dest = extracted.root
    assert extracted.left_out == ()
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if not p.is_dir())
    assert files == ["README.md", "bin/run.sh", "docs/readme-link", "old.txt", "src/app.py"]
    assert (dest / "src/app.py").read_bytes() == FILES["src/app.py"]
    assert os.stat(dest / "bin/run.sh").st_mode & stat.S_IXUSR
    assert os.readlink(dest / "docs/readme-link") == "../README.md"
    assert list(tmp_path.iterdir()) == [dest]  # the tarball itself is gone


async def test_download_leaves_out_the_symlinks_that_lead_outside_the_tree(
    fake: FakeGitHub, client: RepoClient, tmp_path: Path
) -> None:
    _name, sha = await client.default_branch()
    links = [
        FileChange("passwd", "120000", b"/etc/passwd"),
        FileChange("src/up", "120000", b"../.."),
    ]
    evil = await client.create_commit(sha, links, "links out")
    extracted = await client.download_tree(evil, tmp_path / "tree")
    assert extracted.left_out == (
        LeftOutLink("passwd", "/etc/passwd"),
        LeftOutLink("src/up", "../.."),
    )
    tree = extracted.root
    assert not os.path.lexists(tree / "passwd")
    assert not os.path.lexists(tree / "src/up")
    assert (tree / "src/app.py").read_bytes() == FILES["src/app.py"]


# -- publish --------------------------------------------------------------------------------


async def test_commit_applies_modes_and_deletions_and_is_verified(
    fake: FakeGitHub, client: RepoClient
) -> None:
    _name, base = await client.default_branch()
    sha = await client.create_commit(
        base,
        [
            FileChange("src/app.py", "100644", b"print('fixed')\n"),
            FileChange("tools/go.sh", "100755", b"#!/bin/sh\n"),
            FileChange("link", "120000", b"src/app.py"),
            FileChange("old.txt", "100644", None),
            FileChange("data.bin", "100644", bytes(range(256))),
        ],
        "Fix the greeting\n",
        co_author="Alice <alice@example.com>",
    )
    assert fake.file_at(REPO, sha, "src/app.py") == b"print('fixed')\n"
    assert fake.file_at(REPO, sha, "old.txt") is None
    assert fake.file_at(REPO, sha, "README.md") == FILES["README.md"]  # base_tree kept it
    assert fake.file_at(REPO, sha, "data.bin") == bytes(range(256))
    files = fake.files_at(REPO, sha)
    assert files["tools/go.sh"][0] == "100755"
    assert files["link"] == ("120000", b"src/app.py")
    commit = fake.repo(REPO).commits[sha]
    assert commit["parents"] == [base]
    assert commit["message"] == "Fix the greeting\n\nCo-authored-by: Alice <alice@example.com>\n"
    assert commit["verified"]
    sent = fake.requests_to("POST", r"/git/commits$")[-1].json
    assert "author" not in sent
    assert "committer" not in sent
    assert fake.repo(REPO).branch_sha("main") == base  # no branch moved


def test_file_changes_are_checked() -> None:
    for bad in ("/etc/passwd", "../up", "a//b", ".git/config", "a/./b", ""):
        with pytest.raises(UnsafePathError):
            FileChange(bad, "100644", b"x")
    with pytest.raises(ValueError, match="mode '100666'"):
        FileChange("a", "100666", b"x")


async def test_branch_is_created_left_moved_or_refused(
    fake: FakeGitHub, client: RepoClient, transport: Transport
) -> None:
    _name, base = await client.default_branch()
    one = await client.create_commit(base, [FileChange("a.txt", "100644", b"1")], "one")
    assert await client.upsert_branch(BRANCH, one, app_login="frognano[bot]") == "created"
    assert await client.upsert_branch(BRANCH, one, app_login="frognano[bot]") == "unchanged"
    two = await client.create_commit(base, [FileChange("a.txt", "100644", b"2")], "two")
    assert await client.upsert_branch(BRANCH, two, app_login="frognano[bot]") == "moved"
    assert fake.repo(REPO).branch_sha(BRANCH) == two

    # A human branch of the same name holds commits the app did not make: left alone.
    human = await human_client(fake, transport, "alice")
    theirs = await human.create_commit(base, [FileChange("b.txt", "100644", b"b")], "mine")
    assert await human.upsert_branch("feature", theirs, app_login="alice") == "created"
    with pytest.raises(BranchConflict, match="commits by alice"):
        await client.upsert_branch("feature", two, app_login="frognano[bot]")
    assert fake.repo(REPO).branch_sha("feature") == theirs

    # A human commit on top of the app's branch also stops the move.
    on_top = await human.create_commit(two, [FileChange("c.txt", "100644", b"c")], "fixup")
    await human.upsert_branch(BRANCH, on_top, app_login="frognano[bot]")  # human moves it
    with pytest.raises(BranchConflict, match="Delete the branch"):
        await client.upsert_branch(BRANCH, one, app_login="frognano[bot]")
    human.close()


async def test_a_fast_forward_never_overwrites_a_push_made_after_the_check(
    fake: FakeGitHub, client: RepoClient, transport: Transport
) -> None:
    _name, base = await client.default_branch()
    head = await client.create_commit(base, [FileChange("a.txt", "100644", b"1")], "one")
    await client.upsert_branch(BRANCH, head, app_login="frognano[bot]")
    ours = await client.create_commit(head, [FileChange("a.txt", "100644", b"2")], "two")
    # A human pushes after FrogNano last looked at the branch, before it moves it.
    human = await human_client(fake, transport, "alice")
    theirs = await human.create_commit(head, [FileChange("b.txt", "100644", b"b")], "mine")
    await human.upsert_branch(BRANCH, theirs, app_login="frognano[bot]")
    human.close()
    with pytest.raises(BranchConflict, match="moved on GitHub"):
        await client.fast_forward(BRANCH, ours)
    assert fake.repo(REPO).branch_sha(BRANCH) == theirs
    # On the head it was made on, the same move goes through.
    later = await client.create_commit(theirs, [FileChange("a.txt", "100644", b"3")], "three")
    await client.fast_forward(BRANCH, later)
    assert fake.repo(REPO).branch_sha(BRANCH) == later


async def test_a_branch_off_another_base_is_checked_against_that_base(
    fake: FakeGitHub, client: RepoClient, transport: Transport
) -> None:
    _name, main = await client.default_branch()
    human = await human_client(fake, transport, "alice")
    release = await human.create_commit(main, [FileChange("R", "100644", b"r")], "release")
    await human.upsert_branch("release/1", release, app_login="alice")
    human.close()
    assert await client.branch_sha("release/1") == release
    assert await client.branch_sha("release/2") is None
    one = await client.create_commit(release, [FileChange("a.txt", "100644", b"1")], "one")
    two = await client.create_commit(release, [FileChange("a.txt", "100644", b"2")], "two")
    app = "frognano[bot]"
    assert await client.upsert_branch(BRANCH, one, app_login=app, base="release/1") == "created"
    # Against the default branch, the release's own commit is someone else's.
    with pytest.raises(BranchConflict, match="commits by alice"):
        await client.upsert_branch(BRANCH, two, app_login=app)
    assert await client.upsert_branch(BRANCH, two, app_login=app, base="release/1") == "moved"


async def test_pull_request_is_found_instead_of_duplicated(
    fake: FakeGitHub, client: RepoClient, make_client: MakeClient
) -> None:
    _name, base = await client.default_branch()
    head = await client.create_commit(base, [FileChange("a.txt", "100644", b"1")], "fix")
    await client.upsert_branch(BRANCH, head, app_login="frognano[bot]")
    pull = await client.find_or_create_pull(BRANCH, "main", "Fix #1", "Refs #1")
    assert pull.draft
    assert pull.head_sha == head
    restarted = await make_client()
    again = await restarted.find_or_create_pull(BRANCH, "main", "Fix #1", "Refs #1, take two")
    assert again == pull
    assert list(fake.repo(REPO).pulls) == [pull.number]
    assert fake.repo(REPO).issues[pull.number]["body"] == "Refs #1, take two"
    assert len(fake.requests_to("POST", r"/pulls$")) == 1


async def test_a_create_whose_response_was_lost_is_not_repeated(
    fake: FakeGitHub, app: GitHubApp, sleeps: Sleeps
) -> None:
    repo = fake.repo(REPO)
    client = RepoClient(
        REPO,
        app.token_source(
            repo.installation_id, repo.id, {"contents": "write", "pull_requests": "write"}
        ),
        transport=make_transport(fake, sleeps, timeout=1),
    )
    _name, base = await client.default_branch()
    head = await client.create_commit(base, [FileChange("a.txt", "100644", b"1")], "fix")
    await client.upsert_branch(BRANCH, head, app_login="frognano[bot]")
    lose_next_response(fake, "POST", "/pulls", sleeps)
    started = time.monotonic()
    pull = await client.find_or_create_pull(BRANCH, "main", "Fix #1", "Refs #1")
    assert time.monotonic() - started < 5
    client.close()
    assert len(sleeps.waits) == 1
    assert len(fake.requests_to("POST", r"/pulls$")) == 1
    assert list(fake.repo(REPO).pulls) == [pull.number]


async def test_draft_falls_back_to_a_normal_pull_request(
    fake: FakeGitHub, make_client: MakeClient
) -> None:
    fake.add_repo("octo/free", files={"a.txt": b"a"}, allow_drafts=False)
    client = await make_client("octo/free")
    _name, base = await client.default_branch()
    head = await client.create_commit(base, [FileChange("a.txt", "100644", b"b")], "change")
    await client.upsert_branch(BRANCH, head, app_login="frognano[bot]")
    pull = await client.find_or_create_pull(BRANCH, "main", "Change", "body")
    assert not pull.draft
    assert [r.json["draft"] for r in fake.requests_to("POST", r"/pulls$")] == [True, False]
    assert await client.find_or_create_pull(BRANCH, "main", "Change", "body") == pull


async def test_labels_reviewers_and_reviews(fake: FakeGitHub, client: RepoClient) -> None:
    fake.add_collaborator(REPO, "alice", "write")
    _name, base = await client.default_branch()
    head = await client.create_commit(base, [FileChange("a.txt", "100644", b"1")], "fix")
    await client.upsert_branch(BRANCH, head, app_login="frognano[bot]")
    pull = await client.find_or_create_pull(BRANCH, "main", "Fix", "body")

    await client.add_labels(pull.number, ["frognano", "needs-human-review"])
    await client.add_labels(pull.number, ["frognano"])
    assert fake.repo(REPO).issues[pull.number]["labels"] == ["frognano", "needs-human-review"]

    refused = await client.request_reviewers(
        pull.number, ["alice", "frognano[bot]", "stranger"], ["core"]
    )
    assert refused == ["frognano[bot]", "stranger", "core"]
    assert fake.repo(REPO).pulls[pull.number]["requested_reviewers"] == ["alice"]
    assert await client.request_reviewers(pull.number, ["alice"]) == []

    fake.submit_review(REPO, pull.number, user="alice", state="approved")
    fake.submit_review(REPO, pull.number, user="bob", state="commented", commit_id=base)
    reviews = await client.reviews(pull.number)
    assert [(r.user, r.state, r.commit_id, r.user_type) for r in reviews] == [
        ("alice", "APPROVED", head, "User"),
        ("bob", "COMMENTED", base, "User"),
    ]


async def test_check_run_is_upserted_by_name_on_the_commit(
    fake: FakeGitHub, client: RepoClient, make_client: MakeClient
) -> None:
    _name, sha = await client.default_branch()
    first = await client.upsert_check_run(
        sha, "frognano/human-review", status="in_progress", title="Waiting", summary="..."
    )
    restarted = await make_client()
    again = await restarted.upsert_check_run(
        sha,
        "frognano/human-review",
        status="completed",
        conclusion="action_required",
        title="Needs a human approval",
        summary="s" * 70_000,
        text="details",
    )
    assert again == first
    other = await restarted.upsert_check_run(
        sha, "frognano/tests", status="completed", conclusion="success", title="ok", summary="ok"
    )
    assert other != first
    runs = fake.repo(REPO).check_runs
    assert len(runs) == 2
    run = runs[first]
    assert (run["status"], run["conclusion"]) == ("completed", "action_required")
    assert len(run["output"]["summary"]) <= 65_535
    assert run["output"]["text"] == "details"
    with pytest.raises(ValueError, match="conclusion is required"):
        await client.upsert_check_run(sha, "x", status="completed", title="t", summary="s")


# -- retries over HTTP ----------------------------------------------------------------------


async def test_a_502_is_retried(fake: FakeGitHub, client: RepoClient, sleeps: Sleeps) -> None:
    _name, base = await client.default_branch()
    fake.fail_next("POST", r"/git/trees$", status=502)
    sha = await client.create_commit(base, [FileChange("a.txt", "100644", b"1")], "one")
    assert fake.file_at(REPO, sha, "a.txt") == b"1"
    assert len(sleeps.waits) == 1
    assert [r.status for r in fake.requests_to("POST", r"/git/trees$")] == [502, 201]


async def test_secondary_rate_limit_waits_retry_after(
    fake: FakeGitHub, client: RepoClient, sleeps: Sleeps
) -> None:
    fake.add_issue(REPO, 1, "Bug", "It breaks")
    fake.fail_next("POST", r"/issues/1/comments$", status=403, headers={"Retry-After": "7"})
    fake.fail_next("PATCH", r"/issues/comments/", status=403, headers={})  # no Retry-After
    await client.upsert_status_comment(1, MARKER, "one")
    await client.upsert_status_comment(1, MARKER, "two")
    assert sleeps.waits == [7.0, 60.0]
    assert [c["body"] for c in fake.repo(REPO).comments(1)] == [f"{MARKER}\ntwo"]


async def test_primary_rate_limit_waits_until_reset(
    fake: FakeGitHub, client: RepoClient, sleeps: Sleeps
) -> None:
    reset = int(time.time()) + 30
    fake.fail_next(
        "GET",
        r"/collaborators/",
        status=403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        body={"message": "API rate limit exceeded for installation ID 100."},
    )
    assert await client.permission("octo") == "admin"
    assert len(sleeps.waits) == 1
    assert 25 < sleeps.waits[0] <= 32


async def test_retry_budget_exhausted_raises(
    fake: FakeGitHub, client: RepoClient, sleeps: Sleeps
) -> None:
    fake.fail_next("GET", r"/git/ref/heads/main$", status=503, times=10)
    with pytest.raises(GitHubUnavailable, match=r"read branch main .*HTTP 503 after 4 attempt"):
        await client.default_branch()
    assert len(sleeps.waits) == 3
    assert len(fake.requests_to("GET", r"/git/ref/heads/main$")) == 4
