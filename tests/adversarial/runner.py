"""Replaying scripted agent runs through `frognano solve`, as real processes, a few at a time.

Each run is a process of its own running the CLI's entry point with the run's argv and
environment, forked from a server process that imported FrogNano once (multiprocessing's
forkserver): importing the model client costs more CPU than a whole verification of these
small repositories, and a corpus of many runs would pay it each time.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.model_server import ScriptedModelServer, Turn

FAST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1"
"""Before every test command: the plugins of FrogNano's own environment (which the sandbox
uses) cost a second per pytest start, and none of these repositories needs one."""
CONCURRENCY = 3
"""solve runs at once: each spends most of its time waiting on sandboxes and pytest."""

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = (
    "from calc import add, sub\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_sub():\n    assert sub(5, 3) == 2\n"
)
PYPROJECT = '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-p no:cacheprovider"\n'
BASE: Mapping[str, str] = {
    "calc.py": CALC,
    "tests/test_calc.py": TESTS,
    "pyproject.toml": PYPROJECT,
}
ISSUE = "# add() subtracts\n\n`add(1, 2)` returns -1 instead of 3.\n"
FIX = "sed -i '0,/return a - b/s//return a + b/' calc.py\n"
"""The honest fix, in add() only: one character, so calc.py keeps its size (the stale-bytecode
race of a baseline compiled in the same second)."""


@dataclass(frozen=True)
class Case:
    """One scripted run: the base repository, what the agent does, what must come out."""

    name: str
    script: str
    """Bash run by the agent in /workspace (one tool call)."""
    expect: str
    """A piece of the run's reason (or of a blocking finding) that says why."""
    ready: bool = False
    files: Mapping[str, str | bytes] = field(default_factory=lambda: dict(BASE))
    command: str = "python -m pytest -q"
    """The policy's test command (FAST is put before it)."""
    modes: Mapping[str, int] = field(default_factory=dict)
    links: Mapping[str, str] = field(default_factory=dict)
    """Symlinks of the base: path -> target."""
    policy: str = ""
    """More of the policy file's `defaults`, as YAML indented under it."""
    poisoned: str | None = None
    """The agent file the attack plants: the attack wins if a ready patch publishes it."""


@dataclass(frozen=True)
class Result:
    case: Case
    returncode: int
    report: dict[str, Any]
    stderr: str
    out: Path

    @property
    def reason(self) -> str:
        return str(self.report.get("outcome", {}).get("reason", ""))

    def findings(self, severity: str = "block") -> list[dict[str, Any]]:
        gate = self.report.get("gate") or {}
        return [f for f in gate.get("findings") or () if f["severity"] == severity]

    def explains(self, text: str) -> bool:
        """Whether the outcome, a blocking finding or verification itself says `text`: an
        attack the gate blocks must still fail verification for its own reason."""
        blocks = " ".join(f["reason"] for f in self.findings())
        verification = str((self.report.get("verification") or {}).get("reason", ""))
        return any(text in said for said in (self.reason, blocks, verification))


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                   check=True, capture_output=True)  # fmt: skip


def make_repo(
    root: Path,
    files: Mapping[str, str | bytes],
    modes: Mapping[str, int],
    links: Mapping[str, str] | None = None,
) -> Path:
    root.mkdir(parents=True)
    for name, pointed in (links or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(pointed)
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
        if path in modes:
            target.chmod(modes[path])
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def environment(
    server: ScriptedModelServer, scratch: Path, policies: Path, cache: Path
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env["FROGNANO_MODEL_BASE_URL"] = server.base_url
    env["FROGNANO_LOG_LEVEL"] = "WARNING"
    env["FROGNANO_POLICY_DIR"] = str(policies)
    # Shared by the cases: most start from the same base, as runs on one repository would.
    env["FROGNANO_BASELINE_CACHE"] = str(cache)
    sandboxes = scratch / "sandboxes"
    sandboxes.mkdir(exist_ok=True)
    env["TMPDIR"] = str(sandboxes)
    return env


_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload(["frognano.cli.app", "frognano.run.pipeline"])


def _solve(argv: list[str], env: dict[str, str], stdout: str, stderr: str) -> None:
    """In the forked child: `frognano ARGV` with exactly `env`, its output into two files."""
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # read TMPDIR again: the sandboxes go where this run says
    for fd, path in ((1, stdout), (2, stderr)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    from frognano.cli.app import app

    sys.argv = ["frognano", *argv]
    app()  # exits with the command's status


def solve_process(
    argv: list[str], env: dict[str, str], scratch: Path, timeout: float
) -> tuple[int, str]:
    """Run `frognano solve` as its own process; (exit status, stderr)."""
    stdout, stderr = scratch / "solve.stdout", scratch / "solve.stderr"
    process = _FORKS.Process(target=_solve, args=(argv, env, str(stdout), str(stderr)))
    process.start()
    process.join(timeout)
    if process.exitcode is None:
        process.kill()
        process.join()
        raise TimeoutError(f"frognano {' '.join(argv)} ran past {timeout} s")
    return process.exitcode, stderr.read_text(errors="replace")


def run_case(case: Case, scratch: Path, cache: Path) -> Result:
    repo = make_repo(scratch / "repo", case.files, case.modes, case.links)
    issue = scratch / "ISSUE.md"
    issue.write_text(ISSUE)
    policies = scratch / "policies"
    policies.mkdir()
    command = json.dumps(f"{FAST} {case.command}")
    (policies / "50-case.yaml").write_text(
        f"version: 1\ndefaults:\n  verify:\n    command: {command}\n{case.policy}"
    )
    out = scratch / "out"
    turns = [
        Turn(reasoning="Change the files.", calls=[("Bash", {"command": case.script})]),
        Turn(content="Done: the tests pass now."),
    ]
    argv = ["solve", str(repo), "--issue-file", str(issue), "--out", str(out)]
    with ScriptedModelServer(turns) as server:
        code, stderr = solve_process(argv, environment(server, scratch, policies, cache),
                                     scratch, timeout=300)  # fmt: skip
    report_file = out / "report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    return Result(case, code, report, stderr, out)


def run_all(cases: Sequence[Case], scratch: Path) -> dict[str, Result]:
    """Every case in a folder of its own, CONCURRENCY at a time."""
    cache = scratch / "baselines"
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        futures = {
            case.name: pool.submit(run_case, case, scratch / f"case-{index:03d}", cache)
            for index, case in enumerate(cases)
        }
        return {name: future.result() for name, future in futures.items()}
