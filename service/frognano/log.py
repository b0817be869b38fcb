"""Structured logging: JSON lines in clusters, readable console output locally."""

from __future__ import annotations

import logging
import sys
from typing import IO, Any, cast

import structlog
from structlog.contextvars import bound_contextvars
from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

from frognano.terminal import printable

__all__ = ["bound_contextvars", "configure_logging", "get_logger"]


_CHATTY_LOGGERS = ("httpx", "httpx2", "httpcore", "openai")


class _StderrHandler(logging.StreamHandler[IO[str]]):
    """Writes to whatever `sys.stderr` is when a line is logged, so a live display that
    redirects stderr (rich's progress line) prints log lines above itself, not through it."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, _value: IO[str]) -> None:
        pass


def configure_logging(
    fmt: str = "console", level: str = "INFO", stream: IO[str] | None = None
) -> None:
    """Route structlog and the standard library's logging (uvicorn, arq) to one stream.

    Context bound with `bound_contextvars(run_id=..., repo=...)` appears on every line logged
    inside the block, including lines from libraries that use `logging`.
    """
    out = stream if stream is not None else sys.stderr
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Processor
    if fmt == "json":
        shared.append(structlog.processors.dict_tracebacks)
        renderer = structlog.processors.JSONRenderer()
    else:
        # Values quote others (a branch name, a model's words, an exception): shown on a
        # terminal with their control characters as escapes; without colours, every line.
        shared.append(_printable_values)
        colours = out.isatty()
        console = structlog.dev.ConsoleRenderer(colors=colours)
        renderer = console if colours else _printable_output(console)

    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out) if stream is not None else _StderrHandler()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # One INFO line per HTTP request to the model server is noise; errors still come through.
    for chatty in _CHATTY_LOGGERS:
        logging.getLogger(chatty).setLevel(max(logging.WARNING, root.level))


def _printable_values(_logger: WrappedLogger, _method: str, event: EventDict) -> EventDict:
    return {
        key: printable(value) if isinstance(value, str) else value for key, value in event.items()
    }


def _printable_output(renderer: Processor) -> Processor:
    def render(logger: WrappedLogger, method: str, event: EventDict) -> str:
        return printable(str(renderer(logger, method, event)))

    return render


def get_logger(name: str, **context: Any) -> FilteringBoundLogger:
    """A logger for one module, optionally with fixed context.

    It writes through the standard library's `logging.getLogger(name)`, so until
    `configure_logging` runs (FrogNano used as a library) it is as quiet as any library:
    warnings and errors on stderr, nothing on stdout. The configuration is looked up at each
    call, so module-level loggers made at import time follow it once it is set.
    """
    logger = structlog.wrap_logger(
        logging.getLogger(name), wrapper_class=structlog.stdlib.BoundLogger
    )
    return cast(FilteringBoundLogger, logger.bind(**context) if context else logger)
