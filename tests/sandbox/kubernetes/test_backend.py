"""The Kubernetes backend end to end through the real `kubernetes` client, against a fake API
server that speaks the pods and exec protocols and runs commands in a real local sandbox."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from frognano.errors import SandboxError, SandboxStartError, SandboxUnavailable
from frognano.sandbox import Sandbox, SandboxOptions, SandboxSpec, create_sandbox
from frognano.sandbox.kubernetes.api import KubeApi, kube_configuration
from frognano.sandbox.kubernetes.backend import KubernetesSandbox
from frognano.sandbox.kubernetes.netcheck import check_pod_network
from frognano.sandbox.kubernetes.pod import ATTEMPT, EXPIRES, RUN_ID, SELECTOR
from frognano.sandbox.kubernetes.reaper import reap_namespace
from frognano.sandbox.netcheck import network_verdict
from frognano.sandbox.registry import delete_attempt_sandboxes, reap_sandboxes
from tests.fakes.kube import FakeKube, running_fake_kube

pytestmark = pytest.mark.timeout(120)

NAMESPACE = "frognano-sandbox"
V4 = ("v4.channel.k8s.io",)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeKube]:
    with running_fake_kube() as server:
        yield server


@pytest.fixture(autouse=True)
def _reset(fake: FakeKube) -> Iterator[None]:
    yield
    fake.protocols = ("v5.channel.k8s.io", *V4)
    fake.create_error = None
    fake.hold_pending = False
    fake.exec_fault = None


@pytest.fixture
def kubeconfig(fake: FakeKube, tmp_path: Path) -> Path:
    return fake.kubeconfig(tmp_path / "kubeconfig")


def options(kubeconfig: Path, *, start_timeout: float = 600.0) -> SandboxOptions:
    return SandboxOptions(
        spec=SandboxSpec(run_id="20261130-120000-abcdef"),
        kubeconfig=kubeconfig,
        k8s_namespace=NAMESPACE,
        k8s_start_timeout=start_timeout,
    )


@pytest.fixture
async def box(kubeconfig: Path) -> AsyncIterator[KubernetesSandbox]:
    sandbox = await create_sandbox("kubernetes", options(kubeconfig))
    assert isinstance(sandbox, KubernetesSandbox)
    try:
        yield sandbox
    finally:
        await sandbox.close()


def own_pods(fake: FakeKube) -> list[str]:
    return [name for (namespace, name) in fake.pods if namespace == NAMESPACE]


async def test_the_pod_is_created_hardened_and_deleted_on_close(
    fake: FakeKube, kubeconfig: Path
) -> None:
    async with await create_sandbox("kubernetes", options(kubeconfig)) as box:
        assert isinstance(box, KubernetesSandbox)
        pod = fake.pods[(NAMESPACE, box.name)]
        assert box.name.startswith("frognano-sandbox-")
        assert pod["metadata"]["labels"][RUN_ID] == "20261130-120000-abcdef"
        assert pod["spec"]["automountServiceAccountToken"] is False
        assert pod["spec"]["securityContext"]["runAsUser"] == 10001
        # The first exec proved the pod works before anyone relied on it.
        assert any(record.pod == box.name for record in fake.execs)
    assert (NAMESPACE, box.name) not in fake.pods


async def test_the_protocol_names_the_pod_and_no_host_folder(box: KubernetesSandbox) -> None:
    seen: Sandbox = box
    assert seen.mechanism == f"pod {NAMESPACE}/{box.name}"
    assert seen.python_env is None
    assert seen.host_paths is None


async def test_exit_codes_and_streams(box: KubernetesSandbox) -> None:
    result = await box.exec("echo out; echo err >&2; exit 3", split_stderr=True)
    assert result.exit_code == 3
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert sorted(result.output.splitlines()) == ["err", "out"]
    assert (await box.exec("true")).exit_code == 0
    signalled = await box.exec("kill -TERM $$")
    assert signalled.exit_code == 128 + 15
    assert not signalled.timed_out


async def test_cwd_and_environment(box: KubernetesSandbox) -> None:
    await box.exec("mkdir -p /workspace/pkg")
    result = await box.exec("pwd; echo $HOME", cwd="/workspace/pkg")
    assert result.output.splitlines()[0] == "/workspace/pkg"
    missing = await box.exec("true", cwd="/nowhere")
    assert missing.exit_code == 126


async def test_binary_files_round_trip(box: KubernetesSandbox) -> None:
    data = bytes(range(256)) * 4096 + b"\x00\xff"  # over a MiB: several frames each way
    await box.write_file("/workspace/blob.bin", data, mode=0o600)
    assert await box.read_file("/workspace/blob.bin") == data
    listing = await box.exec("stat -c %a /workspace/blob.bin")
    assert listing.output.strip() == "600"
    with pytest.raises(FileNotFoundError):
        await box.read_file("/workspace/missing")


async def test_large_output_is_capped_keeping_head_and_tail(box: KubernetesSandbox) -> None:
    result = await box.exec("seq 1 400000", output_limit=10_000)
    assert result.truncated
    assert result.output.startswith("1\n2\n")
    assert result.output.rstrip().endswith("400000")
    assert "bytes of output omitted" in result.output


async def test_stdin_reaches_the_command(box: KubernetesSandbox) -> None:
    result = await box.exec("wc -c; cat | head -c 0", stdin=b"x" * 300_000)
    assert result.output.split()[0] == "300000"


async def test_upload_tree_keeps_modes_and_links(box: KubernetesSandbox, tmp_path: Path) -> None:
    source = tmp_path / "repo"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("print('hi')\n", encoding="utf-8")
    script = source / "run.sh"
    script.write_text("#!/bin/sh\necho ran\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (source / "link").symlink_to("pkg/mod.py")
    (source / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    await box.upload_tree(source)
    result = await box.exec("./run.sh && readlink link && sha256sum big.bin && cat pkg/mod.py")
    lines = result.output.splitlines()
    assert lines[0] == "ran"
    assert lines[1] == "pkg/mod.py"
    assert lines[2].split()[0] == hashlib.sha256((source / "big.bin").read_bytes()).hexdigest()
    assert lines[3] == "print('hi')"


async def test_the_in_pod_timeout_kills_the_command_group(box: KubernetesSandbox) -> None:
    result = await box.exec("(sleep 2; touch /tmp/survivor) & sleep 60; echo never", timeout=1)
    assert result.timed_out
    assert result.exit_code is None
    assert "never" not in result.output
    # Nothing of the command survives: its background job went with its process group.
    await asyncio.sleep(2.5)
    assert (await box.exec("test -e /tmp/survivor")).exit_code == 1


async def test_background_jobs_end_with_their_bash_call(box: KubernetesSandbox) -> None:
    # As in a local sandbox: `server &` neither outlives the call nor holds the stream open
    # until the timeout. (The fake's pods end their pid namespace with each command, which
    # would do this too; test_wrapper.py shows the in-pod wrapper does it by itself.)
    result = await box.exec("(sleep 2; touch /tmp/late) & echo started", timeout=60)
    assert result.ok
    assert not result.timed_out
    assert result.output == "started\n"
    await asyncio.sleep(2.5)
    assert (await box.exec("test -e /tmp/late")).exit_code == 1
    # A command's own exit status still comes through the supervisor.
    assert (await box.exec("sleep 0.1 & exit 7")).exit_code == 7


async def test_v4_servers_still_get_input_through_its_length(
    fake: FakeKube, box: KubernetesSandbox, tmp_path: Path
) -> None:
    fake.protocols = V4
    data = os.urandom(200_000)
    await box.write_file("/tmp/v4.bin", data)
    assert await box.read_file("/tmp/v4.bin") == data
    assert fake.execs[-1].subprotocol == V4[0]
    assert not fake.execs[-1].stdin_closed
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "f.txt").write_text("v4 upload\n", encoding="utf-8")
    await box.upload_tree(tmp_path / "tree", "/tmp/tree")
    assert (await box.exec("cat /tmp/tree/f.txt")).output == "v4 upload\n"


async def test_v5_closes_stdin(fake: FakeKube, box: KubernetesSandbox) -> None:
    await box.write_file("/tmp/v5.txt", b"five")
    record = fake.execs[-1]
    assert record.subprotocol == "v5.channel.k8s.io"
    assert record.stdin_closed
    assert record.stdin == b"five"


async def test_an_unanswering_stream_ends_at_the_client_deadline_with_an_in_pod_kill(
    fake: FakeKube, box: KubernetesSandbox
) -> None:
    box.client_grace = 1.0
    box.kill_timeout = 2.0  # the kill's own exec stalls too while the fault is on
    fake.exec_fault = "stall"
    result = await box.exec("sleep 30", timeout=1.0)
    fake.exec_fault = None
    assert result.timed_out
    assert result.exit_code is None
    # The kill went to the stalled command's recorded process group, through a second exec.
    kill = fake.execs[-1]
    assert kill.argv[-2] == "frognano-kill"
    assert kill.argv[-1] == fake.execs[-2].argv[6]
    assert (await box.exec("echo alive")).output == "alive\n"


async def test_a_dropped_connection_is_reported_without_ending_the_sandbox(
    fake: FakeKube, box: KubernetesSandbox
) -> None:
    fake.exec_fault = "drop"
    result = await box.exec("echo partial; sleep 1; echo rest")
    fake.exec_fault = None
    assert result.exit_code is None
    assert "connection to the sandbox pod dropped" in result.output
    assert (await box.exec("echo again")).output == "again\n"


async def test_an_evicted_pod_is_a_sandbox_error_naming_the_reason(
    fake: FakeKube, box: KubernetesSandbox
) -> None:
    fake.set_status(
        NAMESPACE,
        box.name,
        {"phase": "Failed", "reason": "Evicted", "message": "ephemeral-storage usage exceeded"},
    )
    with pytest.raises(SandboxError, match=r"evicted.*ephemeral-storage usage exceeded"):
        await box.exec("true")


async def test_a_deleted_pod_is_a_sandbox_error(fake: FakeKube, kubeconfig: Path) -> None:
    box = await create_sandbox("kubernetes", options(kubeconfig))
    assert isinstance(box, KubernetesSandbox)
    try:
        # Deleted behind the sandbox's back, as an admin or a node drain would.
        api = KubeApi(kube_configuration(kubeconfig))
        assert await api.delete_pod(NAMESPACE, box.name)
        api.close()
        with pytest.raises(SandboxError, match="deleted"):
            await box.exec("true")
    finally:
        await box.close()  # already gone: closing is still fine


async def test_cancelling_a_command_deletes_the_pod(fake: FakeKube, kubeconfig: Path) -> None:
    async def run() -> None:
        async with await create_sandbox("kubernetes", options(kubeconfig)) as box:
            await box.exec("sleep 60", timeout=120)

    task = asyncio.create_task(run())
    for _ in range(200):
        await asyncio.sleep(0.05)
        if any("sleep 60" in record.argv for record in fake.execs):
            break
    before = set(own_pods(fake))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert before
    assert not set(own_pods(fake)) & before


async def test_a_full_quota_is_reported_as_such(fake: FakeKube, kubeconfig: Path) -> None:
    fake.create_error = (
        403,
        "Forbidden",
        'pods "frognano-sandbox-x" is forbidden: exceeded quota: sandbox, requested: pods=1, '
        "used: pods=20, limited: pods=20",
    )
    with pytest.raises(SandboxUnavailable, match="ResourceQuota"):
        await create_sandbox("kubernetes", options(kubeconfig))


async def test_an_image_that_cannot_be_pulled_fails_the_start_and_leaves_no_pod(
    fake: FakeKube, kubeconfig: Path
) -> None:
    fake.hold_pending = True
    before = set(own_pods(fake))
    start = asyncio.create_task(create_sandbox("kubernetes", options(kubeconfig)))
    name = await _new_pod(fake, before)
    fake.set_status(
        NAMESPACE,
        name,
        {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "name": "sandbox",
                    "ready": False,
                    "restartCount": 0,
                    "image": "x",
                    "imageID": "",
                    "state": {
                        "waiting": {
                            "reason": "ImagePullBackOff",
                            "message": 'Back-off pulling image "ghcr.io/nope"',
                        }
                    },
                }
            ],
        },
    )
    with pytest.raises(SandboxStartError, match=r"could not be pulled.*ghcr.io/nope"):
        await start
    assert (NAMESPACE, name) not in fake.pods


async def test_a_pod_that_never_gets_ready_times_out_with_its_state(
    fake: FakeKube, kubeconfig: Path
) -> None:
    fake.hold_pending = True
    with pytest.raises(SandboxStartError, match=r"not ready after 2s.*describe pod"):
        await create_sandbox("kubernetes", options(kubeconfig, start_timeout=2.0))


async def _new_pod(fake: FakeKube, before: set[str]) -> str:
    for _ in range(200):
        fresh = set(own_pods(fake)) - before
        if fresh:
            return fresh.pop()
        await asyncio.sleep(0.05)
    raise AssertionError("no pod was created")


async def test_reaper_deletes_expired_finished_and_failed_pods_only(
    fake: FakeKube, kubeconfig: Path
) -> None:
    namespace = "reap-test"
    now = datetime.now(UTC)

    def add(name: str, phase: str, *, expires: datetime, reason: str | None = None,
            ours: bool = True) -> None:  # fmt: skip
        labels = {EXPIRES: str(int(expires.timestamp()))}
        if ours:
            labels.update(dict(pair.split("=") for pair in SELECTOR.split(",")))
        status: dict[str, Any] = {"phase": phase}
        if reason:
            status["reason"] = reason
        fake.add_pod(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"containers": [{"name": "sandbox", "image": "x"}]},
                "status": status,
            }
        )

    later, earlier = now + timedelta(hours=1), now - timedelta(minutes=1)
    add("running", "Running", expires=later)
    add("pending", "Pending", expires=later)
    add("expired", "Running", expires=earlier)
    add("succeeded", "Succeeded", expires=later)
    add("evicted", "Failed", expires=later, reason="Evicted")
    add("deadline", "Failed", expires=later, reason="DeadlineExceeded")
    add("someone-elses", "Failed", expires=earlier, ours=False)
    dry = await reap_namespace(namespace, kubeconfig, dry_run=True)
    assert {item.name for item in dry} == {"expired", "succeeded", "evicted", "deadline"}
    assert not any(item.deleted for item in dry)
    assert len([key for key in fake.pods if key[0] == namespace]) == 7
    reaped = await reap_namespace(namespace, kubeconfig)
    assert {item.name: item.deleted for item in reaped} == dict.fromkeys(
        ("expired", "succeeded", "evicted", "deadline"), True
    )
    left = sorted(name for (ns, name) in fake.pods if ns == namespace)
    assert left == ["pending", "running", "someone-elses"]
    assert await reap_namespace(namespace, kubeconfig) == []


async def test_the_registry_cleans_up_through_the_backend(fake: FakeKube, kubeconfig: Path) -> None:
    namespace = "registry-clean-up"
    later = str(int((datetime.now(UTC) + timedelta(hours=1)).timestamp()))
    ours = dict(pair.split("=") for pair in SELECTOR.split(","))
    for name, phase, attempt in (("done", "Succeeded", "1"), ("a1", "Running", "1"),
                                 ("a2", "Running", "2")):  # fmt: skip
        labels = {**ours, EXPIRES: later, RUN_ID: "r1", ATTEMPT: attempt}
        fake.add_pod(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"containers": [{"name": "sandbox", "image": "x"}]},
                "status": {"phase": phase},
            }
        )
    options = SandboxOptions(kubeconfig=kubeconfig, k8s_namespace=namespace)

    def left() -> list[str]:
        return sorted(name for (ns, name) in fake.pods if ns == namespace)

    # A local sandbox dies with its process: there is nothing of it to clean up.
    await reap_sandboxes("local", options)
    assert await delete_attempt_sandboxes("local", options, "r1", 1) == []
    assert left() == ["a1", "a2", "done"]
    await reap_sandboxes("kubernetes", options)
    assert left() == ["a1", "a2"]
    assert await delete_attempt_sandboxes("kubernetes", options, "r1", 1) == ["a1"]
    assert left() == ["a2"]


async def test_the_probe_pod_reaches_nothing(
    fake: FakeKube, kubeconfig: Path, tmp_path: Path
) -> None:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 10.96.0.10\n", encoding="utf-8")
    before = set(own_pods(fake))
    results = await check_pod_network(options(kubeconfig), resolv_conf=resolv)
    names = {result.name for result in results}
    assert {"Kubernetes API server", "cluster DNS (TCP 53)", "cloud metadata service"} <= names
    ok, summary = network_verdict(results)
    assert ok, summary
    assert set(own_pods(fake)) == before  # the probe pod is deleted after the check


async def test_a_refused_exec_names_the_api_servers_reason(
    fake: FakeKube, box: KubernetesSandbox
) -> None:
    # Pending again (a node restart, say): the API server refuses exec into its container.
    fake.set_status(NAMESPACE, box.name, {"phase": "Pending"})
    with pytest.raises(SandboxError, match=r"refused to run a command.*\(400: .+\)"):
        await box.exec("true")


async def test_rejected_credentials_say_what_to_check(fake: FakeKube, kubeconfig: Path) -> None:
    fake.token = "another-token"
    try:
        with pytest.raises(SandboxUnavailable, match="FROGNANO_K8S_KUBECONFIG"):
            await create_sandbox("kubernetes", options(kubeconfig))
    finally:
        fake.token = "fake-token"
