"""The worker with the Kubernetes backend: a killed worker's sandbox pod is deleted before its
job runs again, and the re-run publishes once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.test_worker import FIX, REPO, World, fake, until, worker_process_env, world
from tests.conftest import processes_with
from tests.fakes.kube import FakeKube, running_fake_kube
from tests.fakes.model_server import ScriptedModelServer, Turn

__all__ = ["fake", "world"]  # fixtures shared with tests/app/test_worker.py

pytestmark = pytest.mark.timeout(300)
NAMESPACE = "sandboxes"


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with running_fake_kube() as server:
        yield server


def attempts(kube: FakeKube) -> list[tuple[str, str]]:
    # Sorted: the verification pods of one attempt start at once, in no fixed order.
    labels = [pod["metadata"]["labels"] for pod in kube.created]
    return sorted(
        (label["frognano.dev/attempt"], label["frognano.dev/purpose"]) for label in labels
    )


async def test_a_killed_workers_pod_goes_before_its_job_runs_again(
    world: World, kube: FakeKube, tmp_path: Path
) -> None:
    kubeconfig = kube.kubeconfig(tmp_path / "kubeconfig")
    marker = "sleep 73.4567"
    slow = [Turn(calls=[("Bash", {"command": marker, "timeout": 600000})])]
    settings = world.deps.settings.model_copy(
        update={"sandbox": "kubernetes", "k8s_kubeconfig": kubeconfig, "k8s_namespace": NAMESPACE}
    )
    world.deps.settings = settings
    with ScriptedModelServer(slow) as first:
        env = worker_process_env(
            world, first.base_url, tmp_path / "killed",
            sandbox="kubernetes", kubeconfig=str(kubeconfig), namespace=NAMESPACE,
        )  # fmt: skip
        assert await world.submit(world.request()) == "queued"
        proc = subprocess.Popen([sys.executable, "-m", "tests.app.worker_process"], env=env)  # noqa: ASYNC220
        try:
            assert await until(lambda: bool(processes_with(marker)), within=90)
        finally:
            proc.kill()
            proc.wait(timeout=30)
    # Killing the worker stops neither the pod nor its command: that is Kubernetes.
    (orphan,) = [name for (namespace, name) in kube.pods if namespace == NAMESPACE]
    assert processes_with(marker)
    assert attempts(kube) == [("1", "agent")]
    world.deps.heartbeat_seconds, world.deps.heartbeat_ttl = 0.2, 1.0
    await asyncio.sleep(1.5)  # the dead worker's last heartbeat expires
    with ScriptedModelServer(FIX) as second:
        world.deps.settings = settings.model_copy(update={"model_base_url": second.base_url})
        await world.work()  # its start-up sweep deletes the orphan's pod, then re-runs the job
    assert (NAMESPACE, orphan) not in kube.pods
    assert await until(lambda: not processes_with(marker), within=15)
    # The re-run is attempt 2, with a pod of its own for the agent and one for each test run.
    assert attempts(kube) == [
        ("1", "agent"), ("2", "agent"), ("2", "verify-baseline"), ("2", "verify-hunk"),
        ("2", "verify-patched"),
    ]  # fmt: skip
    assert not [key for key in kube.pods if key[0] == NAMESPACE]
    repo = world.fake.repo(REPO)
    assert len(repo.pulls) == 1
    (comment,) = repo.comments(7)
    assert "/pull/" in comment["body"]


async def test_a_full_quota_defers_the_run_and_says_so_on_the_issue(
    world: World, kube: FakeKube, tmp_path: Path
) -> None:
    world.deps.settings = world.deps.settings.model_copy(
        update={
            "sandbox": "kubernetes",
            "k8s_kubeconfig": kube.kubeconfig(tmp_path / "kubeconfig"),
            "k8s_namespace": NAMESPACE,
        }
    )
    world.deps.busy_retry_seconds = 0.5
    kube.create_error = (
        403,
        "Forbidden",
        'pods "frognano-sandbox-x" is forbidden: exceeded quota: sandbox-quota, requested: '
        "pods=1, used: pods=20, limited: pods=20",
    )
    repo = world.fake.repo(REPO)

    def says(text: str) -> bool:
        return any(text in comment["body"] for comment in repo.comments(7))

    with ScriptedModelServer(FIX) as server:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": server.base_url}
        )
        assert await world.submit(world.request()) == "queued"
        working = asyncio.create_task(world.work())
        try:
            assert await until(lambda: says("waiting for a sandbox"), within=60)
            # A second label while the run waits does not start another run.
            assert await world.submit(world.request()) == "already_running"
            kube.create_error = None  # running sandboxes finished: there is room again
            await asyncio.wait_for(working, 120)
        finally:
            working.cancel()
    assert len(repo.pulls) == 1
    (comment,) = repo.comments(7)
    assert "/pull/" in comment["body"]
    assert attempts(kube) == [
        ("2", "agent"), ("2", "verify-baseline"), ("2", "verify-hunk"), ("2", "verify-patched"),
    ]  # fmt: skip
