"""The fake GitHub server, driven by PyGithub (as the app drives GitHub) and by raw httpx."""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import shutil
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github import Auth, Github, GithubException, GithubIntegration, InputGitTreeElement

from tests.fakes.github import SECONDARY_RATE_LIMIT_MESSAGE, FakeGitHub

REPO = "octo/hello"
FILES = {
    "README.md": b"# hello\n",
    "src/app.py": b"print('hi')\n",
    "src/old.py": b"x = 1\n",
    "docs/guide.md": b"guide\n",
}
WRITE = {"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write"}
# PyGithub throttles itself (0.25 s between requests, 1 s between writes) unless told not to.


@pytest.fixture(scope="module")
def app_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.fixture
def gh(app_key: bytes) -> Iterator[FakeGitHub]:
    with FakeGitHub(app_id=42, private_key_pem=app_key) as fake:
        fake.add_repo(REPO, files=FILES)
        fake.add_repo("octo/other", files={"x.txt": b"x\n"})
        fake.add_collaborator(REPO, "alice", "write")
        fake.add_collaborator(REPO, "mallory", "triage")
        fake.add_issue(REPO, 1, "Crash on start", "It crashes.\n", user="alice")
        yield fake
        fake.assert_clean()


def app_jwt(
    fake: FakeGitHub, *, iss: object = None, lifetime: int = 540, iat_skew: int = -60
) -> str:
    now = int(time.time())
    claims = {"iat": now + iat_skew, "exp": now + iat_skew + lifetime, "iss": iss or fake.app_id}
    # PyJWS, not jwt.encode: PyJWT refuses a numeric `iss`, which GitHub accepts.
    return jwt.PyJWS().encode(json.dumps(claims).encode(), fake.app_private_key, algorithm="RS256")


@contextlib.contextmanager
def installation_client(fake: FakeGitHub, **narrow: Any) -> Iterator[Github]:
    token = fake.create_installation_token(100, **narrow)
    with Github(
        base_url=fake.base_url,
        auth=Auth.Token(token),
        seconds_between_requests=0,
        seconds_between_writes=0,
    ) as g:
        yield g


def raw(fake: FakeGitHub, token: str) -> httpx.Client:
    return httpx.Client(base_url=fake.base_url, headers={"Authorization": f"token {token}"})


# ---- auth ----------------------------------------------------------------------------------


def test_pygithub_app_auth_mints_tokens_and_sees_the_installation(gh: FakeGitHub) -> None:
    auth = Auth.AppAuth(gh.app_id, gh.app_private_key.decode())
    with contextlib.closing(
        GithubIntegration(
            auth=auth, base_url=gh.base_url, seconds_between_requests=0, seconds_between_writes=0
        )
    ) as gi:
        assert gi.get_app().slug == "frognano"
        installation = gi.get_repo_installation("octo", "hello")
        assert installation.id == 100
        token = gi.get_access_token(100, permissions={"contents": "read", "issues": "write"})
        assert token.token.startswith("ghs_")
        assert token.permissions == {"metadata": "read", "contents": "read", "issues": "write"}
    with Github(
        base_url=gh.base_url,
        auth=auth.get_installation_auth(100),
        seconds_between_requests=0,
        seconds_between_writes=0,
    ) as g:
        repo = g.get_repo(REPO)
        assert (repo.id, repo.default_branch) == (gh.repo(REPO).id, "main")
    sent = gh.requests_to("POST", r"/access_tokens$")
    assert sent[0].headers["authorization"].startswith("Bearer ")


