"""Sandbox backends by name, imported only when asked for."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import cast

from frognano.errors import ConfigError
from frognano.sandbox.base import Sandbox
from frognano.sandbox.options import SandboxOptions

# name -> "module:Class"; each class offers `async create(options) -> Sandbox`.
BACKENDS: dict[str, str] = {
    "local": "frognano.sandbox.local:LocalSandbox",
    "kubernetes": "frognano.sandbox.kubernetes.backend:KubernetesSandbox",
}


def check_backend(backend: str) -> str:
    """`backend`'s "module:Class", or ConfigError naming the backends there are."""
    try:
        return BACKENDS[backend]
    except KeyError:
        known = ", ".join(sorted(BACKENDS))
        raise ConfigError(
            f"sandbox backend {backend!r} is not available in this version (available: {known})"
        ) from None


async def create_sandbox(backend: str, options: SandboxOptions) -> Sandbox:
    """Start a sandbox of the named backend; close it (or use `async with`) when done."""
    target = check_backend(backend)
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    create = cast(Callable[[SandboxOptions], Awaitable[Sandbox]], cls.create)
    return await create(options)
