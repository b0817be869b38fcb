"""The fake Kubernetes API server, as the real `kubernetes` client sees it."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream
from websocket import WebSocketConnectionClosedException, WebSocketException

from frognano.errors import SandboxUnavailable
from frognano.sandbox.isolation import choose_mechanism
from frognano.sandbox.kubernetes.exec import ExecStream
from tests.conftest import STRICT
from tests.fakes.kube import FRAME, V4, V5, FakeKube, running_fake_kube

pytestmark = pytest.mark.timeout(120)

CONTAINER = "sandbox"
WAIT = 30.0
SUCCESS = {"metadata": {}, "status": "Success"}


Stream = ExecStream  # what these tests use of the client's (untyped) WSClient


@dataclass
class Outcome:
    """What one exec stream delivered."""

    stdout: bytes
    stderr: bytes
    status: dict[str, Any] | None
    """The status channel's JSON; None when none came."""
    error: Exception | None
    """What the client raised while reading, if anything (a dropped connection)."""
    still_open: bool
    """The client still took the stream for open when reading stopped."""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeKube]:
    try:
        choose_mechanism("auto")
    except SandboxUnavailable as exc:
        if STRICT:  # under .ci/run a missing mechanism fails instead of skipping
            pytest.fail(f"no local sandbox for the fake's pods here: {exc}")
        pytest.skip(f"no local sandbox for the fake's pods here: {exc}")
    with running_fake_kube() as server:
        yield server


@pytest.fixture(autouse=True)
def _reset(fake: FakeKube) -> Iterator[None]:
    yield
    fake.protocols = (V5, V4)
    fake.create_error = None
    fake.hold_pending = False
    fake.exec_fault = None