def test_jwt_is_checked(gh: FakeGitHub) -> None:
    with httpx.Client(base_url=gh.base_url) as c:

        def status(token: str) -> int:
            return c.get("/app", headers={"Authorization": f"Bearer {token}"}).status_code

        assert status(app_jwt(gh)) == 200
        assert status(app_jwt(gh, iss=str(gh.app_id))) == 200
        assert status(app_jwt(gh, iss=7)) == 401
        assert status(app_jwt(gh, lifetime=601)) == 401  # exp - iat over 10 minutes
        assert status(app_jwt(gh, iat_skew=-1000)) == 401  # already expired
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        now = int(time.time())
        forged = jwt.encode(
            {"iat": now, "exp": now + 60, "iss": str(gh.app_id)}, other, algorithm="RS256"
        )
        assert status(forged) == 401
        assert c.get("/app").status_code == 401
        # an installation token is not a JWT
        token = gh.create_installation_token()
        assert c.get("/app", headers={"Authorization": f"token {token}"}).status_code == 401


def test_narrowed_tokens(gh: FakeGitHub) -> None:
    jwt_headers = {"Authorization": f"Bearer {app_jwt(gh)}"}
    with httpx.Client(base_url=gh.base_url, headers=jwt_headers) as c:
        r = c.post(
            "/app/installations/100/access_tokens",
            json={"repository_ids": [gh.repo(REPO).id], "permissions": {"contents": "read"}},
        )
        assert r.status_code == 201, r.text
        body = r.json()
        assert [x["full_name"] for x in body["repositories"]] == [REPO]
        assert body["repository_selection"] == "selected"
        read_only = body["token"]
        # permissions beyond the App's grant, repos outside the installation
        r = c.post(
            "/app/installations/100/access_tokens", json={"permissions": {"workflows": "write"}}
        )
        assert r.status_code == 422
        r = c.post("/app/installations/100/access_tokens", json={"repositories": ["nope"]})
        assert r.status_code == 422
        assert c.post("/app/installations/999/access_tokens").status_code == 404

    with raw(gh, read_only) as c:
        assert c.get(f"/repos/{REPO}").status_code == 200
        assert c.get(f"/repos/{REPO}/git/ref/heads/main").status_code == 200
        # narrowed to one repo: the other is invisible
        assert c.get("/repos/octo/other").status_code == 404
        # no contents:write -> no git data writes
        r = c.post(f"/repos/{REPO}/git/blobs", json={"content": "x", "encoding": "utf-8"})
        assert r.status_code == 403
        assert r.json()["message"] == "Resource not accessible by integration"
        # no issues permission at all
        assert c.post(f"/repos/{REPO}/issues/1/comments", json={"body": "hi"}).status_code == 403
        # revoke
        assert c.delete("/installation/token").status_code == 204
        assert c.get(f"/repos/{REPO}").status_code == 401

    expiring = gh.create_installation_token()
    gh.advance_time(3601)
    with raw(gh, expiring) as c:
        assert c.get(f"/repos/{REPO}").status_code == 401


def test_bearer_and_token_schemes_and_anonymous(gh: FakeGitHub) -> None:
    token = gh.create_installation_token()
    with httpx.Client(base_url=gh.base_url) as c:
        for scheme in ("token", "Bearer", "bearer"):
            r = c.get(f"/repos/{REPO}", headers={"Authorization": f"{scheme} {token}"})
            assert r.status_code == 200
        assert (
            c.get(f"/repos/{REPO}", headers={"Authorization": "token ghs_wrong"}).status_code == 401
        )
        assert c.get(f"/repos/{REPO}").status_code == 200  # public repo, anonymous read
        r = c.post(f"/repos/{REPO}/issues/1/comments", json={"body": "hi"})
        assert r.status_code == 401


# ---- git data ------------------------------------------------------------------------------


