"""`frognano solve` as a user runs it: a real process, a scripted model server, a real sandbox."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from frognano.agent.prompts import FORMAT_REMINDER
from frognano.agent.trajectory import read_events
from tests.conftest import processes_with, wait_until
from tests.fakes.model_server import MODEL_PATH, ScriptedModelServer, Turn

BUGGY = "def mean(xs):\n    return sum(xs) / len(xs)\n"
TESTS = (
    "import pytest\n\nfrom calc import mean\n\n\n"
    "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
    "def test_empty():\n    with pytest.raises(ValueError):\n        mean([])\n"
)
ISSUE = "# mean([]) crashes\n\nmean([]) raises ZeroDivisionError instead of ValueError.\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(BUGGY)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "ORIGINAL-COMMIT")
    return root


@pytest.fixture
def issue(tmp_path: Path) -> Path:
    path = tmp_path / "ISSUE.md"
    path.write_text(ISSUE)
    return path


def solve_argv(repo: Path, issue: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "frognano", "solve", str(repo), "--issue-file", str(issue),
            "--out", str(out), *extra]  # fmt: skip


def environment(server: ScriptedModelServer, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env["FROGNANO_MODEL_BASE_URL"] = server.base_url
    env["FROGNANO_LOG_LEVEL"] = "WARNING"
    env["FROGNANO_POLICY_DIR"] = str(tmp_path / "no-policies")  # the built-in defaults
    sandboxes = tmp_path / "sandboxes"
    sandboxes.mkdir(exist_ok=True)
    env["TMPDIR"] = str(sandboxes)
    return env


FIX = [
    Turn(reasoning="Where is mean?", calls=[("Glob", {"pattern": "**/*.py"})]),
    Turn(reasoning="Read it.", calls=[("Read", {"file_path": "/workspace/calc.py"})]),
    Turn(reasoning="Add the guard.", content="The empty list divides by zero.", calls=[("Edit", {
        "file_path": "/workspace/calc.py",
        "old_string": "    return sum(xs) / len(xs)\n",
        "new_string": "    if not xs:\n        raise ValueError(\"mean() of an empty list\")\n"
                      "    return sum(xs) / len(xs)\n",
    })]),
    Turn(reasoning="Test.", calls=[("Bash", {"command": "python -m pytest -q", "timeout": 60000})]),
    Turn(reasoning="All green.", content="mean([]) now raises ValueError; the tests pass."),
]  # fmt: skip


def test_solve_end_to_end(repo: Path, issue: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ScriptedModelServer(FIX) as server:
        done = subprocess.run(
            solve_argv(repo, issue, out),
            env=environment(server, tmp_path),
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        requests = server.requests
    assert done.returncode == 0, done.stderr
    assert "Patch ready for review: 1 file(s), +2 -0; tests: 2 passed" in done.stdout
    assert "1 of the 1 test(s) that fail on the base pass with the patch, and none broke" in (
        done.stdout
    )
    patch = (out / "patch.diff").read_text()
    assert "+++ b/calc.py" in patch
    assert '+        raise ValueError("mean() of an empty list")' in patch
    assert "__pycache__" not in patch
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert report["outcome"]["patch_ready"] is True
    assert report["outcome"]["reason"].startswith("the gate passed and verification held")
    assert report["repo"] == "local/project"
    assert report["policy"]["source"].startswith("built-in defaults")
    assert report["stop_reason"] == "completed"
    assert report["summary"] == "mean([]) now raises ValueError; the tests pass."
    assert report["issue_title"] == "mean([]) crashes"
    assert report["steps"] == 5
    assert report["tool_calls"] == 4
    assert report["patch"]["files"] == ["calc.py"]
    after = report["verification"]["verification"]
    assert after["passed"] is True
    assert after["summary"].startswith("2 passed")
    assert report["verification"]["comparison"]["fixed"] == ["tests/test_calc.py::test_empty"]
    assert report["tokens"]["prompt"] > 0
    assert report["tokens"]["cached"] > 0
    assert report["sandbox"]["backend"] == "local"
    assert "**Patch ready for review:**" in (out / "report.md").read_text()
    # The user's checkout is untouched.
    assert (repo / "calc.py").read_text() == BUGGY
    events = read_events(out / "trajectory.jsonl")
    assert not events.damaged_lines
    kinds = [event["event"] for event in events.events]
    assert kinds[:2] == ["run_info", "run_start"]
    assert kinds[-1] == "run_end"
    # The run names its model: the name asked for, what the server said it serves, and the
    # `model` of each reply.
    named = events.events[0]["model"]
    assert (named["kind"], named["name"]) == ("server", "frognano")
    assert named["served"]["id"] == "frognano"
    assert named["model_info"]["model_path"] == MODEL_PATH
    assert {e["model"] for e in events.events if e["event"] == "assistant"} == {"frognano"}
    assert [e["name"] for e in events.events if e["event"] == "tool"] == [
        "Glob", "Read", "Edit", "Bash",
    ]  # fmt: skip
    # The issue text arrived as the task, between the markers; no AGENTS.md, so nothing else.
    assert "Title: mean([]) crashes" in requests[0]["messages"][1]["content"]
    assert "GUIDANCE" not in requests[0]["messages"][1]["content"]
    assert report["instructions"] == {
        "policy_text_bytes": 0,
        "files": [{"path": "AGENTS.md", "status": "absent", "bytes": 0, "size": None,
                   "cut": False, "reason": None}],
    }  # fmt: skip
    shown = subprocess.run(
        [sys.executable, "-m", "frognano", "trajectory", "show", str(out / "trajectory.jsonl")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "step 3: Edit in " in shown.stdout
    assert "run ended: completed after 5 steps" in shown.stdout
    # The run folder's report and patch are beside the trajectory: the verdict and the diff.
    assert shown.stdout.startswith(f"run {events.events[0]['run_id']} with model frognano\n")
    assert f"    identity: model_path {MODEL_PATH}" in shown.stdout
    assert "    verdict: patch ready for review: the gate passed" in shown.stdout
    assert "        +        raise ValueError(" in shown.stdout  # the Edit call, as a diff
    assert shown.stdout.endswith(_indented(patch))
    page = tmp_path / "run.html"
    subprocess.run(
        [sys.executable, "-m", "frognano", "trajectory", "show", str(out / "trajectory.jsonl"),
         "--format", "html", "--out", str(page)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    html = page.read_text()
    assert html.startswith("<!doctype html>")
    assert "<details><summary>reasoning</summary><pre>Add the guard.</pre></details>" in html
    assert "Step 3: <code>Edit</code> returned" in html
    assert "Run ended: <code>completed</code> after 5 steps" in html
    assert " with model frognano</title>" in html
    assert '<td class="ready">patch ready for review: the gate passed' in html
    assert "<h2>The patch</h2>" in html
    assert "http://" not in html  # self-contained: nothing is fetched
    assert "https://" not in html


def _indented(text: str) -> str:
    return "".join("    " + line + "\n" for line in text.splitlines())


def test_the_report_counts_the_format_reminders_sent(
    repo: Path, issue: Path, tmp_path: Path
) -> None:
    """Three empty replies end the run as no_answer; only the first two got a reminder."""
    out = tmp_path / "out"
    with ScriptedModelServer([Turn(content="\n\n")] * 3) as server:
        subprocess.run(
            solve_argv(repo, issue, out),
            env=environment(server, tmp_path),
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        requests = server.requests
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert report["stop_reason"] == "no_answer"
    assert len(requests) == 3
    reminders = [
        m for m in requests[-1]["messages"] if m == {"role": "user", "content": FORMAT_REMINDER}
    ]
    assert len(reminders) == 2
    assert report["format_reminders"] == len(reminders)


def test_the_agent_sees_no_history_and_no_credentials(
    repo: Path, issue: Path, tmp_path: Path
) -> None:
    (repo / "calc.py").write_text("# the fix lives here\n" + BUGGY)
    git(repo, "commit", "-qam", "SECRET-FUTURE-FIX")
    git(repo, "reset", "-q", "--hard", "HEAD~1")  # the future commit stays in the object store
    script = [
        Turn(calls=[("Bash", {"command": "git log --all --oneline; git reflog; ls -a; env"})]),
        Turn(content="Nothing to do."),
    ]
    out = tmp_path / "out"
    with ScriptedModelServer(script) as server:
        env = environment(server, tmp_path)
        env["FROGNANO_MODEL_API_KEY"] = "sk-model-key-never-in-the-sandbox"
        done = subprocess.run(
            solve_argv(repo, issue, out),
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        headers = server.request_headers
    assert done.returncode == 1
    assert "no patch: the agent finished without changing any file" in done.stderr
    events = read_events(out / "trajectory.jsonl").events
    seen = next(e["result"] for e in events if e["event"] == "tool")
    assert "FrogNano baseline" in seen
    assert "SECRET-FUTURE-FIX" not in seen
    assert "ORIGINAL-COMMIT" not in seen
    assert "HOME=" in seen  # `env` ran
    assert "sk-model-key" not in seen
    assert "FROGNANO" not in seen
    # The key did reach the model server, from the host.
    assert headers[0]["authorization"] == "Bearer sk-model-key-never-in-the-sandbox"


def test_a_committed_venv_chooses_no_mount(repo: Path, issue: Path, tmp_path: Path) -> None:
    """The attack: the repository commits `.venv/pyvenv.cfg` naming a host folder as the
    interpreter's home, then reads that folder from the sandbox. Neither solve's default nor
    `--repo-venv` mounts it."""
    secret = tmp_path / "host-secrets"
    (secret / "bin").mkdir(parents=True)
    (secret / "token").write_text("HOST-SECRET-TOKEN\n")
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").write_text("#!/bin/sh\n")
    (repo / ".venv" / "pyvenv.cfg").write_text(f"home = {secret}/bin\n")
    git(repo, "add", "-A", "-f")
    git(repo, "commit", "-qm", "a venv")
    script = [
        Turn(calls=[("Bash", {"command": f"cat {secret}/token; ls {secret}"})]),
        Turn(content="Nothing to do."),
    ]
    out = tmp_path / "out"
    with ScriptedModelServer(script) as server:
        env = environment(server, tmp_path)
        done = subprocess.run(
            solve_argv(repo, issue, out), env=env, check=False, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        asked = subprocess.run(
            solve_argv(repo, issue, tmp_path / "out2", "--repo-venv"), env=env, check=False,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    events = read_events(out / "trajectory.jsonl").events
    seen = next(e["result"] for e in events if e["event"] == "tool")
    assert "HOST-SECRET-TOKEN" not in seen
    assert "No such file or directory" in seen
    assert asked.returncode == 2, asked.stderr
    assert "points outside itself" in asked.stderr
    assert "--python-env" in asked.stderr


def test_bad_configuration_exits_2(repo: Path, issue: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with ScriptedModelServer() as server:
        env = environment(server, tmp_path)
        done = subprocess.run(
            solve_argv(plain, issue, tmp_path / "o1"),
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2
        assert "is not inside a git checkout" in done.stderr
        env["FROGNANO_MODEL_NAME"] = "other"
        done = subprocess.run(
            solve_argv(repo, issue, tmp_path / "o2"),
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    assert done.returncode == 1
    assert "does not serve a model named 'other'" in done.stderr
    assert "FROGNANO_MODEL_NAME" in done.stderr


def test_no_model_server_fails_at_once_naming_the_fix(
    repo: Path, issue: Path, tmp_path: Path
) -> None:
    """First contact: nothing listens at the model URL. One attempt, no retry warnings, one
    line naming the setting and `frognano model check`, and only files that exist named."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # closed again: nothing listens there
    with ScriptedModelServer() as server:
        env = environment(server, tmp_path)
    env["FROGNANO_LOG_LEVEL"] = "INFO"
    out = tmp_path / "out"
    done = subprocess.run(
        solve_argv(repo, issue, out, "--model-url", f"http://127.0.0.1:{port}/v1"),
        env=env, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "model.retry" not in done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1, done.stderr
    assert f"no model server answers at http://127.0.0.1:{port}/v1" in error[0]
    assert "FROGNANO_MODEL_BASE_URL" in error[0]
    assert "`frognano model check`" in error[0]
    listed = done.stderr.split(f"Results in {out}/ (")[1].split(")")[0].split(", ")
    assert listed
    assert all((out / name).is_file() for name in listed)
    assert "trajectory.jsonl" not in listed  # no model turn, so none was written
    report = (out / "report.md").read_text()
    assert "- Stop reason: none, the agent never ran (no model server answers" in report
    assert "`None`" not in report


def test_model_url_and_model_options_override_the_settings(
    repo: Path, issue: Path, tmp_path: Path
) -> None:
    script = [Turn(content="Nothing to do.")]
    with ScriptedModelServer(script, model="served-name") as server:
        env = environment(server, tmp_path)
        env["FROGNANO_MODEL_BASE_URL"] = "http://127.0.0.1:9/v1"  # wrong: the option wins
        done = subprocess.run(
            solve_argv(repo, issue, tmp_path / "out", "--model-url", server.base_url,
                       "--model", "served-name"),
            env=env, capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        asked = [body["model"] for body in server.requests]
    assert done.returncode == 1, done.stderr
    assert "the agent finished without changing any file" in done.stderr
    assert asked
    assert set(asked) == {"served-name"}
    bad = subprocess.run(
        solve_argv(repo, issue, tmp_path / "out2", "--model-url", "ftp://example"),
        env=env, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "invalid --model-url or --model: " in bad.stderr
    assert "http:// or https://" in bad.stderr


def test_a_bad_option_is_refused_before_anything_is_contacted(
    repo: Path, issue: Path, tmp_path: Path
) -> None:
    with ScriptedModelServer([Turn(content="unused")]) as server:
        done = subprocess.run(
            solve_argv(repo, issue, tmp_path / "out", "--sandbox", "docker"),
            env=environment(server, tmp_path), capture_output=True, text=True, check=False,
            timeout=60,
        )  # fmt: skip
        contacted = list(server.requests)
    assert done.returncode == 2
    said = " ".join(done.stderr.replace("│", " ").split())  # rich boxes and wraps it
    assert "'docker' is not one of 'local', 'kubernetes'" in said
    assert contacted == []
    assert not (tmp_path / "out").exists()


def _start_slow_run(
    server: ScriptedModelServer, repo: Path, issue: Path, tmp_path: Path, marker: str
) -> tuple[subprocess.Popen[str], Path]:
    server.push(Turn(calls=[("Bash", {"command": f"sleep {marker}", "timeout": 600000})]))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        solve_argv(repo, issue, out),
        env=environment(server, tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_until(lambda: bool(processes_with(f"sleep {marker}")), within=60), (
        "the agent's command never started"
    )
    return proc, out


def test_a_killed_run_leaves_a_readable_trajectory_and_no_processes(
    repo: Path, issue: Path, tmp_path: Path
) -> None:
    marker = "61.2345"
    with ScriptedModelServer() as server:
        proc, out = _start_slow_run(server, repo, issue, tmp_path, marker)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert wait_until(lambda: not processes_with(f"sleep {marker}"), within=15)
    events = read_events(out / "trajectory.jsonl")
    assert not events.damaged_lines
    assert [e["event"] for e in events.events][-2:] == ["request", "assistant"]


def test_ctrl_c_stops_cleanly_and_still_reports(repo: Path, issue: Path, tmp_path: Path) -> None:
    marker = "62.3456"
    with ScriptedModelServer() as server:
        proc, out = _start_slow_run(server, repo, issue, tmp_path, marker)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert time.monotonic() - started < 20
    assert not processes_with(f"sleep {marker}")
    report = json.loads((out / "report.json").read_text())
    assert report["stop_reason"] == "cancelled"
    assert report["outcome"]["patch_ready"] is False
    assert read_events(out / "trajectory.jsonl").events[-1]["stop_reason"] == "cancelled"
    assert not list((tmp_path / "sandboxes").iterdir())


RECORDING = Path(__file__).resolve().parents[2] / "examples" / "recordings" / "calculator"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calculator"


def test_the_readmes_first_command_replays_the_recorded_run(tmp_path: Path) -> None:
    """No model server, no GPU: the shipped recording plays back, the tools and tests run,
    and the audit says the patch comes out byte for byte the same."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env.update(FROGNANO_MODEL_BASE_URL="http://127.0.0.1:9/v1", TMPDIR=str(tmp_path))
    env["FROGNANO_BASELINE_CACHE"] = "off"
    issue = str(EXAMPLE / "ISSUE.md")
    solved = subprocess.run(
        [sys.executable, "-m", "frognano", "solve", str(EXAMPLE), "--issue-file", issue,
         "--replay", str(RECORDING / "trajectory.jsonl"), "--out", str(tmp_path / "a")],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert solved.returncode == 0, solved.stderr
    assert "Replaying 5 recorded model turns" in solved.stderr
    assert "Patch ready for review: 1 file(s), +2 -0" in solved.stdout
    info = read_events(tmp_path / "a" / "trajectory.jsonl").events[0]
    assert info["model"] == {
        "kind": "replay",
        "replay_of": {"trajectory": str((RECORDING / "trajectory.jsonl").resolve()),
                      "run_id": "20261201-192619-7a113d", "model": None},
    }  # fmt: skip
    audit = subprocess.run(
        [sys.executable, "-m", "frognano", "trajectory", "replay",
         str(RECORDING / "trajectory.jsonl"), str(EXAMPLE), "--issue-file", issue,
         "--out", str(tmp_path / "b")],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert audit.returncode == 0, audit.stderr
    assert "reproduces" in audit.stderr
    # Recorded before run_info named its inputs by digest: said, not passed over in silence.
    assert "The replay REPRODUCES the steps and patch of its recording" in audit.stderr
    assert "were NOT checked (not recorded)" in audit.stderr
    assert "byte for byte" in audit.stderr
    assert (tmp_path / "b" / "patch.diff").read_bytes() == (RECORDING / "patch.diff").read_bytes()
    other = tmp_path / "other.diff"
    other.write_bytes((RECORDING / "patch.diff").read_bytes().replace(b"empty list", b"nothing"))
    differs = subprocess.run(
        [sys.executable, "-m", "frognano", "trajectory", "replay",
         str(RECORDING / "trajectory.jsonl"), str(EXAMPLE), "--issue-file", issue,
         "--patch", str(other), "--out", str(tmp_path / "c")],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert differs.returncode == 1
    assert f"does NOT reproduce {other}" in differs.stderr


def test_a_replay_that_runs_past_the_recording_says_so(tmp_path: Path) -> None:
    short = tmp_path / "trajectory.jsonl"
    lines = (RECORDING / "trajectory.jsonl").read_text().splitlines()
    kept, seen = [], 0
    for line in lines:
        if '"event":"assistant"' in line:
            seen += 1
            if seen > 2:
                continue
        kept.append(line)
    short.write_text("\n".join(kept) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "solve", str(EXAMPLE), "--issue-file",
         str(EXAMPLE / "ISSUE.md"), "--replay", str(short), "--out", str(tmp_path / "o")],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "has only 2 model turns, and the replay asked for another" in done.stderr
