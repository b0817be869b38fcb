"""Through the worker: a repository's symlinks that lead outside it are left out (and said so),
an archive the repository's content refuses says why, and nothing the App writes on GitHub
shows a host path of the worker."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
import uuid
from pathlib import Path

from frognano.agent.trajectory import read_events
from frognano.app.review import VERIFICATION_CHECK
from frognano.app.status import Published, TreeRefused, status_marker
from frognano.app.texts import left_out_line
from frognano.github.client import RepoClient
from frognano.github.models import FileChange
from frognano.github.retry import Transport
from frognano.run.report import LeftOutLinkRecord
from frognano.sandbox.pyenv import SYSTEM_DIRS
from tests.app import test_worker
from tests.app.test_followup_job import command, first_run
from tests.app.test_worker import FIX, REPO, World, checks
from tests.fakes.model_server import ScriptedModelServer, Turn

fake, world = test_worker.fake, test_worker.world  # the fixtures
LINKS = [
    FileChange("AGENTS.md", "120000", b"/etc/passwd"),
    FileChange("docs/x", "120000", b"../../.."),
]
PASSWD = Path("/etc/passwd").read_text(encoding="utf-8").splitlines()[0]


async def on_main(world: World, changes: list[FileChange]) -> str:
    """A human's commit of `changes` on main, through the Git Data API; its sha."""
    transport = Transport(base_url=world.fake.base_url, seconds_between_requests=0,
                          seconds_between_writes=0, timeout=10)  # fmt: skip
    human = RepoClient(REPO, world.fake.add_user_token("bob"), transport=transport)
    try:
        _main, head = await human.default_branch()
        sha = await human.create_commit(head, changes, "links and tests")
        await human.fast_forward("main", sha)
    finally:
        human.close()
    return sha


def use_model(world: World, model: ScriptedModelServer) -> None:
    world.deps.settings = world.deps.settings.model_copy(update={"model_base_url": model.base_url})


def status_of(world: World) -> str:
    (status,) = [c for c in world.fake.repo(REPO).comments(7)
                 if c["body"].startswith(status_marker(7))]  # fmt: skip
    return str(status["body"])


# -- problem 1: links leading outside the repository -------------------------------------------


async def test_links_leading_outside_are_left_out_and_the_run_publishes(world: World) -> None:
    await on_main(world, LINKS)
    with ScriptedModelServer(FIX) as model:
        use_model(world, model)
        assert await world.submit(world.request()) == "queued"
        await world.work()
    repo = world.fake.repo(REPO)
    (pull,) = repo.pulls.values()
    body = repo.issues[int(pull["number"])]["body"]
    named = ("`AGENTS.md` to `/etc/passwd`", "`docs/x` to `../../..`")
    for text in named:
        assert text in body
    assert (
        "- Instructions for the agent: `AGENTS.md` skipped: it is a symbolic link leading "
        "outside the repository, which FrogNano left out of the tree"
    ) in body
    status = status_of(world)
    assert f"/pull/{pull['number']}" in status
    assert "internal error" not in status
    for text in named:
        assert text in status
    head = repo.branch_sha("frognano/issue-7")
    assert head is not None
    assert named[0] in checks(world.fake, head)[VERIFICATION_CHECK]["output"]["summary"]
    # The published commit is the verified diff on the base: the links are still there.
    files = world.fake.files_at(REPO, head)
    assert files["AGENTS.md"] == ("120000", b"/etc/passwd")
    assert files["docs/x"] == ("120000", b"../../..")
    (report,) = world.deps.settings.trajectory_dir.glob("*/attempt-1/report.md")
    assert (
        "- Left out of the tree (symbolic links leading outside the repository): `AGENTS.md` "
        "-> `/etc/passwd`, `docs/x` -> `../../..`\n"
    ) in report.read_text()
    # The agent never saw what the link points at.
    first_message = model.requests[0]["messages"][1]["content"]
    assert "AGENTS.md" not in first_message
    assert all(PASSWD not in str(request) for request in model.requests)


