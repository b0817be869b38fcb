"""Probes run inside a sandbox: syscalls the filter must refuse, and what the mounts show."""

from __future__ import annotations

import json

import pyseccomp

# (syscall, arguments): each call is harmless when allowed (bad arguments, missing paths,
# nonexistent pids), so a run without the filter shows what the kernel itself answers.
# Strings are {"s": text}; everything else is an integer.
SYSCALLS: list[tuple[str, list[object]]] = [
    ("keyctl", [0, -3, 0]),  # KEYCTL_GET_KEYRING_ID of the session keyring
    ("add_key", [{"s": "user"}, {"s": "frognano-probe"}, {"s": "x"}, 1, -3]),
    ("request_key", [{"s": "user"}, {"s": "frognano-none"}, 0, 0]),
    ("bpf", [0x7FFF, 0, 0]),
    ("perf_event_open", [0, 0, -1, -1, 0]),
    ("userfaultfd", [0xFFFF]),
    ("kexec_load", [0, 0, 0, 0]),
    ("kexec_file_load", [-1, -1, 0, 0, 0]),
    ("init_module", [0, 0, {"s": ""}]),
    ("finit_module", [-1, {"s": ""}, 0]),
    ("delete_module", [{"s": "frognano_none"}, 0]),
    ("mount", [0, {"s": "/nonexistent-frognano"}, 0, 0, 0]),
    ("umount2", [{"s": "/nonexistent-frognano"}, 0]),
    ("pivot_root", [{"s": "/nonexistent-a"}, {"s": "/nonexistent-b"}]),
    ("chroot", [{"s": "/nonexistent-frognano"}]),
    ("fsopen", [{"s": "frognano-none"}, 0]),
    ("fsconfig", [-1, 0, 0, 0, 0]),
    ("fsmount", [-1, 0, 0]),
    ("fspick", [-1, {"s": ""}, 0]),
    ("move_mount", [-1, {"s": ""}, -1, {"s": ""}, 0]),
    ("open_tree", [-1, {"s": "/nonexistent-frognano"}, 0]),
    ("mount_setattr", [-1, {"s": ""}, 0, 0, 0]),
    ("open_by_handle_at", [-1, 0, 0]),
    ("name_to_handle_at", [-100, {"s": "/"}, 0, 0, 0]),
    ("iopl", [4]),
    ("ioperm", [0x10000, 1, 1]),
    ("swapon", [{"s": "/nonexistent-frognano"}, 0]),
    ("swapoff", [{"s": "/nonexistent-frognano"}]),
    ("reboot", [0, 0, 0, 0]),
    ("syslog", [10, 0, 0]),  # SYSLOG_ACTION_SIZE_BUFFER
    ("acct", [{"s": "/nonexistent-frognano"}]),
    ("quotactl", [0, 0, 0, 0]),
    ("setns", [-1, 0]),
    ("vhangup", []),
    ("fanotify_init", [0, 0]),
    # CLONE_NEWUSER with CLONE_THREAD alone: an invalid combination the kernel refuses with
    # EINVAL, so nothing is ever cloned; the filter answers first.
    ("clone", [0x10000000 | 0x10000, 0, 0, 0, 0]),
    ("clone3", [0, 0]),
    ("ptrace", [16, 0x7FFFFFFF, 0, 0]),  # PTRACE_ATTACH to a pid that does not exist
    ("ptrace", [0x4206, 0x7FFFFFFF, 0, 0]),  # PTRACE_SEIZE
    ("ioctl", [0, 0x5412, {"s": "x"}]),  # TIOCSTI on stdin
    ("ioctl", [0, 0x541C, {"s": "x"}]),  # TIOCLINUX
    ("unshare", [0x10000000]),  # last: when allowed, the probe is in a new user namespace
]

# Inside the sandbox: call each syscall, print {index: errno} (0 when it succeeded).
SYSCALL_PROBE = r"""
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
calls = json.loads(sys.argv[1])
out = {}
for index, (number, args) in enumerate(calls):
    real = [ctypes.c_char_p(a["s"].encode()) if isinstance(a, dict) else ctypes.c_long(a)
            for a in args]
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *real)
    out[index] = ctypes.get_errno() if result < 0 else 0
print(json.dumps(out))
"""


def syscall_table() -> str:
    """The probe's argument: [number, args] per entry of SYSCALLS on this architecture."""
    table = []
    for name, args in SYSCALLS:
        number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
        assert number >= 0, f"{name} is not a syscall here"
        table.append([number, args])
    return json.dumps(table)


def allow_all_program() -> bytes:
    """A seccomp program that allows everything: the control run."""
    import tempfile

    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


# Inside the sandbox: every mount point with its source root and file system type.
MOUNTS_PROBE = r"""
import json
rows = []
for line in open("/proc/self/mountinfo"):
    left, _, right = line.partition(" - ")
    fields = left.split()
    rows.append({"root": fields[3], "point": fields[4], "options": fields[5],
                 "fstype": right.split()[0]})
print(json.dumps(rows))
"""
