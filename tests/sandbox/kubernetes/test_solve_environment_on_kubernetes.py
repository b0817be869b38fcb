"""`frognano solve --sandbox kubernetes` with the environment phase, against the fake API
server and a real package index (proxpi): the build pod reaches the index by the hostAliases
the worker wrote (tests/fakes/kube.py says how the fake stands in for the NetworkPolicy), its
environment comes back to the worker's cache, and the agent's and verification pods get it
read-only, without network or token; a second run reuses it without a build pod."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_solve import environment as solve_environment
from tests.cli.test_solve import solve_argv
from tests.cli.test_solve_environment import (
    ISOLATED,
    PYPROJECT,
    TOKEN,
    env_for,
    fix_turns,
    index,
    make_repo,
    report,
    tool_results,
)
from tests.fakes.kube import FakeKube, running_fake_kube
from tests.fakes.model_server import ScriptedModelServer
from tests.packageindex import PackageIndex

__all__ = ["index"]  # the module's fixture, shared with tests/cli/test_solve_environment.py

pytestmark = pytest.mark.timeout(600)
NAMESPACE = "sandboxes"
PURPOSE = "frognano.dev/purpose"


@pytest.fixture
def fake(index: PackageIndex) -> Iterator[FakeKube]:
    # The chart's NetworkPolicy: environment pods may reach the index's address and port.
    with running_fake_kube(network_policy=(("127.0.0.1", index.port),)) as server:
        yield server


def solve_on(  # noqa: PLR0917 - the test's own helper
    fake: FakeKube,
    repo: Path,
    tmp_path: Path,
    index: PackageIndex,
    cache: Path,
    name: str,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    issue = tmp_path / "ISSUE.md"
    issue.write_text("# mean([]) crashes\n\nmean([]) should raise ValueError.\n")
    out = tmp_path / name
    # By name: the worker resolves it into the build pod's hostAliases (the pod has no DNS).
    url = f"http://localhost:{index.port}/index/"
    with ScriptedModelServer(fix_turns(index)) as server:
        env = solve_environment(server, tmp_path)
        env["FROGNANO_ENVIRONMENT_CACHE"] = str(cache)
        env["FROGNANO_INDEX_TOKEN"] = TOKEN
        env["FROGNANO_K8S_KUBECONFIG"] = str(fake.kubeconfig(tmp_path / "kubeconfig"))
        env["FROGNANO_K8S_NAMESPACE"] = NAMESPACE
        done = subprocess.run(
            solve_argv(repo, issue, out, "--sandbox", "kubernetes", "--index-url", url),
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=540,
        )
    return done, out


def pods_by_purpose(fake: FakeKube) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for pod in fake.created:
        found.setdefault(pod["metadata"]["labels"][PURPOSE], []).append(pod)
    return found


def test_a_repository_with_real_dependencies_builds_in_a_pod_and_is_verified_then_reused(
    fake: FakeKube, tmp_path: Path, index: PackageIndex
) -> None:
    isolated = ISOLATED.format(host=index.host, port=index.port, token_hex=TOKEN.encode().hex())
    repo = make_repo(tmp_path / "project", {"tests/test_isolated.py": isolated})
    cache = tmp_path / "envcache"
    done, out = solve_on(fake, repo, tmp_path, index, cache, "first")
    assert done.returncode == 0, done.stderr + (out / "report.md").read_text()
    first = report(out)
    assert first["sandbox"]["backend"] == "kubernetes"
    env = first["sandbox"]["environment"]
    assert env["cache_hit"] is False
    assert env["commands"] == ["python -m pip install -e '.[test]'"]
    assert any("not a digest" in note for note in env["notes"]), env["notes"]
    assert first["verification"]["held"] is True
    probed, _, _, tested = tool_results(out)[:4]
    assert probed.split() == ["NET-BLOCKED", "TOKEN-ABSENT"], probed
    assert "3 passed" in tested
    for role in ("baseline", "verification"):
        tests = first["verification"][role]["tests"]
        isolated = "tests/test_isolated.py::test_the_index_is_out_of_reach_and_the_token_unknown"
        assert tests[isolated] == "passed", (role, tests)
    assert "/index/fn-mathhelp/" in index.log()

    pods = pods_by_purpose(fake)
    assert {"agent", "environment", "verify-baseline", "verify-patched"} <= set(pods), pods
    (build,) = pods["environment"]
    spec = build["spec"]
    assert {"ip": "127.0.0.1", "hostnames": ["localhost"]} in spec["hostAliases"]
    assert spec["dnsPolicy"] == "None"
    assert "initContainers" not in spec
    build_pod = build["metadata"]["name"]
    # Every other pod (the agent's, each verification's): a read-only copy, no way out.
    for pod in (pod for purpose, listed in pods.items() if purpose != "environment"
                for pod in listed):  # fmt: skip
        assert "hostAliases" not in pod["spec"], pod["metadata"]["labels"]
        mounts = pod["spec"]["containers"][0]["volumeMounts"]
        assert {"name": "environment", "mountPath": "/environment", "readOnly": True} in mounts
        assert [c["name"] for c in pod["spec"]["initContainers"]] == ["environment"]
    # The token reached the build pod on stdin only; no other pod's manifest or exec saw it
    # (but for the agent's probe above, whose command the test wrote with the token in it).
    assert TOKEN not in json.dumps(fake.created)
    for record in fake.execs:
        command = " ".join(record.argv)
        seen = TOKEN.encode() in record.stdin or (TOKEN in command and "TOKEN-SEEN" not in command)
        assert not seen or record.pod == build_pod, (record.pod, record.container)
    assert any(TOKEN.encode() in record.stdin for record in fake.execs if record.pod == build_pod)

    created = len(fake.created)
    before = index.log()
    again, out2 = solve_on(fake, repo, tmp_path, index, cache, "second")
    assert again.returncode == 0, again.stderr
    second = report(out2)["sandbox"]["environment"]
    assert second["cache_hit"] is True
    assert second["key"] == env["key"]
    assert index.log() == before, "a cache hit asked the index for something"
    purposes = [pod["metadata"]["labels"][PURPOSE] for pod in fake.created[created:]]
    assert "environment" not in purposes, purposes
    assert not [key for key in fake.pods if key[0] == NAMESPACE], "pods were left behind"


def test_a_build_pod_reaches_the_index_by_its_alias_and_nothing_else(
    fake: FakeKube, tmp_path: Path, index: PackageIndex
) -> None:
    # What the setup code of a hostile repository can reach from the build pod.
    sneaky = (
        "import socket, urllib.request\nfrom setuptools import setup\nresults = []\n"
        "def attempt(name, action):\n"
        "    try:\n        action()\n        results.append(name + ' REACHED')\n"
        "    except Exception as exc:\n"
        "        results.append(name + ' failed ' + repr(exc)[:200])\n"
        f"attempt('index-by-alias', lambda: urllib.request.urlopen(urllib.request.Request("
        f"'http://localhost:{index.port}/index/', headers={{'Accept': 'text/html'}}), "
        "timeout=10).read())\n"
        "attempt('other-name', lambda: urllib.request.urlopen('http://pypi.org/', timeout=5))\n"
        "attempt('outside-ip', lambda: socket.create_connection(('1.1.1.1', 80), 3).close())\n"
        "attempt('other-port', lambda: urllib.request.urlopen('http://localhost:9/', "
        "timeout=5))\n"
        "open('/environment/probe.txt', 'w').write('\\n'.join(results) + '\\n')\n"
        "setup()\n"
    )
    repo = make_repo(tmp_path / "project", {"setup.py": sneaky})
    cache = tmp_path / "envcache"
    done, out = solve_on(fake, repo, tmp_path, index, cache, "out")
    assert done.returncode == 0, done.stderr + (out / "report.md").read_text()
    probes = next(cache.glob("*/probe.txt")).read_text().splitlines()
    assert [line.split(" ")[:2] for line in probes] == [
        ["index-by-alias", "REACHED"],
        ["other-name", "failed"],
        ["outside-ip", "failed"],
        ["other-port", "failed"],
    ], probes


def env_build(
    fake: FakeKube, repo: Path, tmp_path: Path, index: PackageIndex, *, token: bool = False
) -> subprocess.CompletedProcess[str]:
    env = env_for(None, tmp_path, tmp_path / "envcache")
    env["FROGNANO_K8S_KUBECONFIG"] = str(fake.kubeconfig(tmp_path / "kubeconfig"))
    env["FROGNANO_K8S_NAMESPACE"] = NAMESPACE
    if token:
        env["FROGNANO_INDEX_TOKEN"] = TOKEN
    url = f"http://localhost:{index.port}/index/"
    return subprocess.run(
        [sys.executable, "-m", "frognano", "env", "build", str(repo), "--index-url", url,
         "--sandbox", "kubernetes"],
        env=env, capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip


def test_a_failing_install_in_a_pod_names_the_command_and_the_package(
    fake: FakeKube, tmp_path: Path, index: PackageIndex
) -> None:
    broken = PYPROJECT.replace('"fn-mathhelp==1.0"', '"fn-absent-package==9.9"')
    repo = make_repo(tmp_path / "project", {"pyproject.toml": broken})
    done = env_build(fake, repo, tmp_path, index)
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert "python -m pip install -e '.[test]'" in said
    assert "fn-absent-package" in said
    assert "On Kubernetes FrogNano cannot see what an install tried to reach" in said
    assert not list((tmp_path / "envcache").glob("*.json")), "a failed build was kept"


def test_a_pod_build_that_copies_the_token_into_the_environment_is_refused(
    fake: FakeKube, tmp_path: Path, index: PackageIndex
) -> None:
    leak = (
        "import os\nfrom setuptools import setup\n"
        "open('/environment/leak.txt', 'w').write(os.environ.get('PIP_INDEX_URL', 'none'))\n"
        "setup()\n"
    )
    repo = make_repo(tmp_path / "project", {"setup.py": leak})
    done = env_build(fake, repo, tmp_path, index, token=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the index token was written into the environment (leak.txt)" in done.stderr
    assert not list((tmp_path / "envcache").glob("*.json")), "the leaking environment was kept"
    assert TOKEN not in done.stdout + done.stderr