async def test_a_patch_writing_at_a_left_out_link_is_blocked(world: World) -> None:
    await on_main(world, LINKS)
    write = Turn(calls=[("Write", {"file_path": "/workspace/AGENTS.md",
                                   "content": "Skip the tests.\n"})])  # fmt: skip
    with ScriptedModelServer([write, *FIX]) as model:
        use_model(world, model)
        assert await world.submit(world.request()) == "queued"
        await world.work()
    repo = world.fake.repo(REPO)
    assert repo.pulls == {}
    assert repo.branch_sha("frognano/issue-7") is None
    status = status_of(world)
    assert "**FrogNano opened no pull request.**" in status
    assert "The gate blocked the patch:" in status
    assert (
        "- **block** left_out_link `AGENTS.md`: the patch writes AGENTS.md where the "
        "repository has a symbolic link leading outside it"
    ) in status
    assert "`AGENTS.md` to `/etc/passwd`" in status


async def test_a_follow_up_writing_below_a_left_out_link_adds_no_commit(world: World) -> None:
    await on_main(world, LINKS)
    below = Turn(calls=[("Write", {"file_path": "/workspace/docs/x/notes.md",
                                   "content": "notes\n"})])  # fmt: skip
    with ScriptedModelServer([*FIX, below, Turn(content="Wrote notes.")]) as model:
        use_model(world, model)
        pull = await first_run(world)
        first = world.fake.repo(REPO).branch_sha("frognano/issue-7")
        await command(world, pull, "/frognano add notes")
        await world.work()
    assert world.fake.repo(REPO).branch_sha("frognano/issue-7") == first
    status = status_of(world)
    assert "**FrogNano added no commit to its pull request**" in status
    assert (
        "- **block** left_out_link `docs/x/notes.md`: the patch writes docs/x/notes.md, below "
        "docs/x, where the repository has a symbolic link leading outside it"
    ) in status
    assert "`docs/x` to `../../..`" in status


def hard_link_archive(top: str) -> bytes:
    """A gzipped tarball as GitHub's would look, but holding a hard link (`git archive`
    cannot make one) whose name tries a mention and a link."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        folder = tarfile.TarInfo(top)
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        data = b"x = 1\n"
        plain = tarfile.TarInfo(f"{top}/calc.py")
        plain.size = len(data)
        tar.addfile(plain, io.BytesIO(data))
        hard = tarfile.TarInfo(f"{top}/docs/@eve [x](javascript:alert)")
        hard.type, hard.linkname = tarfile.LNKTYPE, f"{top}/calc.py"
        tar.addfile(hard)
    return buffer.getvalue()


async def test_an_archive_the_repository_refuses_says_why_on_the_status_comment(
    world: World, tmp_path: Path
) -> None:
    sha = world.fake.repo(REPO).branch_sha("main")
    assert sha is not None
    world.fake.serve_tarball_once(REPO, sha, hard_link_archive(f"acme-calc-{sha[:7]}"))
    with ScriptedModelServer(FIX) as model:
        use_model(world, model)
        assert await world.submit(world.request()) == "queued"
        await world.work()
        assert model.requests == []
    assert world.fake.repo(REPO).pulls == {}
    assert world.deps.runs.labels(result="no_pull_request")._value.get() == 1
    status = status_of(world)
    assert "internal error" not in status
    assert (
        "**FrogNano could not use this repository's files**, and nothing was published: "
        "GitHub's archive of the base commit was refused because "
        "`docs/@\u200deve [x](javascript:alert)` is a hard link."
    ) in status
    assert str(tmp_path) not in status
    assert "/tmp/" not in status


def test_left_out_links_render_inert_and_capped() -> None:
    hostile: list[LeftOutLinkRecord] = [
        {"path": "docs/@eve `x`", "target": "/etc/<!-- hide -->\nfixes #1"}
    ]
    hostile += [{"path": f"l{n}", "target": "/"} for n in range(24)]
    line = left_out_line(hostile)
    assert line is not None
    assert line.startswith("- Symbolic links leading outside the repository, left out of the ")
    # The backticks stay, inside a longer delimiter; `<!--` and `#1` are defused in code too.
    target = "`/etc/<\u200d!-- hide --> f\u200dixes #\u200d1`"
    assert f"(25): `` docs/@\u200deve `x` `` to {target}" in line
    assert line.endswith("`l18` to `/` and 5 more")
    assert left_out_line([]) is None
    published = Published(url="https://github.com/acme/calc/pull/8", left_out=hostile[:1])
    assert "`` docs/@\u200deve `x` `` to" in published.text()
    assert "left out" not in Published(url="https://github.com/acme/calc/pull/8").text()


def test_a_refused_archive_without_a_member_names_the_limit() -> None:
    text = TreeRefused(why="the archive is empty", run_id="r1").text()
    assert "was refused because the archive is empty. Change that in the" in text
    assert text.endswith("<sub>Run `r1`</sub>")


# -- problem 2: no host path of the worker on GitHub ---------------------------------------------

# test_empty fails on the base with a message naming the sandbox's Python environment, which
# a local sandbox mounts at its host path (as a traceback through site-packages would).
LOUD_TESTS = b"""import sys

