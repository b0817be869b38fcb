"""Reading pod status: when a sandbox is ready, when it never will be, and when to reap it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from frognano.sandbox.kubernetes.pod import EXPIRES
from frognano.sandbox.kubernetes.reaper import MAX_AGE, reap_reason
from frognano.sandbox.kubernetes.state import pod_state
from frognano.sandbox.netcheck import ProbeResult, cluster_probes, network_verdict

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def pod(
    phase: str = "Running",
    *,
    ready: bool = True,
    reason: str | None = None,
    message: str | None = None,
    waiting: str | None = None,
    terminated: dict[str, Any] | None = None,
    scheduled: dict[str, str] | None = None,
    expires: datetime | str | None = None,
    created: datetime = NOW - timedelta(hours=1),
    deleting: bool = False,
) -> dict[str, Any]:
    """A pod object shaped as the API server returns it."""
    state: dict[str, Any] = {"running": {"startedAt": "2026-11-30T11:00:00Z"}}
    if waiting:
        state = {"waiting": {"reason": waiting, "message": f"{waiting} details"}}
    if terminated:
        state = {"terminated": terminated}
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    if scheduled:
        conditions.append({"type": "PodScheduled", **scheduled})
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "containerStatuses": [{"name": "sandbox", "ready": ready, "state": state}],
    }
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    labels = {"app.kubernetes.io/managed-by": "frognano"}
    if isinstance(expires, datetime):
        labels[EXPIRES] = str(int(expires.timestamp()))
    elif isinstance(expires, str):
        labels[EXPIRES] = expires
    metadata: dict[str, Any] = {
        "name": "frognano-sandbox-abcde",
        "labels": labels,
        "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-30T11:59:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "status": status}


def test_a_running_ready_pod_is_ready() -> None:
    state = pod_state(pod())
    assert state.ready
    assert state.failure is None


def test_a_pending_pod_is_waiting_with_its_reason() -> None:
    state = pod_state(pod("Pending", ready=False, waiting="ContainerCreating"))
    assert not state.ready
    assert state.failure is None
    assert "ContainerCreating" in state.waiting


def test_an_unschedulable_pod_keeps_waiting_and_says_why() -> None:
    scheduled = {
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes: Insufficient cpu",
    }
    state = pod_state(pod("Pending", ready=False, scheduled=scheduled))
    assert state.failure is None
    assert "Unschedulable" in state.waiting
    assert "Insufficient cpu" in state.waiting


@pytest.mark.parametrize(
    ("waiting", "words"),
    [
        ("ImagePullBackOff", "could not be pulled"),
        ("InvalidImageName", "invalid"),
        ("ErrImageNeverPull", "not on the node"),
        ("CreateContainerConfigError", "configuration"),
        ("CrashLoopBackOff", "keeps exiting"),
    ],
)
def test_hopeless_waiting_reasons_fail_at_once(waiting: str, words: str) -> None:
    state = pod_state(pod("Pending", ready=False, waiting=waiting))
    assert state.failure is not None
    assert words in state.failure
    assert waiting in state.failure
    assert f"{waiting} details" in state.failure


def test_a_first_image_pull_error_is_given_the_kubelets_retry() -> None:
    assert pod_state(pod("Pending", ready=False, waiting="ErrImagePull")).failure is None


@pytest.mark.parametrize(
    ("reason", "words"),
    [("Evicted", "evicted"), ("DeadlineExceeded", "activeDeadlineSeconds"), (None, "Failed")],
)
def test_failed_pods_say_why(reason: str | None, words: str) -> None:
    state = pod_state(pod("Failed", ready=False, reason=reason, message="usage exceeded"))
    assert state.failure is not None
    assert words in state.failure
    assert "usage exceeded" in state.failure


def test_an_exited_container_and_a_deleted_pod_cannot_run_commands() -> None:
    exited = pod_state(pod(ready=False, terminated={"reason": "OOMKilled", "exitCode": 137}))
    assert exited.failure is not None
    assert "OOMKilled" in exited.failure
    assert pod_state(pod(deleting=True)).failure == "the pod is being deleted"


# The reaper's verdict for a pod in every phase.
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"expires": NOW + timedelta(minutes=1)}, None),
        ({"phase": "Pending", "ready": False, "expires": NOW + timedelta(hours=2)}, None),
        ({"expires": NOW - timedelta(seconds=1)}, "expired at 2026-11-30T11:59:59Z"),
        ({"phase": "Pending", "ready": False, "expires": NOW}, "expired at"),
        ({"phase": "Succeeded", "expires": NOW + timedelta(hours=1)}, "succeeded"),
        ({"phase": "Failed", "reason": "Evicted", "expires": NOW + timedelta(hours=1)},
         "failed (Evicted)"),
        ({"phase": "Failed", "reason": "DeadlineExceeded"}, "failed (DeadlineExceeded)"),
        ({"phase": "Unknown", "expires": NOW - timedelta(hours=1)}, "expired at"),
        ({"phase": "Unknown", "expires": NOW + timedelta(hours=1)}, None),
        ({"phase": "Failed", "deleting": True}, None),
        ({"expires": None, "created": NOW - timedelta(hours=1)}, None),
        ({"expires": None, "created": NOW - MAX_AGE}, "no valid"),
        ({"expires": "soon", "created": NOW - MAX_AGE - timedelta(hours=1)}, "no valid"),
        ({"expires": "soon", "created": NOW}, None),
    ],
)  # fmt: skip
def test_reap_reason(kwargs: dict[str, Any], expected: str | None) -> None:
    reason = reap_reason(pod(**kwargs), NOW)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None
        assert reason.startswith(expected)


def test_cluster_probes_cover_the_api_server_dns_outside_and_metadata() -> None:
    resolv = "search frognano.svc.cluster.local\nnameserver 10.96.0.10\nnameserver 10.96.0.11\n"
    probes = cluster_probes("https://10.96.0.1:443", resolv)
    targets = {probe.name: (probe.host, probe.port) for probe in probes}
    assert targets["Kubernetes API server"] == ("10.96.0.1", 443)
    assert targets["cluster DNS (TCP 53)"] == ("10.96.0.10", 53)
    assert targets["cloud metadata service"] == ("169.254.169.254", 80)
    assert ("1.1.1.1", 443) in targets.values()
    # Default ports, and no DNS probe without a resolver.
    bare = {p.name: (p.host, p.port) for p in cluster_probes("https://kubernetes.default", "")}
    assert bare["Kubernetes API server"] == ("kubernetes.default", 443)
    assert not any("DNS (TCP" in name for name in bare)


def test_network_verdict_needs_every_probe_blocked() -> None:
    blocked = [ProbeResult("a", "x:1", True, "no answer within 5s")] * 3
    assert network_verdict(blocked) == (True, "all 3 probes blocked")
    leaked = [*blocked, ProbeResult("Kubernetes API server", "10.96.0.1:443", False, "connected")]
    ok, summary = network_verdict(leaked)
    assert not ok
    assert "Kubernetes API server (10.96.0.1:443): connected" in summary
    assert network_verdict([]) == (False, "no probe ran")
