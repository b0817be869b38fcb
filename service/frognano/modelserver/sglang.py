"""SGLang's command line for serving FrogNano-4B, built in one place for the CLI and the chart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "LAUNCH_MODULE",
    "MANAGED_FLAGS",
    "REASONING_PARSER",
    "TOOL_CALL_PARSER",
    "SGLangOptions",
    "conflicting_flags",
    "launch_args",
    "launch_command",
]

LAUNCH_MODULE = "sglang.launch_server"
"""Run as `python -m sglang.launch_server`."""

# FrogNano was trained against these parsers' output (harness.md section 3): without them the
# reasoning and the tool calls come back as raw text inside `content`.
REASONING_PARSER = "qwen3"
TOOL_CALL_PARSER = "qwen3_coder"


@dataclass(frozen=True)
class SGLangOptions:
    """The values that vary between deployments; the defaults are the Helm chart's defaults
    (tests/chart/test_chart_sglang_args.py checks that they stay equal), except `host`."""

    model_path: str
    """A folder holding the weights (or a Hugging Face repository id)."""
    served_model_name: str
    """The name clients ask for (FROGNANO_MODEL_NAME)."""
    host: str = "127.0.0.1"
    """Loopback by default: SGLang has no authentication unless given --api-key."""
    port: int = 30000
    tp_size: int = 1
    """Tensor-parallel degree: the number of GPUs the model is split over."""
    context_length: int = 131072
    """The context FrogNano-4B was evaluated with."""
    mem_fraction_static: float = 0.85
    """Share of GPU memory for the weights and the KV cache."""
    extra_args: tuple[str, ...] = ()
    """Further SGLang arguments, appended as given."""


def _number(value: float) -> str:
    # As Helm prints a number (Go's %v): 1.0 as "1", 0.85 as "0.85".
    if value == int(value):
        return str(int(value))
    return repr(value)


def launch_args(options: SGLangOptions) -> list[str]:
    """The arguments after `python -m sglang.launch_server`, in the chart's order."""
    return [
        "--model-path",
        options.model_path,
        "--served-model-name",
        options.served_model_name,
        "--host",
        options.host,
        "--port",
        str(options.port),
        "--tp-size",
        str(options.tp_size),
        "--context-length",
        str(options.context_length),
        "--reasoning-parser",
        REASONING_PARSER,
        "--tool-call-parser",
        TOOL_CALL_PARSER,
        "--mem-fraction-static",
        _number(options.mem_fraction_static),
        "--enable-metrics",
        "--enable-cache-report",
        *options.extra_args,
    ]


def launch_command(python: str, options: SGLangOptions) -> list[str]:
    """The whole command line, started with the interpreter `python`."""
    return [python, "-m", LAUNCH_MODULE, *launch_args(options)]


MANAGED_FLAGS: frozenset[str] = frozenset(
    arg for arg in launch_args(SGLangOptions("", "")) if arg.startswith("--")
)
"""The flags `launch_args` always sets."""

# SGLang's other spellings of managed flags (`ServerArgs` aliases).
_ALIASES = {"--model": "--model-path", "--tensor-parallel-size": "--tp-size"}


def conflicting_flags(extra_args: Sequence[str]) -> list[str]:
    """The flags in `extra_args` that `launch_args` already sets (`--port 1`, `--port=1`,
    or an alias such as `--tensor-parallel-size`). SGLang keeps the last value given, so an
    extra one would silently override FrogNano's."""
    found: list[str] = []
    for arg in extra_args:
        flag = arg.split("=", 1)[0]
        if (flag in MANAGED_FLAGS or flag in _ALIASES) and flag not in found:
            found.append(flag)
    return found