import pytest

from calc import mean


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_empty():
    try:
        mean([])
    except ValueError:
        return
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__} in {pytest.__file__}, {sys.base_prefix}")
"""
PRINT_PREFIXES = "python -c 'import sys; print(sys.prefix, sys.base_prefix)'"
WHERE = Turn(calls=[("Bash", {"command": PRINT_PREFIXES})])


async def test_nothing_published_names_a_host_path_of_the_worker(world: World) -> None:
    # A tree of its own, so the baseline is run here, never taken from the shared cache.
    tests = LOUD_TESTS + f"# {uuid.uuid4()}\n".encode()
    await on_main(world, [FileChange("tests/test_calc.py", "100644", tests)])
    with ScriptedModelServer([WHERE, *FIX]) as model:
        use_model(world, model)
        assert await world.submit(world.request()) == "queued"
        await world.work()
    repo = world.fake.repo(REPO)
    (pull,) = repo.pulls.values()
    head = repo.branch_sha("frognano/issue-7")
    assert head is not None
    check = checks(world.fake, head)[VERIFICATION_CHECK]["output"]
    body = repo.issues[int(pull["number"])]["body"]
    trajectories = world.deps.settings.trajectory_dir
    (kept,) = trajectories.glob("*/attempt-1/trajectory.jsonl")
    run_id = kept.parent.parent.name
    location = f"{run_id}/attempt-1/trajectory.jsonl"
    assert (trajectories / location).is_file()
    assert f"- Run id: `{run_id}`" in body
    assert f"- Trajectory: `{location}` on the worker, under `FROGNANO_TRAJECTORY_DIR`" in body
    # The sandbox's output and the agent's story name the environment by its placeholders.
    site = "/lib/python3.11/site-packages/pytest/__init__.py"
    assert f"ZeroDivisionError in <python>{site}, <python-base>" in check["text"]
    assert f"Bash   {PRINT_PREFIXES}  -> <python> <python-base>" in check["text"]
    host = [str(trajectories), sys.prefix, os.path.realpath(sys.prefix)]
    host += [base for base in (sys.base_prefix, os.path.realpath(sys.base_prefix))
             if not base.startswith(SYSTEM_DIRS)]  # fmt: skip
    published = [body, check["summary"], check["text"], status_of(world),
                 repo.commits[head]["message"]]  # fmt: skip
    for text in published:
        for path in host:
            assert path not in text
    # The trajectory keeps what the agent saw, and says which placeholder is which folder.
    events = read_events(kept).events
    assert f"{sys.prefix} {sys.base_prefix}" in str(events)
    assert [sys.prefix, "<python>"] in events[0]["sandbox"]["host_paths"]
    assert f"`<python>` is {sys.prefix}" in (kept.parent / "report.md").read_text()
    report = json.loads((kept.parent / "report.json").read_text())
    baseline = report["verification"]["baseline"]
    assert baseline["cached"] is False
    assert f"<python>{site}" in baseline["output"]
