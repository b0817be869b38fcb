"""A Localhost seccomp profile for sandbox pods: the runtime's default plus FrogNano's list."""

from __future__ import annotations

import copy
import errno
import json
from pathlib import Path
from typing import Any

from frognano.errors import ConfigError
from frognano.sandbox.seccomp import CLONE_NEWUSER, DENIED, PTRACE_ATTACH, PTRACE_SEIZE

_ALLOWING = ("SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_NOTIFY")
# ptrace requests a profile still allows: every request of ptrace(2) but PTRACE_ATTACH and
# PTRACE_SEIZE, which attach to a process that did not ask for it. (A rule cannot say
# "anything but these two": libseccomp takes one comparison per argument in a rule.)
PTRACE_REQUESTS = tuple(
    request
    for request in (*range(34), *range(0x4200, 0x4210))
    if request not in (PTRACE_ATTACH, PTRACE_SEIZE)
)
_NAMESPACE_CALLS = ("clone", "unshare")
"""Allowed only without CLONE_NEWUSER (arg 0 holds the flags of both)."""


def _blocks_newuser(rule: dict[str, Any]) -> bool:
    """Whether a rule's arguments already keep CLONE_NEWUSER out (Docker's default does)."""
    return any(
        arg.get("index") == 0
        and arg.get("op") == "SCMP_CMP_MASKED_EQ"
        and int(arg.get("value", 0)) & CLONE_NEWUSER
        and int(arg.get("valueTwo", 0)) & CLONE_NEWUSER == 0
        for arg in rule.get("args") or []
    )


def localhost_profile(base: dict[str, Any], source: str = "the base profile") -> dict[str, Any]:
    """`base` (an OCI seccomp profile, as containerd's or CRI-O's default) with everything
    FrogNano's local filter denies denied too. Raises ConfigError when `base` is not a
    profile this can extend safely (its default action allows, or a rule cannot be read)."""
    if not isinstance(base, dict) or not isinstance(base.get("syscalls"), list):
        raise ConfigError(f"{source} is not an OCI seccomp profile: it has no `syscalls` list")
    if base.get("defaultAction") in _ALLOWING:
        raise ConfigError(
            f"{source} allows every syscall it does not name (defaultAction "
            f"{base['defaultAction']}); start from a deny-by-default profile such as "
            "containerd's or CRI-O's default"
        )
    profile = copy.deepcopy(base)
    rules: list[dict[str, Any]] = []
    for rule in profile["syscalls"]:
        names = rule.get("names")
        if not isinstance(names, list) or not isinstance(rule.get("action"), str):
            raise ConfigError(f"{source} has a rule without `names` or `action`: {rule!r}")
        if rule["action"] not in _ALLOWING:
            # Each denied name gets exactly one rule, below: two unconditional rules with
            # different results for one syscall would make the runtime refuse the profile.
            kept = [name for name in names if name not in DENIED and name != "clone3"]
            if kept:
                rule["names"] = kept
                rules.append(rule)
            continue
        kept = [
            name
            for name in names
            if name not in DENIED
            and name not in ("clone3", "ptrace")
            and not (name in _NAMESPACE_CALLS and not _blocks_newuser(rule))
        ]
        for name in names:
            if name in _NAMESPACE_CALLS and not _blocks_newuser(rule):
                if rule.get("args"):
                    raise ConfigError(
                        f"{source} allows {name} under conditions this cannot narrow to "
                        f"exclude CLONE_NEWUSER: {rule['args']!r}; edit that rule by hand"
                    )
                narrowed = {key: value for key, value in rule.items() if key != "names"}
                narrowed["names"] = [name]
                narrowed["args"] = [
                    {"index": 0, "value": CLONE_NEWUSER, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}
                ]
                rules.append(narrowed)
            if name == "ptrace":
                for request in PTRACE_REQUESTS:
                    narrowed = {key: value for key, value in rule.items() if key != "names"}
                    narrowed["names"] = ["ptrace"]
                    narrowed["args"] = [{"index": 0, "value": request, "op": "SCMP_CMP_EQ"}]
                    rules.append(narrowed)
        if kept:
            rule["names"] = kept
            rules.append(rule)
    rules.append({"names": list(DENIED), "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM})
    # clone3 hides its flags from seccomp: ENOSYS makes libc fall back to clone.
    rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS})
    profile["syscalls"] = rules
    return profile


def write_profile(base_path: Path, out: Path) -> dict[str, Any]:
    """Read `base_path`, write the extended profile to `out` (JSON), and return it."""
    try:
        base = json.loads(base_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the base seccomp profile {base_path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{base_path} is not JSON: {exc}") from exc
    profile = localhost_profile(base, str(base_path))
    out.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
    return profile
