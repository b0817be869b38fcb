"""An OCI seccomp profile compiled with libseccomp the way runc reads one, for a container
that has no capabilities: enough to run a real profile in a local sandbox."""

from __future__ import annotations

import tempfile
from typing import Any

import pyseccomp

_OPS = {
    "SCMP_CMP_NE": pyseccomp.NE,
    "SCMP_CMP_LT": pyseccomp.LT,
    "SCMP_CMP_LE": pyseccomp.LE,
    "SCMP_CMP_EQ": pyseccomp.EQ,
    "SCMP_CMP_GE": pyseccomp.GE,
    "SCMP_CMP_GT": pyseccomp.GT,
    "SCMP_CMP_MASKED_EQ": pyseccomp.MASKED_EQ,
}


def _action(name: str, errno_ret: int | None, default_errno: int) -> int:
    if name == "SCMP_ACT_ALLOW":
        return int(pyseccomp.ALLOW)
    if name == "SCMP_ACT_ERRNO":
        return int(pyseccomp.ERRNO(default_errno if errno_ret is None else errno_ret))
    if name in ("SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD"):
        return int(pyseccomp.KILL)
    raise ValueError(f"action {name} is not handled here")


def compile_profile(profile: dict[str, Any]) -> bytes:
    """The BPF program runc would load for `profile` in a container without capabilities:
    rules that need a capability are left out, rules that exclude one apply; names unknown
    to libseccomp are skipped, as runc skips them."""
    default_errno = int(profile.get("defaultErrnoRet", 1))
    default = _action(profile["defaultAction"], None, default_errno)
    rules = pyseccomp.SyscallFilter(default)
    for rule in profile["syscalls"]:
        if (rule.get("includes") or {}).get("caps"):
            continue
        action = _action(rule["action"], rule.get("errnoRet"), default_errno)
        if action == default:
            continue  # runc drops rules that repeat the default action
        args = [
            pyseccomp.Arg(arg["index"], _OPS[arg["op"]], arg["value"], arg.get("valueTwo", 0))
            for arg in rule.get("args") or []
        ]
        for name in rule["names"]:
            number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
            if number < 0:
                continue
            rules.add_rule(action, number, *args)
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()
