"""The seccomp filter local sandbox commands run under, compiled by libseccomp."""

from __future__ import annotations

import errno
import functools
import tempfile
from dataclasses import dataclass

from frognano.errors import SandboxUnavailable

# Kernel surface a build-and-test workload never needs and an attacker would probe first:
# keyrings, eBPF, perf, userfaultfd (a classic exploit aid), kexec and modules, every way to
# change the mount tree, handles that walk around bind mounts, raw port I/O, swap, reboot,
# the kernel log, accounting, quotas, and joining other namespaces.
DENIED = (
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd",
    "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module",
    "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at",
    "iopl", "ioperm",
    "swapon", "swapoff", "reboot", "syslog",
    "acct", "quotactl", "setns", "lookup_dcookie",
    "vhangup", "fanotify_init",
)  # fmt: skip
"""Denied outright with EPERM."""

CLONE_NEWUSER = 0x10000000
PTRACE_ATTACH = 16
PTRACE_SEIZE = 0x4206
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
_LOW32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Conditional:
    """A syscall denied only for some arguments (documented in docs/sandbox.md)."""

    syscall: str
    arg: int
    mask: int
    value: int
    errno: int
    why: str


CONDITIONAL = (
    Conditional("clone", 0, CLONE_NEWUSER, CLONE_NEWUSER, errno.EPERM, "a new user namespace"),
    Conditional("unshare", 0, CLONE_NEWUSER, CLONE_NEWUSER, errno.EPERM, "a new user namespace"),
    # Attaching to a running process; a child that asks to be traced (PTRACE_TRACEME, as
    # gdb and strace start programs) still works.
    Conditional("ptrace", 0, _LOW32, PTRACE_ATTACH, errno.EPERM, "attach to a process"),
    Conditional("ptrace", 0, _LOW32, PTRACE_SEIZE, errno.EPERM, "attach to a process"),
    # Typing into the terminal of whoever launched FrogNano.
    Conditional("ioctl", 1, _LOW32, TIOCSTI, errno.EPERM, "push terminal input"),
    Conditional("ioctl", 1, _LOW32, TIOCLINUX, errno.EPERM, "console control"),
)

NOT_IMPLEMENTED = ("clone3",)
"""Answered ENOSYS: clone3 passes its flags in memory seccomp cannot read, so a new user
namespace could hide there; libc falls back to clone, whose flags the filter does check."""


@functools.cache
def filter_program() -> bytes:
    """The compiled BPF program (native architecture; other architectures are killed).

    Raises SandboxUnavailable when libseccomp or its Python bindings are missing."""
    try:
        import pyseccomp as seccomp  # noqa: PLC0415 - loads libseccomp; only sandboxes need it
    except (ImportError, RuntimeError) as exc:
        raise SandboxUnavailable(
            f"the sandbox's seccomp filter needs libseccomp ({exc}); install it "
            "(Debian: apt-get install libseccomp2) and the pyseccomp package"
        ) from exc
    rules = seccomp.SyscallFilter(seccomp.ALLOW)

    def deny(action: int, name: str, *args: object) -> None:
        number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
        if number >= 0:  # else not a syscall of this architecture (iopl on arm64)
            rules.add_rule(action, number, *args)

    for name in DENIED:
        deny(seccomp.ERRNO(errno.EPERM), name)
    for cond in CONDITIONAL:
        deny(
            seccomp.ERRNO(cond.errno),
            cond.syscall,
            seccomp.Arg(cond.arg, seccomp.MASKED_EQ, cond.mask, cond.value),
        )
    for name in NOT_IMPLEMENTED:
        deny(seccomp.ERRNO(errno.ENOSYS), name)
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def denied_names() -> tuple[str, ...]:
    """Every syscall the filter refuses in some form, for docs and tests."""
    return (
        *DENIED,
        *dict.fromkeys(c.syscall for c in CONDITIONAL),
        *NOT_IMPLEMENTED,
    )
