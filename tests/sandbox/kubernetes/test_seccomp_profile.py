"""The Localhost seccomp profile for sandbox pods: built on a real runtime default, and run."""

from __future__ import annotations

import copy
import errno
import json
import os
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from frognano.errors import ConfigError
from frognano.sandbox.kubernetes.pod import PodOptions, sandbox_pod
from frognano.sandbox.kubernetes.seccomp import PTRACE_REQUESTS, localhost_profile
from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.seccomp import DENIED
from tests.conftest import STRICT
from tests.sandbox.kubernetes.oci_seccomp import compile_profile
from tests.sandbox.test_hardening import EXTENSION, WORKLOAD, _syscalls, _wheel

ENV_VAR = "FNTEST_OCI_SECCOMP"
CLONE_NEWUSER = 0x10000000

# Docker's default in miniature: deny by default; clone only without namespace flags.
DOCKER_LIKE: dict[str, Any] = {
    "defaultAction": "SCMP_ACT_ERRNO",
    "defaultErrnoRet": 1,
    "syscalls": [
        {
            "names": ["read", "write", "keyctl", "mount", "ptrace", "ioctl"],
            "action": "SCMP_ACT_ALLOW",
        },
        {
            "names": ["clone"],
            "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 0, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
            "excludes": {"caps": ["CAP_SYS_ADMIN"]},
        },
        {
            "names": ["unshare", "setns"],
            "action": "SCMP_ACT_ALLOW",
            "includes": {"caps": ["CAP_SYS_ADMIN"]},
        },
        {"names": ["kexec_load"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
    ],
}  # fmt: skip


def _allowed(profile: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for rule in profile["syscalls"]:
        if rule["action"] == "SCMP_ACT_ALLOW":
            for name in rule["names"]:
                found.setdefault(name, []).append(rule)
    return found


def test_the_list_is_added_to_a_deny_by_default_profile() -> None:
    base = copy.deepcopy(DOCKER_LIKE)
    profile = localhost_profile(base)
    assert base == DOCKER_LIKE  # the input is not changed
    allowed = _allowed(profile)
    assert {"read", "write", "ioctl"} <= set(allowed)
    assert not set(DENIED) & set(allowed)
    # clone keeps Docker's own condition (which already masks CLONE_NEWUSER) untouched.
    assert [rule.get("args") for rule in allowed["clone"]] == [DOCKER_LIKE["syscalls"][1]["args"]]
    # ptrace: every request but attaching to a running process.
    requests = {rule["args"][0]["value"] for rule in allowed["ptrace"]}
    assert requests == set(PTRACE_REQUESTS)
    assert not {16, 0x4206} & requests
    # unshare stays with its capability condition, narrowed to leave out new user namespaces.
    (unshare,) = allowed["unshare"]
    assert unshare["includes"] == {"caps": ["CAP_SYS_ADMIN"]}
    assert unshare["args"] == [
        {"index": 0, "value": CLONE_NEWUSER, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}
    ]
    # One rule per denied name, so no runtime sees two answers for one syscall.
    denying = [rule for rule in profile["syscalls"] if set(rule["names"]) & set(DENIED)]
    assert denying == [{"names": list(DENIED), "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]
    assert {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38} in profile["syscalls"]


def test_profiles_it_cannot_extend_safely_are_refused() -> None:
    with pytest.raises(ConfigError, match="allows every syscall it does not name"):
        localhost_profile({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": []})
    with pytest.raises(ConfigError, match="no `syscalls` list"):
        localhost_profile({"defaultAction": "SCMP_ACT_ERRNO"})
    odd = copy.deepcopy(DOCKER_LIKE)
    odd["syscalls"][1]["args"] = [{"index": 1, "value": 0, "op": "SCMP_CMP_EQ"}]
    with pytest.raises(ConfigError, match="cannot narrow to exclude CLONE_NEWUSER"):
        localhost_profile(odd)


def test_a_pod_with_a_localhost_profile_uses_it_everywhere() -> None:
    pod = sandbox_pod(PodOptions(seccomp_profile="profiles/frognano-sandbox.json"))
    expected = {"type": "Localhost", "localhostProfile": "profiles/frognano-sandbox.json"}
    assert pod["spec"]["securityContext"]["seccompProfile"] == expected
    assert pod["spec"]["containers"][0]["securityContext"]["seccompProfile"] == expected
    kubernetes_validate.validate(pod, "1.33", strict=True)


def _base() -> dict[str, Any]:
    path = os.environ.get(ENV_VAR)
    if not path or not Path(path).is_file():
        message = (
            f"{ENV_VAR} must name a runtime's default seccomp profile (Debian: apt-get download "
            "golang-github-containers-common; dpkg -x it; usr/share/containers/seccomp.json)"
        )
        if STRICT:
            pytest.fail(message)
        pytest.skip(message)
    base: dict[str, Any] = json.loads(Path(path).read_text())
    return base


async def test_the_profile_runs_and_denies_the_list(sandbox: LocalSandbox, tmp_path: Path) -> None:
    """CRI-O's real default profile, extended, compiled as runc would, and run: every denied
    call fails while git, pip, make, cc and pytest still work. The base alone lets some of
    the same calls through."""
    base = _base()
    original = sandbox.layout.seccomp.read_bytes()
    try:
        sandbox.layout.seccomp.write_bytes(compile_profile(base))
        through_base = await _syscalls(sandbox)
        sandbox.layout.seccomp.write_bytes(compile_profile(localhost_profile(base)))
        extended = await _syscalls(sandbox)
        wheel = _wheel(tmp_path)
        await sandbox.write_file(f"/tmp/{wheel.name}", wheel.read_bytes())
        await sandbox.write_file("/workspace/ext.c", EXTENSION.encode())
        has_pytest = (await sandbox.exec("python3 -c 'import pytest'")).ok
        script = WORKLOAD if has_pytest else WORKLOAD.rsplit("mkdir t", 1)[0]
        work = await sandbox.exec(script, timeout=300)
    finally:
        sandbox.layout.seccomp.write_bytes(original)
    denied = {errno.EPERM, errno.ENOSYS}
    # ioctl stays as the runtime has it: a pod's commands run without a terminal, so there
    # is nobody's input to push (docs/sandbox.md); the local filter refuses TIOCSTI.
    through = {name for name, codes in extended.items() if not set(codes) <= denied}
    assert through == {"ioctl"}
    let_through = {name for name, codes in through_base.items() if not set(codes) <= denied}
    assert let_through >= {"keyctl", "setns", "name_to_handle_at", "clone3", "ptrace"}, let_through
    assert work.exit_code == 0, work.output
    assert "wheel 42" in work.output
    assert "extension 42" in work.output
