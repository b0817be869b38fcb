"""Built environments in sandbox pods, through the real client against the fake API server:
a pod's /environment filled by its init container and read-only to the sandbox, a fresh copy
in every pod, a build pod's writable /environment copied back, and the manifests."""

from __future__ import annotations

import dataclasses
import io
import os
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from frognano.errors import EnvironmentBuildError
from frognano.sandbox import SandboxOptions, SandboxSpec, create_sandbox
from frognano.sandbox.kubernetes.backend import KubernetesSandbox
from frognano.sandbox.kubernetes.environment import (
    _unpack_from,
    host_aliases,
    pack_folder,
    unpack_untrusted,
)
from frognano.sandbox.kubernetes.pod import FILLER, FILLER_UID, PodOptions, sandbox_pod
from tests.fakes.kube import FakeKube, running_fake_kube

pytestmark = pytest.mark.timeout(180)

NAMESPACE = "frognano-sandbox"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeKube]:
    with running_fake_kube() as server:
        yield server


def options(fake: FakeKube, tmp_path: Path, **more: object) -> SandboxOptions:
    base = SandboxOptions(
        spec=SandboxSpec(run_id="20261204-120000-abcdef"),
        kubeconfig=fake.kubeconfig(tmp_path / "kubeconfig"),
        k8s_namespace=NAMESPACE,
        k8s_start_timeout=120,
    )
    return dataclasses.replace(base, **more)  # type: ignore[arg-type]


@pytest.fixture
def built(tmp_path: Path) -> Path:
    """A folder as the cache keeps one: a module, a script, a link to the image's python."""
    env = tmp_path / "env"
    (env / "lib" / "site-packages").mkdir(parents=True)
    (env / "bin").mkdir()
    (env / "lib" / "site-packages" / "fnprobe.py").write_text("VALUE = 42\n")
    script = env / "bin" / "fn-hello"
    script.write_text("#!/bin/sh\necho hello from the environment\n")
    script.chmod(0o755)
    (env / "bin" / "python-link").symlink_to("/usr/bin/python3")
    return env


async def test_a_filled_environment_is_readable_first_on_path_and_not_writable(
    fake: FakeKube, tmp_path: Path, built: Path
) -> None:
    wanted = options(fake, tmp_path, environment=built)
    async with await create_sandbox("kubernetes", wanted) as box:
        assert isinstance(box, KubernetesSandbox)
        pod = fake.created[-1]
        (init,) = pod["spec"]["initContainers"]
        assert init["name"] == FILLER
        assert init["securityContext"]["runAsUser"] == FILLER_UID
        mount = next(
            m for m in pod["spec"]["containers"][0]["volumeMounts"] if m["name"] == "environment"
        )
        assert mount == {"name": "environment", "mountPath": "/environment", "readOnly": True}
        seen = await box.exec(
            "fn-hello; cat /environment/lib/site-packages/fnprobe.py; "
            "readlink /environment/bin/python-link; echo VENV=$VIRTUAL_ENV; "
            "ls -A /environment; stat -c '%a %n' /environment/bin/fn-hello "
            "/environment/lib/site-packages/fnprobe.py"
        )
        assert seen.ok, seen.output
        assert "hello from the environment" in seen.output
        assert "VALUE = 42" in seen.output
        assert "/usr/bin/python3" in seen.output
        assert "VENV=/environment" in seen.output
        assert ".frognano-filled" not in seen.output
        assert "755 /environment/bin/fn-hello" in seen.output
        assert "644 /environment/lib/site-packages/fnprobe.py" in seen.output
        # The sandbox can change nothing of it: not a file, not the folder, not a new name.
        for attempt in (
            "echo x >> /environment/lib/site-packages/fnprobe.py",
            "rm -f /environment/bin/fn-hello",
            "touch /environment/new",
            "mkdir /environment/lib/new",
            "chmod 777 /environment/bin/fn-hello",
        ):
            tried = await box.exec(attempt)
            assert not tried.ok, attempt
        again = await box.exec("cat /environment/lib/site-packages/fnprobe.py; ls /environment")
        assert again.output.startswith("VALUE = 42\n"), again.output
        assert "new" not in again.output.split()
    assert (built / "lib" / "site-packages" / "fnprobe.py").read_text() == "VALUE = 42\n"


async def test_every_pod_gets_its_own_copy(fake: FakeKube, tmp_path: Path, built: Path) -> None:
    wanted = options(fake, tmp_path, environment=built)
    async with await create_sandbox("kubernetes", wanted) as first:
        assert isinstance(first, KubernetesSandbox)
        folder = fake.environment_folder(first.namespace, first.name)
        assert folder is not None
        # Whatever happens to one pod's copy (here: from outside, as no sandbox can)...
        (folder / "lib" / "site-packages" / "fnprobe.py").write_text("VALUE = 'tampered'\n")
        async with await create_sandbox("kubernetes", wanted) as second:
            seen = await second.exec("cat /environment/lib/site-packages/fnprobe.py")
            # ...the next pod starts from the cache's.
            assert seen.output == "VALUE = 42\n"