def test_full_git_data_commit_with_pygithub(gh: FakeGitHub) -> None:
    with installation_client(gh, permissions=WRITE) as g:
        repo = g.get_repo(REPO)
        base_sha = repo.get_git_ref("heads/main").object.sha
        base = repo.get_git_commit(base_sha)
        binary = bytes(range(256))
        script = repo.create_git_blob("#!/bin/sh\necho run\n", "utf-8")
        blob = repo.create_git_blob(base64.b64encode(binary).decode(), "base64")
        link = repo.create_git_blob("../README.md", "utf-8")
        tree = repo.create_git_tree(
            [
                InputGitTreeElement("bin/run.sh", "100755", "blob", sha=script.sha),
                InputGitTreeElement("data/blob.bin", "100644", "blob", sha=blob.sha),
                InputGitTreeElement("docs/README.link", "120000", "blob", sha=link.sha),
                InputGitTreeElement("src/app.py", "100644", "blob", content="print('fixed')\n"),
                InputGitTreeElement("src/old.py", "100644", "blob", sha=None),  # delete
                InputGitTreeElement("vendor/lib", "160000", "commit", sha="a" * 40),
            ],
            base_tree=base.tree,
        )
        commit = repo.create_git_commit("Fix the crash\n\nRefs #1", tree, [base])
        assert commit.author.name == "frognano[bot]"
        assert commit.committer.email == "noreply@github.com"
        assert commit.raw_data["verification"]["verified"] is True
        ref = repo.create_git_ref("refs/heads/frognano/issue-1", commit.sha)
        assert ref.object.sha == commit.sha

        # read it back through the API
        got = repo.get_git_tree(commit.sha, recursive=True)
        modes = {e.path: e.mode for e in got.tree}
        assert modes["bin/run.sh"] == "100755"
        assert modes["docs/README.link"] == "120000"
        assert modes["vendor/lib"] == "160000"
        assert "src/old.py" not in modes
        assert (
            repo.get_git_blob(blob.sha).content.replace("\n", "")
            == base64.b64encode(binary).decode()
        )

        # a second commit fast-forwards the branch; a non-fast-forward is refused
        tree2 = repo.create_git_tree(
            [InputGitTreeElement("NEW.md", "100644", "blob", content="new\n")], base_tree=tree
        )
        child = repo.create_git_commit("More", tree2, [commit])
        ref.edit(child.sha, force=False)
        assert gh.repo(REPO).branch_sha("frognano/issue-1") == child.sha
        with pytest.raises(GithubException) as err:
            ref.edit(base_sha, force=False)
        assert err.value.status == 422
        ref.edit(base_sha, force=True)
        ref.edit(child.sha, force=True)
        with pytest.raises(GithubException) as err:
            repo.create_git_ref("refs/heads/frognano/issue-1", commit.sha)
        assert err.value.status == 422

    assert gh.file_at(REPO, "frognano/issue-1", "src/app.py") == b"print('fixed')\n"
    assert gh.file_at(REPO, "frognano/issue-1", "src/old.py") is None
    assert gh.file_at(REPO, "frognano/issue-1", "data/blob.bin") == binary
    assert gh.file_at(REPO, "frognano/issue-1", "docs/README.link") == b"../README.md"
    assert gh.file_at(REPO, child.sha, "NEW.md") == b"new\n"
    assert gh.file_at(REPO, "main", "src/old.py") == b"x = 1\n"
    assert gh.files_at(REPO, commit.sha)["bin/run.sh"][0] == "100755"


def test_custom_author_is_unverified(gh: FakeGitHub) -> None:
    token = gh.create_installation_token()
    repo = gh.repo(REPO)
    head = repo.branch_sha("main") or ""
    tree = repo.commits[head]["tree"]
    with raw(gh, token) as c:
        author = {"name": "Alice", "email": "alice@example.com", "date": "2026-01-02T03:04:05Z"}
        r = c.post(
            f"/repos/{REPO}/git/commits",
            json={"message": "m", "tree": tree, "parents": [head], "author": author},
        )
        assert r.status_code == 201, r.text
        assert r.json()["verification"]["verified"] is False
        assert r.json()["author"]["name"] == "Alice"