class Kube:
    """The pod calls of the real client, answering the JSON the server sent; `core` is the
    client itself, for model deserialisation (its loaders and models are typed loosely)."""

    def __init__(self, configuration: client.Configuration) -> None:
        self.core: Any = client.CoreV1Api(client.ApiClient(configuration))

    @staticmethod
    def _json(response: Any) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(response.data)
        return data

    def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._json(self.core.create_namespaced_pod(namespace, body, _preload_content=False))

    def read(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(self.core.read_namespaced_pod(name, namespace, _preload_content=False))

    def list(self, namespace: str, selector: str = "") -> dict[str, Any]:
        return self._json(
            self.core.list_namespaced_pod(
                namespace, label_selector=selector, _preload_content=False
            )
        )

    def delete(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(
            self.core.delete_namespaced_pod(
                name, namespace, grace_period_seconds=0, _preload_content=False
            )
        )

    def close(self) -> None:
        self.core.api_client.close()


def load(kubeconfig: Path) -> client.Configuration:
    loaded = client.Configuration()
    loader: Any = config.load_kube_config  # untyped
    loader(config_file=str(kubeconfig), client_configuration=loaded)
    return loaded


@pytest.fixture(scope="module")
def configuration(fake: FakeKube, tmp_path_factory: pytest.TempPathFactory) -> client.Configuration:
    return load(fake.kubeconfig(tmp_path_factory.mktemp("kube") / "config"))


@pytest.fixture(scope="module")
def api(configuration: client.Configuration) -> Iterator[Kube]:
    kube = Kube(configuration)
    yield kube
    kube.close()


@pytest.fixture
def namespace() -> str:
    return f"t-{secrets.token_hex(4)}"


def manifest(**labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "sbx-", "labels": labels},
        "spec": {"containers": [{"name": CONTAINER, "image": "ghcr.io/frognano/sandbox:1"}]},
    }


def phase(pod: dict[str, Any]) -> str | None:
    found: str | None = (pod.get("status") or {}).get("phase")
    return found


def wait_running(api: Kube, namespace: str, name: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    while True:
        pod = api.read(namespace, name)
        if phase(pod) == "Running" or time.monotonic() > deadline:
            return pod
        time.sleep(0.05)


def start_pod(api: Kube, namespace: str) -> str:
    name: str = api.create(namespace, manifest())["metadata"]["name"]
    assert phase(wait_running(api, namespace, name)) == "Running"
    return name


@pytest.fixture(scope="module")
def pod(api: Kube) -> str:
    """A running pod in namespace "exec", shared by the exec tests."""
    return start_pod(api, "exec")


def open_exec(
    configuration: client.Configuration,
    name: str,
    argv: list[str],
    *,
    stdin: bool = False,
    namespace: str = "exec",
    container: str = CONTAINER,
) -> Stream:
    # stream() swaps methods on the ApiClient it is given: one client per stream.
    core = client.CoreV1Api(client.ApiClient(configuration))
    return cast(
        Stream,
        stream(
            core.connect_get_namespaced_pod_exec,
            name,
            namespace,
            container=container,
            command=argv,
            stdin=stdin,
            stdout=True,
            stderr=True,
            tty=False,
            binary=True,
            _preload_content=False,
        ),
    )


def collect(ws: Stream, within: float = WAIT) -> Outcome:
    """Read until the server closes the stream or `within` seconds pass; then close it."""
    out, err, status = bytearray(), bytearray(), bytearray()
    error: Exception | None = None

    def drain() -> None:
        out.extend(ws.read_channel(1))
        err.extend(ws.read_channel(2))
        status.extend(ws.read_channel(3))

    deadline = time.monotonic() + within
    try:
        while ws.is_open() and time.monotonic() < deadline:
            ws.update(timeout=0.1)
            drain()
    except (WebSocketException, OSError) as exc:
        error = exc
    drain()
    still_open = ws.is_open()
    close(ws)
    parsed = json.loads(bytes(status)) if status else None
    return Outcome(bytes(out), bytes(err), parsed, error, still_open)


def close(ws: Stream) -> None:
    ws.close()
    # After a close the server began, websocket-client's close() returns early and leaves its
    # socket open (a ResourceWarning later); shutdown() closes it.
    ws.sock.shutdown()


def run(
    configuration: client.Configuration,
    name: str,
    argv: list[str],
    *,
    stdin: bytes | None = None,
    within: float = WAIT,
    **where: str,
) -> Outcome:
    ws = open_exec(configuration, name, argv, stdin=stdin is not None, **where)
    if stdin is not None:
        for start in range(0, len(stdin), 1024 * 1024):
            ws.write_stdin(stdin[start : start + 1024 * 1024])
        ws.close_channel(0)
    return collect(ws, within)


def sh(configuration: client.Configuration, name: str, script: str, **kwargs: Any) -> Outcome:
    return run(configuration, name, ["/bin/sh", "-c", script], **kwargs)


def wait_for_file(
    configuration: client.Configuration, name: str, path: str, *, namespace: str = "exec"
) -> bool:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if run(configuration, name, ["test", "-e", path], namespace=namespace).status == SUCCESS:
            return True
        time.sleep(0.05)
    return False


def exit_code(status: dict[str, Any] | None) -> int | None:
    if status is None:
        return None
    if status["status"] == "Success":
        return 0
    return int(status["details"]["causes"][0]["message"])


def api_error(raised: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(raised.value.body or "{}")
    return body


def refusal(raised: pytest.ExceptionInfo[ApiException]) -> str:
    """The handshake failure the client wraps into an ApiException with status 0."""
    assert raised.value.status == 0
    return str(raised.value.reason)


# Pods ----------------------------------------------------------------------------------------


def test_a_created_pod_gets_a_name_and_starts_running(
    fake: FakeKube, api: Kube, configuration: client.Configuration, namespace: str
) -> None:
    assert configuration.host == fake.url
    created = api.create(namespace, manifest(app="x"))
    metadata = created["metadata"]
    name = metadata["name"]
    assert (created["apiVersion"], created["kind"]) == ("v1", "Pod")
    assert re.fullmatch(r"sbx-[a-z0-9]{5}", name)
    assert metadata["namespace"] == namespace
    assert metadata["uid"]
    assert metadata["resourceVersion"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", metadata["creationTimestamp"])
    assert phase(created) == "Pending"
    assert (namespace, name) in fake.pods
    assert fake.created[-1] == created

    status = wait_running(api, namespace, name)["status"]
    assert phase({"status": status}) == "Running"
    assert {"type": "Ready", "status": "True"}.items() <= {
        c["type"]: c for c in status["conditions"]
    }["Ready"].items()
    (container,) = status["containerStatuses"]
    assert (container["name"], container["ready"], container["started"]) == (CONTAINER, True, True)
    assert container["state"]["running"]["startedAt"]
    assert (container["image"], container["imageID"]) == ("ghcr.io/frognano/sandbox:1", "")
    assert container["restartCount"] == 0
    assert status["podIP"]
    assert status["startTime"]
    assert fake.sandbox(namespace, name) is not None

    # The client's models take what the server sent.
    model = api.core.read_namespaced_pod(name, namespace)
    assert model.status.phase == "Running"
    assert model.status.container_statuses[0].state.running.started_at.tzinfo is not None
    assert model.metadata.creation_timestamp.tzinfo is not None


def test_invalid_pods_are_refused_as_the_api_server_does(
    fake: FakeKube, api: Kube, namespace: str
) -> None:
    def refused(body: dict[str, Any]) -> dict[str, Any]:
        with pytest.raises(ApiException) as raised:
            api.create(namespace, body)
        assert raised.value.status == 422
        status = api_error(raised)
        assert (status["kind"], status["status"], status["reason"]) == (
            "Status",
            "Failure",
            "Invalid",
        )
        assert status["code"] == 422
        return status

    no_image = manifest()
    del no_image["spec"]["containers"][0]["image"]
    status = refused(no_image)
    assert status["message"] == 'Pod "sbx-" is invalid: spec.containers[0].image: Required value'
    assert status["details"]["causes"][0]["field"] == "spec.containers[0].image"

    bad_value = manifest()
    bad_value["spec"]["restartPolicy"] = "Sometimes"
    assert "spec.restartPolicy: Unsupported value" in refused(bad_value)["message"]

    # The client checks types itself (pydantic), so a wrong type has to be sent by hand.
    wrong_type = manifest()
    wrong_type["spec"]["containers"][0]["image"] = 5
    response = urllib3.request(
        "POST",
        f"{fake.url}/api/v1/namespaces/{namespace}/pods",
        json=wrong_type,
        headers={"Authorization": "Bearer fake-token"},
    )
    assert response.status == 422
    assert "spec.containers[0].image: Invalid value" in response.json()["message"]
    assert not [key for key in fake.pods if key[0] == namespace]

    named = manifest()
    named["metadata"] = {"name": "fixed"}
    fake.hold_pending = True
    api.create(namespace, named)
    with pytest.raises(ApiException) as raised:
        api.create(namespace, named)
    assert raised.value.status == 409
    assert api_error(raised)["reason"] == "AlreadyExists"


def test_get_list_and_delete(fake: FakeKube, api: Kube, namespace: str) -> None:
    for name, labels in (
        ("one", {"app": "a", "tier": "x"}),
        ("two", {"app": "a"}),
        ("three", {"app": "b", "tier": "y"}),
    ):
        fake.add_pod(
            {
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"containers": [{"name": CONTAINER, "image": "x"}]},
                "status": {"phase": "Succeeded"},
            }
        )
    fake.add_pod({"metadata": {"name": "elsewhere", "namespace": "other", "labels": {"app": "a"}}})

    def names(selector: str) -> list[str]:
        listed = api.list(namespace, selector)
        assert (listed["apiVersion"], listed["kind"]) == ("v1", "PodList")
        assert listed["metadata"]["resourceVersion"]
        return sorted(item["metadata"]["name"] for item in listed["items"])

    assert names("") == ["one", "three", "two"]
    assert names("app=a") == ["one", "two"]
    assert names("app==a,tier") == ["one"]
    assert names("app!=a") == ["three"]
    assert names("tier") == ["one", "three"]
    assert names("!tier") == ["two"]
    assert names("app in (a, b),tier notin (y)") == ["one", "two"]
    assert names("app=c") == []
    with pytest.raises(ApiException) as raised:
        api.list(namespace, "app=(")
    assert raised.value.status == 400
    # The client's models take list items, which carry no kind, as the real server's do.
    assert len(api.core.list_namespaced_pod(namespace, label_selector="app=a").items) == 2

    read = api.read(namespace, "one")
    assert (read["metadata"]["name"], phase(read)) == ("one", "Succeeded")
    assert api.core.read_namespace(namespace).status.phase == "Active"
    assert client.VersionApi(api.core.api_client).get_code().major == "1"

    deleted = api.delete(namespace, "one")
    assert deleted["metadata"]["name"] == "one"
    assert deleted["metadata"]["deletionTimestamp"]
    assert (namespace, "one") not in fake.pods
    for call in (api.read, api.delete):
        with pytest.raises(ApiException) as raised:
            call(namespace, "one")
        assert raised.value.status == 404
        assert api_error(raised)["reason"] == "NotFound"
        assert api_error(raised)["message"] == 'pods "one" not found'


def test_a_scripted_create_error_is_answered_as_a_status(
    fake: FakeKube, api: Kube, namespace: str
) -> None:
    message = (
        'pods "sbx-x" is forbidden: exceeded quota: sandbox-quota, requested: pods=1, '
        "used: pods=20, limited: pods=20"
    )
    fake.create_error = (403, "Forbidden", message)
    with pytest.raises(ApiException) as raised:
        api.create(namespace, manifest())
    assert raised.value.status == 403
    assert api_error(raised)["reason"] == "Forbidden"
    assert api_error(raised)["message"] == message
    assert not [key for key in fake.pods if key[0] == namespace]


def test_held_pods_follow_scripted_statuses(
    fake: FakeKube, api: Kube, configuration: client.Configuration, namespace: str
) -> None:
    fake.hold_pending = True
    name = api.create(namespace, manifest())["metadata"]["name"]
    assert phase(api.read(namespace, name)) == "Pending"
    assert fake.sandbox(namespace, name) is None
    with pytest.raises(ApiException) as raised:
        open_exec(configuration, name, ["true"], namespace=namespace)
    assert "Handshake status 400" in refusal(raised)
    assert "container not found" in refusal(raised)

    waiting = {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "ghcr.io/nope"'}
    container = {"name": CONTAINER, "ready": False, "restartCount": 0, "image": "x",
                 "imageID": "", "state": {"waiting": waiting}}  # fmt: skip
    fake.set_status(
        namespace,
        name,
        {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [container],
        },
    )
    assert api.read(namespace, name)["status"]["containerStatuses"] == [container]

    fake.start_pod(namespace, name)
    assert phase(api.read(namespace, name)) == "Running"
    assert exit_code(sh(configuration, name, "true", namespace=namespace).status) == 0

    evicted = {"phase": "Failed", "reason": "Evicted", "message": "disk usage"}
    fake.set_status(namespace, name, evicted)
    assert api.read(namespace, name)["status"] == evicted
    with pytest.raises(ApiException) as raised:
        open_exec(configuration, name, ["true"], namespace=namespace)
    assert "cannot exec into a container in a completed pod" in refusal(raised)


def test_requests_without_the_token_are_unauthorized(
    fake: FakeKube, pod: str, configuration: client.Configuration
) -> None:
    anonymous = client.Configuration(host=fake.url)
    kube = Kube(anonymous)
    with pytest.raises(ApiException) as raised:
        kube.read("exec", pod)
    kube.close()
    assert raised.value.status == 401
    with pytest.raises(ApiException) as raised:
        open_exec(anonymous, pod, ["true"])
    assert "Handshake status 401" in refusal(raised)


def test_deleting_a_pod_ends_its_commands_and_its_sandbox(
    fake: FakeKube, api: Kube, configuration: client.Configuration, namespace: str
) -> None:
    name = start_pod(api, namespace)
    ws = open_exec(
        configuration, name, ["/bin/sh", "-c", "touch /tmp/up; sleep 60"], namespace=namespace
    )
    record = fake.execs[-1]
    assert wait_for_file(configuration, name, "/tmp/up", namespace=namespace)
    api.delete(namespace, name)
    assert fake.sandbox(namespace, name) is None
    outcome = collect(ws)
    assert record.finished.is_set()
    assert exit_code(outcome.status) == 128 + 9
    with pytest.raises(ApiException) as raised:
        open_exec(configuration, name, ["true"], namespace=namespace)
    assert "Handshake status 404" in refusal(raised)


# Exec over v5 --------------------------------------------------------------------------------


def test_streams_and_exit_codes(
    fake: FakeKube, pod: str, configuration: client.Configuration
) -> None:
    ws = open_exec(configuration, pod, ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"])
    assert ws.subprotocol == V5
    outcome = collect(ws)
    assert (outcome.stdout, outcome.stderr) == (b"out\n", b"err\n")
    assert outcome.status is not None
    assert outcome.status["reason"] == "NonZeroExitCode"
    assert exit_code(outcome.status) == 3
    assert not outcome.still_open
    record = fake.execs[-1]
    assert (record.namespace, record.pod, record.container) == ("exec", pod, CONTAINER)
    assert record.argv == ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"]
    assert record.exit_code == 3

    assert sh(configuration, pod, "true").status == SUCCESS


def test_binary_output_and_input_arrive_intact(
    pod: str, configuration: client.Configuration
) -> None:
    written = sh(configuration, pod, "head -c 300000 /dev/urandom | tee /tmp/random | sha256sum")
    read = sh(configuration, pod, "cat /tmp/random")
    assert len(read.stdout) == 300_000
    assert hashlib.sha256(read.stdout).hexdigest() == written.stdout.split()[0].decode()

    every_byte = bytes(range(256)) * 1000
    echoed = run(configuration, pod, ["cat"], stdin=every_byte)
    assert echoed.stdout == every_byte
    assert exit_code(echoed.status) == 0


def test_v5_closing_stdin_ends_the_input(
    fake: FakeKube, pod: str, configuration: client.Configuration
) -> None:
    data = b"line one\nline two\n"
    outcome = run(configuration, pod, ["/bin/sh", "-c", "wc -l; cat"], stdin=data)
    assert outcome.stdout.split() == [b"2"]
    assert exit_code(outcome.status) == 0
    record = fake.execs[-1]
    assert record.stdin == data
    assert record.stdin_closed


def test_large_output_arrives_complete_over_many_frames(
    pod: str, configuration: client.Configuration
) -> None:
    outcome = run(configuration, pod, ["seq", "1", "700000"])
    expected = "".join(f"{n}\n" for n in range(1, 700_001)).encode()
    assert len(expected) > 200 * FRAME
    assert outcome.stdout == expected
    assert exit_code(outcome.status) == 0


def test_exec_is_refused_for_unknown_pods_and_containers(
    pod: str, configuration: client.Configuration
) -> None:
    with pytest.raises(ApiException) as raised:
        open_exec(configuration, "no-such-pod", ["true"])
    assert "Handshake status 404" in refusal(raised)
    assert 'pods \\"no-such-pod\\" not found' in refusal(raised)
    with pytest.raises(ApiException) as raised:
        open_exec(configuration, pod, ["true"], container="other")
    assert "Handshake status 400" in refusal(raised)


# Exec over v4, faults, and closing ---------------------------------------------------------


def test_a_v4_server_gives_no_end_of_input(
    fake: FakeKube, pod: str, configuration: client.Configuration
) -> None:
    fake.protocols = (V4,)
    ws = open_exec(configuration, pod, ["head", "-c", "5"], stdin=True)
    assert ws.subprotocol == V4
    ws.write_stdin(b"hello world")
    ws.close_channel(0)  # a no-op on v4: the client sends nothing
    outcome = collect(ws)
    assert outcome.stdout == b"hello"
    assert exit_code(outcome.status) == 0
    assert fake.execs[-1].stdin == b"hello world"
    assert not fake.execs[-1].stdin_closed

    # `cat` waits for an end of input that v4 cannot send, until the client gives up.
    ws = open_exec(configuration, pod, ["cat"], stdin=True)
    ws.write_stdin(b"abc")
    ws.close_channel(0)
    stuck = collect(ws, within=1.0)
    assert stuck.status is None
    assert stuck.still_open
    record = fake.execs[-1]
    # Leaving closed the command's input, and so it ended.
    assert record.finished.wait(WAIT)
    assert record.client_gone
    assert record.exit_code == 0


def test_no_shared_subprotocol_refuses_the_handshake(
    fake: FakeKube, pod: str, configuration: client.Configuration
) -> None:
    fake.protocols = ("v3.channel.k8s.io",)
    with pytest.raises(ApiException) as raised:
        open_exec(configuration, pod, ["true"])
    assert "Handshake status 403" in refusal(raised)


def test_a_dropped_connection_ends_without_a_status(
    fake: FakeKube, pod: str, configuration: client.Configuration
) -> None:
    fake.exec_fault = "drop"
    outcome = sh(configuration, pod, "echo partial; echo more >&2")
    assert outcome.status is None
    assert outcome.stdout == b"partial\n"
    assert outcome.stderr == b""
    # update() raised once; the next update() found the socket gone and marked it closed.
    assert isinstance(outcome.error, WebSocketConnectionClosedException)
    assert not outcome.still_open


def test_a_stalled_stream_sends_nothing(
    fake: FakeKube, pod: str, configuration: client.Configuration
) -> None:
    fake.exec_fault = "stall"
    outcome = sh(configuration, pod, "echo hi", within=1.0)
    assert outcome == Outcome(b"", b"", None, None, still_open=True)
    assert not fake.execs[-1].finished.is_set()
    fake.exec_fault = None
    assert sh(configuration, pod, "echo alive").stdout == b"alive\n"


def test_closing_the_stream_does_not_end_the_command(
    fake: FakeKube, pod: str, configuration: client.Configuration
) -> None:
    marker = f"/tmp/done-{secrets.token_hex(4)}"
    ws = open_exec(configuration, pod, ["/bin/sh", "-c", f"sleep 1; touch {marker}"])
    record = fake.execs[-1]
    close(ws)
    assert not record.finished.is_set()
    assert record.finished.wait(WAIT)
    assert record.client_gone
    assert record.exit_code == 0
    assert exit_code(run(configuration, pod, ["test", "-e", marker]).status) == 0


def test_kubeconfig_names_the_server_and_token(fake: FakeKube, tmp_path: Path) -> None:
    loaded = load(fake.kubeconfig(tmp_path / "config", namespace="sandboxes"))
    assert loaded.host == fake.url
    assert loaded.api_key["BearerToken"] == "Bearer fake-token"
    contexts: Any = config.list_kube_config_contexts  # untyped
    assert contexts(str(tmp_path / "config"))[1]["context"] == {
        "cluster": "fake",
        "user": "fake",
        "namespace": "sandboxes",
    }