async def test_a_build_pod_has_a_writable_environment_that_comes_back(
    fake: FakeKube, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    staging.mkdir()
    wanted = options(
        fake,
        tmp_path,
        environment=staging,
        environment_writable=True,
        index_urls=("http://localhost:9/simple/", "http://127.0.0.1:8/extra/"),
        spec=SandboxSpec(run_id="20261204-120000-abcdef", purpose="environment"),
    )
    async with await create_sandbox("kubernetes", wanted) as box:
        assert isinstance(box, KubernetesSandbox)
        spec = fake.created[-1]["spec"]
        assert "initContainers" not in spec
        assert {"ip": "127.0.0.1", "hostnames": ["localhost"]} in spec["hostAliases"]
        assert all(alias["ip"] != "127.0.0.1" or alias["hostnames"] == ["localhost"]
                   for alias in spec["hostAliases"])  # fmt: skip
        made = await box.exec(
            "python3 -m venv --without-pip /environment && echo 'X = 1' > "
            "/environment/mine.py && mkdir /environment/sub && ln -s ../mine.py "
            "/environment/sub/link"
        )
        assert made.ok, made.output
        await box.export_environment(staging, max_bytes=1 << 30, timeout=60)
    assert (staging / "mine.py").read_text() == "X = 1\n"
    assert os.readlink(staging / "sub" / "link") == "../mine.py"
    assert (staging / "bin" / "python").is_symlink()
    assert (staging / "pyvenv.cfg").exists()


def test_the_manifests_say_who_may_write_and_who_may_go_out() -> None:
    build = sandbox_pod(
        PodOptions(
            purpose="environment",
            environment="build",
            host_aliases=(("10.0.0.7", ("pypi.internal",)),),
        )
    )
    spec = build["spec"]
    assert build["metadata"]["labels"]["frognano.dev/purpose"] == "environment"
    assert spec["hostAliases"] == [{"ip": "10.0.0.7", "hostnames": ["pypi.internal"]}]
    assert spec["dnsPolicy"] == "None"
    assert spec["dnsConfig"] == {"nameservers": ["127.0.0.1"]}
    (container,) = spec["containers"]
    assert {"name": "environment", "mountPath": "/environment", "readOnly": False} in container[
        "volumeMounts"
    ]
    for purpose in ("agent", "verify-patched"):
        used = sandbox_pod(PodOptions(purpose=purpose, environment="filled"))["spec"]
        assert "hostAliases" not in used
        assert used["dnsPolicy"] == "None"
        mounts = [m for m in used["containers"][0]["volumeMounts"] if m["name"] == "environment"]
        assert mounts == [{"name": "environment", "mountPath": "/environment", "readOnly": True}]
        (init,) = used["initContainers"]
        assert init["securityContext"]["runAsUser"] != used["securityContext"]["runAsUser"]
        assert init["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert init["securityContext"]["readOnlyRootFilesystem"] is True
        assert init["securityContext"]["allowPrivilegeEscalation"] is False


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> io.BytesIO:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for info, body in members:
            info.size = len(body) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(body) if info.isfile() else None)
    data.seek(0)
    return data


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o4777
    return info


@pytest.mark.parametrize(
    "members",
    [
        [(_member("../outside"), b"x")],
        [(_member("esc", tarfile.SYMTYPE, "/etc"), b""), (_member("esc/passwd"), b"x")],
        [(_member("hard", tarfile.LNKTYPE, "../../etc/passwd"), b"")],
        [(_member("dev", tarfile.CHRTYPE), b"")],
        [(_member("big"), b"x" * 2048)],
    ],
    ids=["dotdot", "through-a-link", "hard-link-out", "device", "too-big"],
)
def test_an_archive_from_a_build_pod_cannot_reach_out(
    tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes]]
) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(EnvironmentBuildError):
        unpack_untrusted(_tar(*members), dest, max_bytes=1024)
    assert not (tmp_path / "outside").exists()


def test_modes_are_tamed_and_links_kept(tmp_path: Path, built: Path) -> None:
    archive, _ = pack_folder(built)
    dest = tmp_path / "dest"
    dest.mkdir()
    with archive:
        unpack_untrusted(archive, dest, max_bytes=1 << 20)
    assert os.readlink(dest / "bin" / "python-link") == "/usr/bin/python3"
    assert (dest / "bin" / "fn-hello").stat().st_mode & 0o7777 == 0o755
    setuid = _tar((_member("s"), b"#!/bin/sh\n"))
    unpack_untrusted(setuid, dest, max_bytes=1 << 20)
    assert (dest / "s").stat().st_mode & 0o7777 == 0o755
    # An absolute name lands inside, as a relative one.
    unpack_untrusted(_tar((_member("/abs"), b"x")), dest, max_bytes=1 << 20)
    assert (dest / "abs").read_bytes() == b"x"


def test_the_padding_after_the_archive_is_read_not_refused(tmp_path: Path) -> None:
    # GNU tar pads past the end marker, where tarfile stops: the download must still take
    # every byte the pod sends, or the stream breaks before the pod's exit status arrives.
    archive = _tar((_member("f"), b"x")).getvalue() + bytes(1 << 20)
    read_fd, write_fd = os.pipe()
    failed: list[BaseException] = []
    worker = threading.Thread(target=_unpack_from, args=(read_fd, tmp_path, 1 << 20, failed))
    worker.start()
    with os.fdopen(write_fd, "wb") as sink:
        sink.write(archive)  # BrokenPipeError here would fail the test
    worker.join(30)
    assert failed == []
    assert (tmp_path / "f").read_bytes() == b"x"


async def test_only_host_names_become_host_aliases() -> None:
    aliases = await host_aliases(
        ("http://127.0.0.1:3141/simple/", "https://localhost/simple/", "http://LOCALHOST:1/x/")
    )
    assert ("127.0.0.1", ("localhost",)) in aliases  # once, lowercased
    assert all(names == ("localhost",) for _, names in aliases)
