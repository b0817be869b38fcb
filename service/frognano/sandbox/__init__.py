"""Sandboxes: where every command the agent chooses runs, isolated from the host."""

from frognano.sandbox.base import (
    DEFAULT_OUTPUT_LIMIT,
    DEFAULT_TIMEOUT,
    ExecResult,
    Sandbox,
)
from frognano.sandbox.options import SandboxLimits, SandboxOptions, SandboxSpec
from frognano.sandbox.paths import HOME, TMP, WORKSPACE
from frognano.sandbox.registry import BACKENDS, create_sandbox

__all__ = [
    "BACKENDS",
    "DEFAULT_OUTPUT_LIMIT",
    "DEFAULT_TIMEOUT",
    "HOME",
    "TMP",
    "WORKSPACE",
    "ExecResult",
    "Sandbox",
    "SandboxLimits",
    "SandboxOptions",
    "SandboxSpec",
    "create_sandbox",
]
