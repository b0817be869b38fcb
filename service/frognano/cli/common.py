"""What every CLI command shares: consoles, failing with a message, running a coroutine."""

# What every CLI command shares: consoles, failing with a message, running a coroutine, the
# settings the root command loaded.

from __future__ import annotations

import asyncio
import functools
import signal
import sys
from collections.abc import Coroutine
from typing import Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from frognano.errors import ConfigError, FrogNanoError, SandboxUnavailable, UnsafePathError
from frognano.settings import Settings
from frognano.terminal import printable

T = TypeVar("T")


@functools.cache
def console(stderr: bool = False) -> Console:
    # Made on first use, not at import: a Console reads the environment (NO_COLOR, COLUMNS).
    return Console(stderr=stderr)


def fail(message: str, code: int) -> NoReturn:
    """Print `message` as an error and exit with `code`. The message is text, never markup,
    and its control characters are shown (it may quote a repository, a model or a server)."""
    line = Text.assemble(("error:", "bold red"), " ", printable(message))
    console(stderr=True).print(line, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def say(console: Console, message: str) -> None:
    """Print `message` as text, never markup, its control characters shown."""
    console.print(Text(printable(message)), highlight=False, soft_wrap=True)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine so that SIGTERM, like Ctrl-C, cancels it and its cleanup runs."""

    async def main() -> T:
        task = asyncio.ensure_future(coro)
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await task

    try:
        return asyncio.run(main())
    except (ConfigError, SandboxUnavailable, UnsafePathError) as exc:
        fail(str(exc), 2)
    except FrogNanoError as exc:
        fail(str(exc), 1)
    except Exception as exc:
        unreachable = _unreachable(exc)
        if unreachable is None:
            raise
        fail(unreachable, 1)
    except KeyboardInterrupt:
        console(stderr=True).print("interrupted")
        raise typer.Exit(130) from None
    except asyncio.CancelledError:
        console(stderr=True).print("terminated")
        raise typer.Exit(143) from None


def _unreachable(exc: Exception) -> str | None:
    """One line for an error that says a server did not answer (the Kubernetes API through
    urllib3, a refused or reset connection), or None for any other error."""
    if isinstance(exc, ConnectionError):
        return f"a server did not answer: {exc}"
    urllib3 = sys.modules.get("urllib3.exceptions")
    if urllib3 is not None and isinstance(exc, urllib3.MaxRetryError):
        pool: Any = exc.pool
        where = f"{pool.scheme}://{pool.host}:{pool.port}" if pool is not None else exc.url
        return f"cannot reach {where}: {exc.reason}"
    return None


def root_settings(ctx: typer.Context) -> Settings:
    settings = ctx.find_root().obj
    if not isinstance(settings, Settings):  # only if a command is invoked without the root
        raise typer.Exit(2)
    return settings


def with_model(settings: Settings, url: str | None, name: str | None) -> Settings:
    """The settings with `--model-url` and `--model` applied, validated like the settings."""
    overrides = {
        key: value
        for key, value in (("model_base_url", url), ("model_name", name))
        if value is not None
    }
    if not overrides:
        return settings
    try:
        return type(settings).model_validate({**settings.model_dump(), **overrides})
    except ValidationError as exc:
        fail(f"invalid --model-url or --model: {exc.errors()[0]['msg']}", 2)