def test_tree_shas_match_git(gh: FakeGitHub, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    for path, data in FILES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    for argv in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(argv, cwd=tmp_path, check=True, capture_output=True)
    local = subprocess.run(
        ["git", "write-tree"], cwd=tmp_path, check=True, capture_output=True, text=True
    ).stdout.strip()
    repo = gh.repo(REPO)
    assert repo.commits[repo.branch_sha("main") or ""]["tree"] == local


def test_tarball_redirects_to_a_gzip_with_githubs_folder_name(gh: FakeGitHub) -> None:
    repo = gh.repo(REPO)
    sha = repo.branch_sha("main") or ""
    token = gh.create_installation_token()
    with raw(gh, token) as c:
        r = c.get(f"/repos/{REPO}/tarball/main")
        assert r.status_code == 302
        location = r.headers["location"]
        assert location.startswith(gh.base_url)
    with installation_client(gh) as g:
        assert g.get_repo(REPO).get_archive_link("tarball", "main").startswith(gh.base_url)
    with httpx.Client() as anonymous:  # the redirect target needs no Authorization
        data = anonymous.get(location).content
        assert anonymous.get(location).status_code == 404  # one-time link
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        names = tar.getnames()
        assert tar.pax_headers["comment"] == sha
        top = f"octo-hello-{sha[:7]}"
        assert {n.split("/")[0] for n in names} == {top}
        member = tar.extractfile(f"{top}/src/app.py")
        assert member is not None
        assert member.read() == FILES["src/app.py"]


def test_empty_repo_and_compare(gh: FakeGitHub) -> None:
    gh.add_repo("octo/empty", files={})
    token = gh.create_installation_token()
    repo = gh.repo(REPO)
    main = repo.branch_sha("main") or ""
    with raw(gh, token) as c:
        assert c.get("/repos/octo/empty/git/ref/heads/main").status_code == 409
        tree = c.post(
            f"/repos/{REPO}/git/trees",
            json={
                "base_tree": repo.commits[main]["tree"],
                "tree": [{"path": "a", "mode": "100644", "type": "blob", "content": "a"}],
            },
        ).json()["sha"]
        one = c.post(
            f"/repos/{REPO}/git/commits", json={"message": "1", "tree": tree, "parents": [main]}
        ).json()
        c.post(f"/repos/{REPO}/git/refs", json={"ref": "refs/heads/topic", "sha": one["sha"]})
        cmp = c.get(f"/repos/{REPO}/compare/main...topic").json()
        assert (cmp["status"], cmp["ahead_by"], cmp["behind_by"]) == ("ahead", 1, 0)
        assert cmp["commits"][0]["author"]["login"] == "frognano[bot]"
        assert cmp["commits"][0]["commit"]["verification"]["verified"] is True
        assert [f["filename"] for f in cmp["files"]] == ["a"]
        commits = c.get(f"/repos/{REPO}/commits", params={"sha": "topic", "per_page": 1})
        assert [x["sha"] for x in commits.json()] == [one["sha"]]
        assert 'rel="next"' in commits.headers["link"]


# ---- pulls, issues, checks ----------------------------------------------------------------


def _push_branch(fake: FakeGitHub, branch: str, repo_name: str = REPO) -> str:
    """Commit a change on a new branch directly through the API; returns the commit SHA."""
    token = fake.create_installation_token()
    repo = fake.repo(repo_name)
    main = repo.branch_sha("main") or ""
    with raw(fake, token) as c:
        tree = c.post(
            f"/repos/{repo_name}/git/trees",
            json={
                "base_tree": repo.commits[main]["tree"],
                "tree": [{"path": "fix.txt", "mode": "100644", "type": "blob", "content": branch}],
            },
        ).json()["sha"]
        sha: str = c.post(
            f"/repos/{repo_name}/git/commits",
            json={"message": "fix", "tree": tree, "parents": [main]},
        ).json()["sha"]
        assert (
            c.post(
                f"/repos/{repo_name}/git/refs", json={"ref": f"refs/heads/{branch}", "sha": sha}
            ).status_code
            == 201
        )
    return sha


def test_draft_pull_request_labels_reviewers_and_reviews(gh: FakeGitHub) -> None:
    head = _push_branch(gh, "frognano/issue-1")
    with installation_client(gh, permissions=WRITE) as g:
        repo = g.get_repo(REPO)
        pr = repo.create_pull(
            base="main", head="frognano/issue-1", title="Fix crash", body="Refs #1", draft=True
        )
        assert pr.draft is True
        assert pr.number == 2  # shares the numbering with issue 1
        assert (pr.head.ref, pr.head.sha, pr.base.ref) == ("frognano/issue-1", head, "main")
        assert pr.user.login == "frognano[bot]"
        assert pr.user.type == "Bot"
        pr.add_to_labels("needs-human-review")
        pr.create_review_request(reviewers=["alice"])
        found = list(repo.get_pulls(state="all", head="octo:frognano/issue-1"))
        assert [p.number for p in found] == [2]
        assert list(repo.get_pulls(state="all", head="octo:nothing")) == []
        with pytest.raises(GithubException) as err:
            repo.create_pull(
                base="main", head="frognano/issue-1", title="again", body="", draft=True
            )
        assert err.value.status == 422
        review = gh.submit_review(REPO, 2, user="alice", state="approved")
        reviews = list(repo.get_pull(2).get_reviews())
        assert [(r.user.login, r.state, r.commit_id) for r in reviews] == [
            ("alice", "APPROVED", head)
        ]
        assert review["state"] == "APPROVED"
        pr.edit(body="Refs #1\n\nupdated")
        assert repo.get_pull(2).body.endswith("updated")
        with pytest.raises(GithubException) as err:
            pr.create_review_request(reviewers=["stranger"])
        assert err.value.status == 422
    state = gh.repo(REPO)
    assert state.issues[2]["labels"] == ["needs-human-review"]
    assert state.pulls[2]["requested_reviewers"] == ["alice"]


def test_drafts_unsupported_gives_422(gh: FakeGitHub) -> None:
    gh.add_repo("octo/private", files={"a": b"a"}, private=True, allow_drafts=False)
    _push_branch(gh, "topic", "octo/private")
    with installation_client(gh) as g:
        repo = g.get_repo("octo/private")
        with pytest.raises(GithubException) as err:
            repo.create_pull(base="main", head="topic", title="t", body="b", draft=True)
        assert err.value.status == 422
        assert (
            err.value.data["message"] == "Draft pull requests are not supported in this repository."
        )
        assert repo.create_pull(base="main", head="topic", title="t", body="b").draft is False


def test_status_comment_create_edit_and_size_limit(gh: FakeGitHub) -> None:
    with installation_client(gh) as g:
        issue = g.get_repo(REPO).get_issue(1)
        assert (issue.title, issue.user.login) == ("Crash on start", "alice")
        comment = issue.create_comment("<!-- frognano:status -->\nQueued")
        comment.edit("<!-- frognano:status -->\nRunning")
        assert [c.body for c in issue.get_comments()] == ["<!-- frognano:status -->\nRunning"]
        assert comment.user.login == "frognano[bot]"
        with pytest.raises(GithubException) as err:
            issue.create_comment("x" * 65537)
        assert err.value.status == 422
        assert (
            err.value.data["errors"][0]["message"]
            == "body is too long (maximum is 65536 characters)"
        )
        with pytest.raises(GithubException) as err:
            comment.edit("y" * 65537)
        assert err.value.status == 422
        issue.create_comment("x" * 65536)  # exactly the limit is fine
    assert gh.repo(REPO).comments(1)[0]["body"].endswith("Running")


def test_reactions_are_idempotent(gh: FakeGitHub) -> None:
    with installation_client(gh) as g:
        issue = g.get_repo(REPO).get_issue(1)
        first = issue.create_reaction("eyes")
        second = issue.create_reaction("eyes")
        assert first.id == second.id
    statuses = [r.status for r in gh.requests_to("POST", r"/issues/1/reactions$")]
    assert statuses == [201, 200]
    assert len(gh.repo(REPO).issues[1]["reactions"]) == 1


def test_check_runs(gh: FakeGitHub) -> None:
    head = _push_branch(gh, "frognano/issue-1")
    with installation_client(gh, permissions=WRITE) as g:
        repo = g.get_repo(REPO)
        run = repo.create_check_run(
            name="frognano/human-review",
            head_sha=head,
            status="completed",
            conclusion="action_required",
            output={"title": "Waiting for review", "summary": "A writer must approve."},
        )
        assert (run.status, run.conclusion) == ("completed", "action_required")
        run.edit(conclusion="success", output={"title": "Approved", "summary": "by alice"})
        repo.create_check_run(name="other", head_sha=head, status="in_progress")
        runs = list(repo.get_commit(head).get_check_runs(check_name="frognano/human-review"))
        assert [(r.id, r.conclusion) for r in runs] == [(run.id, "success")]
        assert runs[0].output.title == "Approved"
        assert runs[0].app.slug == "frognano"
        with pytest.raises(GithubException) as err:
            repo.create_check_run(name="x", head_sha="0" * 40)
        assert err.value.status == 422
    # a human's token cannot write check runs; a token without checks cannot either
    with raw(gh, gh.add_user_token("alice")) as c:
        r = c.post(f"/repos/{REPO}/check-runs", json={"name": "x", "head_sha": head})
        assert r.status_code == 403
    with raw(gh, gh.create_installation_token(permissions={"contents": "write"})) as c:
        r = c.post(f"/repos/{REPO}/check-runs", json={"name": "x", "head_sha": head})
        assert r.status_code == 403


def test_collaborator_permission(gh: FakeGitHub) -> None:
    gh.add_collaborator(REPO, "maint", "maintain")
    gh.add_collaborator(REPO, "dependabot[bot]", "write", bot=True)
    gh.add_collaborator(REPO, "custom", "write", role_name="release-manager")
    with installation_client(gh) as g:
        repo = g.get_repo(REPO)
        assert repo.get_collaborator_permission("alice") == "write"
        assert repo.get_collaborator_permission("mallory") == "read"  # triage maps to read
        assert repo.get_collaborator_permission("maint") == "write"  # maintain maps to write
        assert repo.get_collaborator_role_name("maint") == "maintain"
        assert repo.get_collaborator_role_name("custom") == "release-manager"
        assert repo.get_collaborator_permission("octo") == "admin"
    with raw(gh, gh.create_installation_token()) as c:
        body = c.get(f"/repos/{REPO}/collaborators/dependabot[bot]/permission").json()
        assert body["user"]["type"] == "Bot"
        assert c.get(f"/repos/{REPO}/collaborators/nobody-at-all/permission").status_code == 404


# ---- faults and validation -----------------------------------------------------------------


def test_a_502_then_success(gh: FakeGitHub) -> None:
    gh.fail_next("GET", rf"^/repos/{REPO}$", status=502)
    with installation_client(gh) as g:  # PyGithub's default GithubRetry retries 5xx
        assert g.get_repo(REPO).name == "hello"
    assert [r.status for r in gh.requests_to("GET", rf"^/repos/{REPO}$")] == [502, 200]


def test_secondary_rate_limit_with_retry_after(gh: FakeGitHub) -> None:
    gh.fail_next("POST", r"/issues/1/comments$", status=403, headers={"Retry-After": "1"})
    token = gh.create_installation_token()
    with raw(gh, token) as c:
        r = c.post(f"/repos/{REPO}/issues/1/comments", json={"body": "hi"})
        assert r.status_code == 403
        assert r.headers["retry-after"] == "1"
        assert r.json()["message"] == SECONDARY_RATE_LIMIT_MESSAGE
        assert c.post(f"/repos/{REPO}/issues/1/comments", json={"body": "hi"}).status_code == 201
    gh.fail_next("GET", r"/issues/1$", status=429, times=2, headers={"Retry-After": "0"})
    with installation_client(gh) as g:  # urllib3 honours Retry-After on 403/429
        started = time.monotonic()
        assert g.get_repo(REPO).get_issue(1).number == 1
        assert time.monotonic() - started < 5
    assert [r.status for r in gh.requests_to("GET", r"/issues/1$")] == [429, 429, 200]


def test_schema_violations_are_rejected_and_recorded(gh: FakeGitHub) -> None:
    token = gh.create_installation_token()
    tree = gh.repo(REPO).commits[gh.repo(REPO).branch_sha("main") or ""]["tree"]
    with raw(gh, token) as c:
        r = c.post(
            f"/repos/{REPO}/git/trees",
            json={
                "base_tree": tree,
                "tree": [{"path": "a", "mode": "100666", "type": "blob", "content": "a"}],
            },
        )
        assert r.status_code == 422
        assert r.json()["message"].startswith("Invalid request.\n\n")
        assert r.json()["documentation_url"].startswith("https://docs.github.com/")
        r = c.post(f"/repos/{REPO}/issues/1/reactions", json={"content": "thumbsup"})
        assert r.status_code == 422
        r = c.post(f"/repos/{REPO}/git/refs", json={"ref": "refs/heads/x"})  # sha missing
        assert r.status_code == 422
        r = c.get(f"/repos/{REPO}/pulls", params={"state": "merged"})
        assert r.status_code == 422
        assert c.get(f"/repos/{REPO}/no/such/route").status_code == 404
        assert c.get(f"/repos/{REPO}/no/such/route").json()["message"] == "Not Found"
    got = [(e.operation_id, e.where) for e in gh.validation_errors]
    assert got == [
        ("git/create-tree", "body"),
        ("reactions/create-for-issue", "body"),
        ("git/create-ref", "body"),
        ("pulls/list", "query"),
    ]
    assert "100666" in gh.validation_errors[0].message
    with pytest.raises(AssertionError, match="schema violations"):
        gh.assert_clean()
    gh.validation_errors.clear()


def test_tree_semantics(gh: FakeGitHub) -> None:
    token = gh.create_installation_token()
    repo = gh.repo(REPO)
    base = repo.commits[repo.branch_sha("main") or ""]["tree"]

    def post(entries: list[dict[str, Any]]) -> httpx.Response:
        return c.post(f"/repos/{REPO}/git/trees", json={"base_tree": base, "tree": entries})

    with raw(gh, token) as c:
        assert (
            post(
                [{"path": "missing.py", "mode": "100644", "type": "blob", "sha": None}]
            ).status_code
            == 422
        )
        both = {"path": "a", "mode": "100644", "type": "blob", "sha": "0" * 40, "content": "a"}
        assert post([both]).status_code == 422
        assert (
            post([{"path": "a", "mode": "040000", "type": "blob", "content": "a"}]).status_code
            == 422
        )
        assert (
            post([{"path": "a", "mode": "100644", "type": "blob", "sha": "0" * 40}]).status_code
            == 422
        )
        # deleting a folder removes everything under it
        r = post([{"path": "src", "mode": "040000", "type": "tree", "sha": None}])
        assert r.status_code == 201
        assert {e["path"] for e in r.json()["tree"]} == {"README.md", "docs"}
        # without base_tree, only the given entries remain
        r = c.post(
            f"/repos/{REPO}/git/trees",
            json={"tree": [{"path": "only.txt", "mode": "100644", "type": "blob", "content": "x"}]},
        )
        assert [e["path"] for e in r.json()["tree"]] == ["only.txt"]


def test_latency_and_requests_log(gh: FakeGitHub) -> None:
    gh.latency = 0.05
    token = gh.create_installation_token()
    with raw(gh, token) as c:
        started = time.monotonic()
        c.get(f"/repos/{REPO}", params={"x": "1"})
        assert time.monotonic() - started >= 0.05
    last = gh.requests[-1]
    assert (last.method, last.path, last.query, last.status) == (
        "GET",
        f"/repos/{REPO}",
        {"x": ["1"]},
        200,
    )
    assert last.headers["authorization"] == f"token {token}"
    assert last.operation_id == "repos/get"
