"""Through the worker: every attack in the issue, review and model text, and nothing live."""

# One run whose issue title and body, the model's reasoning, tool calls and final summary carry
# every attack in tests/gfm.py (mention and closing-keyword floods spelled every way, an image
# and a link carrying data), a follow-up round on an issue edited to carry them again, a
# writer's `base=` naming a hostile branch, a label added again while the run is on. Then every
# text FrogNano sent to the fake GitHub, as recorded there (each version of each comment,
# each check-run write, each commit), is rendered with GitHub's cmark-gfm and checked: no
# link, image, raw HTML, mention, closing keyword or issue reference from untrusted text;
# FrogNano's own references (`Refs #7`, its pull request, its check runs) still there.

from __future__ import annotations

import re
import shlex
import uuid
from typing import Any

from frognano.app.events.decisions import IssueRef, RunRequest
from frognano.app.status import status_marker
from frognano.app.status_comment import reply_marker
from tests.app import test_worker
from tests.app.test_followup_job import BRANCH, command, doc_turns
from tests.app.test_worker import FIX, REPO, World
from tests.fakes.github import Recorded
from tests.fakes.model_server import ScriptedModelServer, Turn
from tests.gfm import ATTACKS, live, render

fake, world = test_worker.fake, test_worker.world  # the fixtures

FLOOD = "\n".join(ATTACKS.values())
INLINE = " ".join(ATTACKS.values())
SAYS = " ".join(value for name, value in ATTACKS.items() if name != "controls")
TITLE = "mean([]) crashes " + " ".join(
    ATTACKS[name]
    for name in ("image", "link", "entity mention", "fullwidth mention", "zero-width mention",
                 "closes", "fixes cross-repo", "repo ref", "bare url", "www", "email")
)  # fmt: skip
BODY = f"It should raise ValueError.\n\n{FLOOD}"
HOSTILE_BRANCH = "x`[y](https://evil.example/b)`@admin#1<img>"
HOSTILE_LABEL = "frognano:evil`![l](https://evil.example/l.png)`@admin"


def hostile_fix() -> list[Turn]:
    """FIX, with the attacks in the reasoning, a tool call's command and output, and the
    final summary."""
    read, edit, _answer = FIX
    say = Turn(calls=[("Bash", {"command": f"printf '%s\\n' {shlex.quote(SAYS)}"})])
    return [
        Turn(reasoning=FLOOD, calls=read.calls),
        say,
        edit,
        Turn(reasoning=FLOOD, content=f"mean([]) now raises ValueError.\n\n{FLOOD}"),
    ]


def hostile_doc() -> list[Turn]:
    *work, _answer = doc_turns()
    return [*work, Turn(content=f"Documented mean().\n\n{FLOOD}")]


def request(world: World, label: str = "frognano") -> RunRequest:
    issue = IssueRef(installation_id=100, repo=REPO, repo_id=world.repo_id, number=7)
    return RunRequest(issue, f"d-{uuid.uuid4()}", "alice", label, TITLE, BODY)


def written(world: World) -> list[tuple[str, str, Any]]:
    """(what, field, text) for every text FrogNano sent GitHub, in order."""
    out: list[tuple[str, str, Any]] = []
    for req in world.fake.requests:
        if req.method not in ("POST", "PATCH") or not isinstance(req.json, dict):
            continue
        out += _fields(req)
    return out


def _fields(req: Recorded) -> list[tuple[str, str, Any]]:
    path, data = req.path, req.json
    if re.search(r"/issues/(\d+/)?comments", path):
        return [("comment", "body", data.get("body"))]
    if re.search(r"/pulls(/\d+)?$", path):
        return [("pull", key, data[key]) for key in ("title", "body") if key in data]
    if re.search(r"/check-runs", path) and "output" in data:
        return [("check", key, data["output"].get(key)) for key in ("title", "summary", "text")]
    if path.endswith("/git/commits"):
        return [("commit", "message", data.get("message"))]
    return []


async def test_nothing_untrusted_renders_live_anywhere_frognano_writes(world: World) -> None:
    repo = world.fake.repo(REPO)
    repo.issues[7]["title"], repo.issues[7]["body"] = TITLE, BODY
    with ScriptedModelServer(hostile_fix() + hostile_doc()) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(request(world)) == "queued"
        assert await world.submit(request(world, HOSTILE_LABEL)) == "already_running"
        await world.work()
        (pull,) = repo.pulls.values()
        number = int(pull["number"])
        # The issue's author edits it after the label: the round's writer is told what changed.
        repo.issues[7]["title"] = TITLE + " (edited)"
        repo.issues[7]["body"] = BODY + "\n\nedited: " + INLINE
        await command(world, number, f"/frognano document it {SAYS}", commenter="bob")
        await world.work()
        assert await world.submit(world.command(f"base={HOSTILE_BRANCH}")) == "queued"
        assert await world.submit(world.command("@admin ![x](https://evil.example/u.png)")) == (
            "queued"
        )
        await world.work()
    assert len(model.requests) == len(hostile_fix()) + len(hostile_doc())
    pull_url = f"https://github.com/{REPO}/pull/{number}"
    stories = [f"{pull_url}/checks?check_run_id={run_id}" for run_id in repo.check_runs]
    texts = written(world)
    kinds = {(what, field) for what, field, _ in texts}
    assert kinds >= {("comment", "body"), ("pull", "title"), ("pull", "body"),
                     ("check", "title"), ("check", "summary"), ("check", "text"),
                     ("commit", "message")}  # fmt: skip
    status_versions = replies = 0
    leaks: list[str] = []
    for what, field, text in texts:
        if text is None:
            continue
        assert isinstance(text, str)
        own: list[str] = []
        hrefs: list[str] = []
        html, logins = 0, ("alice", "bob")
        if what == "comment" and text.startswith(status_marker(7)):
            status_versions += 1
            html = 1 + 2 * text.count("<sub>")
            if "opened a draft pull request" in text:
                own, hrefs = [f"#{number}"], [pull_url, *stories]
            elif "added a commit" in text:
                hrefs = [pull_url, *stories]
        elif what == "comment":
            replies += 1
            assert text.startswith(reply_marker("")[: -len(" -->")])
            html = 1
            own = ["#7"] if "has changed since" in text else []
        elif what == "pull":
            own = ["#7"] if field == "title" else ["Refs #7"]
        elif what == "commit":
            own = ["#7"]
            hrefs = [f"mailto:{login}@users.noreply.github.com" for login in ("alice", "bob")
                     if f"<{login}@users" in text]  # fmt: skip
        leaks += [f"{what} {field}: {finding}" for finding in
                  live(text, own=own, hrefs=hrefs, html=html, logins=logins)]  # fmt: skip
    unique = list(dict.fromkeys(leaks))
    assert not unique, "\n".join(unique)
    assert status_versions >= 4  # queued, working, published, the follow-up's
    published = [t for what, _, t in texts if what == "comment" and "opened a draft" in (t or "")]
    page = render(published[-1])
    assert f'<a href="{pull_url}">' in page  # FrogNano's own links still work
    assert re.search(rf'<a href="{re.escape(pull_url)}/checks\?check_run_id=\d+">', page)
    assert replies >= 3  # what changed, the refused base, the unknown command
    # FrogNano's own words and links are still there, and the attacks are still readable.
    body = repo.issues[number]["body"]
    assert body.rstrip().endswith("Refs #7")
    assert "evil.example/pixel.png?d=SECRET" in body  # shown, as code
    assert repo.branch_sha(BRANCH) is not None
