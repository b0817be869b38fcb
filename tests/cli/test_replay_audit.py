"""The replay audit against forged recordings: each made from a real run recorded through
`frognano solve` with the scripted model server, then edited, then replayed."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from frognano.agent.trajectory import read_events
from tests.cli.test_solve import BUGGY, FIX, ISSUE, TESTS, environment, git, solve_argv
from tests.fakes.model_server import ScriptedModelServer

FORGED = "FORGED: 400 passed, coverage 100%"


class Recorded:
    """One real recorded run: its checkout, its issue file and its output folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = root / "project"
        self.issue = root / "ISSUE.md"
        self.out = root / "recorded"
        self.trajectory = self.out / "trajectory.jsonl"

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.trajectory.read_text().splitlines()]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    run = Recorded(tmp_path_factory.mktemp("recorded"))
    (run.repo / "tests").mkdir(parents=True)
    (run.repo / "calc.py").write_text(BUGGY)
    (run.repo / "tests" / "test_calc.py").write_text(TESTS)
    (run.repo / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    git(run.repo, "init", "-q")
    git(run.repo, "add", "-A")
    git(run.repo, "commit", "-qm", "base")
    run.issue.write_text(ISSUE)
    with ScriptedModelServer(FIX) as server:
        done = subprocess.run(
            solve_argv(run.repo, run.issue, run.out),
            env=environment(server, run.root), capture_output=True, text=True, timeout=180,
            check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return run


def forge(recorded: Recorded, where: Path, edit: Any) -> Path:
    """A copy of the recording, each event passed through `edit` (which changes it in place)."""
    where.mkdir(parents=True, exist_ok=True)
    events = recorded.lines()
    for event in events:
        edit(event)
    path = where / "trajectory.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    shutil.copy(recorded.out / "patch.diff", where / "patch.diff")
    return path


def replay(
    recorded: Recorded, trajectory: Path, out: Path, *, repo: Path | None = None,
    issue: Path | None = None, command: str = "trajectory",
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env.update(FROGNANO_MODEL_BASE_URL="http://127.0.0.1:9/v1", TMPDIR=str(recorded.root))
    env["FROGNANO_POLICY_DIR"] = str(recorded.root / "no-policies")  # as recorded
    env["FROGNANO_BASELINE_CACHE"] = "off"
    repo, issue = repo or recorded.repo, issue or recorded.issue
    if command == "trajectory":
        argv = ["trajectory", "replay", str(trajectory), str(repo), "--issue-file", str(issue)]
    else:
        argv = ["solve", str(repo), "--issue-file", str(issue), "--replay", str(trajectory)]
    return subprocess.run(
        [sys.executable, "-m", "frognano", *argv, "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def reports(out: Path) -> tuple[dict[str, Any], str]:
    return json.loads((out / "report.json").read_text()), (out / "report.md").read_text()


def assert_not_ready(out: Path, what: str) -> dict[str, Any]:
    report, markdown = reports(out)
    assert report["outcome"]["patch_ready"] is False
    assert report["outcome"]["reason"].startswith("the replay did not reproduce the recording")
    assert report["replay"]["reproduced"] is False
    assert report["replay"]["first_difference"]["what"] == what
    assert "Patch ready for review" not in markdown
    assert "## Replay" in markdown
    assert "The replay does NOT reproduce its recording" in markdown
    return report


def test_the_recording_names_its_inputs_by_digest(recorded: Recorded) -> None:
    info = recorded.lines()[0]
    assert info["event"] == "run_info"
    for key in ("task_sha256", "base_tree_sha256", "policy_sha256"):
        assert re.fullmatch(r"[0-9a-f]{64}", info[key]), key
    assert info["frognano"]
    assert info["environment_key"] is None  # no package index: no environment phase


def test_the_untouched_recording_reproduces(recorded: Recorded, tmp_path: Path) -> None:
    done = replay(recorded, recorded.trajectory, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "The replay REPRODUCES its recording" in done.stderr
    report, markdown = reports(tmp_path / "out")
    assert report["outcome"]["patch_ready"] is True
    record = report["replay"]
    assert record["reproduced"] is True
    assert record["first_difference"] is None
    checks = record["checks"]
    for name in ("task", "base_tree", "policy", "frognano", "steps", "patch"):
        assert checks[name]["status"] == "same", name
    assert checks["steps"]["recorded"] == checks["steps"]["replayed"] == "4"
    assert markdown.startswith(f"# FrogNano run {report['run_id']}\n\n**Patch ready for review")
    assert "The replay REPRODUCES its recording" in markdown


def test_another_issues_text_is_refused_before_the_agent_runs(
    recorded: Recorded, tmp_path: Path
) -> None:
    other = tmp_path / "OTHER.md"
    other.write_text("# add() is slow\n\nMake add() faster.\n")
    done = replay(recorded, recorded.trajectory, tmp_path / "out", issue=other)
    assert done.returncode == 1
    assert "does NOT reproduce" in done.stderr
    assert "the task (the issue's title and body) differs: recorded sha256" in done.stderr
    report = assert_not_ready(tmp_path / "out", "task")
    assert report["stop_reason"] is None  # the agent never ran
    assert report["replay"]["checks"]["task"]["status"] == "differs"


def test_a_digest_edited_to_match_another_issue_still_diverges(
    recorded: Recorded, tmp_path: Path
) -> None:
    """The recording's own first message is compared too: a forged task digest does not
    make another issue's text pass for the recorded one."""
    other = tmp_path / "OTHER.md"
    other.write_text("# add() is slow\n\nMake add() faster.\n")

    def edit(event: dict[str, Any]) -> None:
        if event["event"] == "run_info":
            # docs/agent.md: sha256 of the title, a NUL byte and the body
            event["task_sha256"] = hashlib.sha256(b"add() is slow\0Make add() faster.").hexdigest()

    forged = forge(recorded, tmp_path / "forged", edit)
    done = replay(recorded, forged, tmp_path / "out", issue=other)
    assert done.returncode == 1
    assert "diverged at the start of the run: the first message" in done.stderr
    assert "+Title: add() is slow" in done.stderr  # both versions, as a diff
    report = assert_not_ready(tmp_path / "out", "task")
    assert report["replay"]["checks"]["task"]["status"] == "same"  # the forged digest


def test_a_different_base_commit_is_refused(recorded: Recorded, tmp_path: Path) -> None:
    changed = tmp_path / "project"
    shutil.copytree(recorded.repo, changed)
    (changed / "tests" / "test_more.py").write_text("def test_more():\n    assert True\n")
    git(changed, "add", "-A")
    git(changed, "commit", "-qm", "a later commit")
    done = replay(recorded, recorded.trajectory, tmp_path / "out", repo=changed)
    assert done.returncode == 1
    assert "the repository's base tree differs: recorded sha256" in done.stderr
    assert_not_ready(tmp_path / "out", "base_tree")


def test_a_forged_bash_result_diverges_at_its_step(recorded: Recorded, tmp_path: Path) -> None:
    def edit(event: dict[str, Any]) -> None:
        if event["event"] == "tool" and event["name"] == "Bash":
            event["result"] = FORGED

    forged = forge(recorded, tmp_path / "forged", edit)
    done = replay(recorded, forged, tmp_path / "out")
    assert done.returncode == 1
    assert "diverged at step 4 (Bash call" in done.stderr
    assert "the tool's result differs from the recording's" in done.stderr
    assert f"-{FORGED}" in done.stderr  # the recorded version
    assert re.search(r"^\+\d+ passed in <seconds>s$", done.stderr, re.M)  # the replayed one
    report = assert_not_ready(tmp_path / "out", "result")
    difference = report["replay"]["first_difference"]
    assert difference["step"] == 4
    assert difference["tool"] == "Bash"
    assert difference["recorded"] == FORGED
    assert "2 passed" in difference["replayed"]
    assert report["verification"] is None  # stopped at the first difference
    shown = subprocess.run(
        [sys.executable, "-m", "frognano", "trajectory", "show",
         str(tmp_path / "out" / "trajectory.jsonl")],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "    replay: did NOT reproduce: the replay diverged at step 4 (Bash call" in shown
    assert re.search(r"    inputs \(sha256\): task [0-9a-f]{12}, base tree [0-9a-f]{12}, "
                     r"policy [0-9a-f]{12}", shown)  # fmt: skip


def test_solve_replay_with_an_edited_tool_call_says_it_diverged(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(event: dict[str, Any]) -> None:
        if event["event"] == "assistant":
            for call in event.get("tool_calls") or []:
                if call["name"] == "Bash":
                    call["arguments"] = call["arguments"].replace("pytest -q", "pytest -q -x")

    forged = forge(recorded, tmp_path / "forged", edit)
    done = replay(recorded, forged, tmp_path / "out", command="solve")
    assert done.returncode == 1
    assert "error: the replay did not reproduce the recording: the replay diverged" in done.stderr
    assert "diverged at step 4 (Bash call" in done.stderr
    assert "the call's arguments differ from the recording's" in done.stderr
    report = assert_not_ready(tmp_path / "out", "arguments")
    assert "pytest -q -x" in report["replay"]["first_difference"]["replayed"]


def test_timing_only_differences_are_normalised_and_named(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(event: dict[str, Any]) -> None:
        if event["event"] == "tool" and event["name"] == "Bash":
            event["result"] = re.sub(r" in \d+\.\d+s", " in 97.31s", event["result"])
            event["duration"] = 97.31

    forged = forge(recorded, tmp_path / "forged", edit)
    bash = [e for e in read_events(forged).events if e.get("name") == "Bash" and "result" in e]
    assert " in 97.31s" in bash[0]["result"]
    done = replay(recorded, forged, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^Normalised \(inherently variable, see docs/agent.md\): .*test-durations",
                     done.stderr, re.M)  # fmt: skip
    report, _ = reports(tmp_path / "out")
    assert report["replay"]["reproduced"] is True
    assert "test-durations" in report["replay"]["normalisations"]


def test_a_digest_taken_out_of_the_recording_is_named_not_passed_over(
    recorded: Recorded, tmp_path: Path
) -> None:
    def edit(event: dict[str, Any]) -> None:
        if event["event"] == "run_info":
            del event["base_tree_sha256"]

    forged = forge(recorded, tmp_path / "forged", edit)
    done = replay(recorded, forged, tmp_path / "out")
    assert "its base tree were NOT checked (not recorded)" in done.stderr
    assert "the recording lacks the digest of the base tree" in done.stderr
    report, markdown = reports(tmp_path / "out")
    assert report["replay"]["checks"]["base_tree"]["status"] == "not recorded"
    assert "the recording lacks the digest of the base tree" in markdown
