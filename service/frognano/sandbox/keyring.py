"""A fresh, empty session keyring for each sandbox launcher, so none inherits the caller's."""

from __future__ import annotations

import ctypes
import errno
import functools
import platform

from frognano.log import get_logger

log = get_logger(__name__)

KEYCTL_JOIN_SESSION_KEYRING = 1
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "ppc64le": 271, "s390x": 280}


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def join_fresh_session_keyring() -> bool:
    """Give the calling thread a new anonymous session keyring, which the processes it starts
    inherit. The keys of the session FrogNano was started from stay out of reach (the seccomp
    filter also refuses every key syscall inside). False where the kernel refuses: a
    container whose own seccomp profile denies keyctl gives its processes no keyring access
    either, so nothing is inherited that could be read."""
    number = _SYS_KEYCTL.get(platform.machine())
    if number is None:
        _warn_once("this architecture's keyctl number is unknown")
        return False
    if _libc().syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None) >= 0:
        return True
    code = ctypes.get_errno()
    _warn_once(errno.errorcode.get(code, str(code)))
    return False


@functools.cache
def _warn_once(reason: str) -> None:
    log.warning("sandbox.keyring_not_replaced", reason=reason)
