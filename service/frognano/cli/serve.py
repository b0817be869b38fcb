"""`frognano serve`: the webhook receiver under uvicorn, in one process."""

# The app is built once, by `create_app` from the settings (policy store, metrics registry and
# all), before the server starts; a bad setting or policy exits 2 before it listens. SIGTERM
# (or Ctrl-C) stops it gracefully: it stops accepting connections, lets requests in flight
# finish (at most `GRACEFUL_SHUTDOWN_SECONDS`), closes Redis and exits 0.

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated

import typer
import uvicorn
from fastapi import FastAPI

from frognano.app.web.limits import ServerLimits, deadline_protocol
from frognano.cli.common import fail as _fail
from frognano.cli.common import root_settings as _settings

__all__ = ["GRACEFUL_SHUTDOWN_SECONDS", "run_server", "serve_command"]

GRACEFUL_SHUTDOWN_SECONDS = 20
"""Under Kubernetes' default 30 s termination grace period."""


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn re-raises a caught SIGTERM/SIGINT once it has shut down, so the process
        # would die of the signal after a clean shutdown; a requested stop is a success.
        with super().capture_signals():
            yield
            self._captured_signals.clear()


def run_server(app: FastAPI, host: str, port: int, limits: ServerLimits | None = None) -> None:
    """Serve `app` until SIGTERM or SIGINT, then shut down gracefully.

    Access lines are off (the app logs one line per delivery, and health probes would
    drown it); uvicorn's own lines go through FrogNano's logging (`log_config=None`). A
    client that is slow to send its headers is cut off (`limits.header_timeout`); the app
    itself bounds the body (FROGNANO_WEBHOOK_BODY_TIMEOUT_SECONDS).
    """
    limits = limits or ServerLimits()
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=deadline_protocol(limits.header_timeout),
        timeout_keep_alive=max(1, round(limits.keep_alive)),
        limit_concurrency=limits.max_connections,
        h11_max_incomplete_event_size=limits.max_header_bytes,
        log_config=None,
        access_log=False,
        lifespan="on",
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    _Server(config).run()


def serve_command(
    ctx: typer.Context,
    host: Annotated[
        str,
        typer.Option(
            metavar="ADDRESS", help="Address to listen on; 0.0.0.0 in a container behind a Service."
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(metavar="PORT", help="TCP port to listen on.", min=1, max=65535)
    ] = 8080,
) -> None:
    """Receive GitHub webhook deliveries on POST /webhooks/github and queue runs in Redis.

    Also serves /healthz, /readyz and /metrics. Needs FROGNANO_WEBHOOK_SECRET, a valid
    FROGNANO_POLICY_DIR and FROGNANO_REDIS_URL (Redis may come up later: until it answers,
    /readyz says so and deliveries get 503).
    """
    # Imported here: cli.py imports this module to register the command.
    from frognano.app.web.receiver import create_app  # noqa: PLC0415
    from frognano.errors import ConfigError  # noqa: PLC0415

    settings = _settings(ctx)
    try:
        app = create_app(settings)
    except ConfigError as exc:
        _fail(str(exc), 2)
    limits = ServerLimits(
        header_timeout=settings.webhook_header_timeout_seconds,
        keep_alive=settings.webhook_keep_alive_seconds,
        max_connections=settings.webhook_max_connections,
        max_header_bytes=settings.webhook_max_header_bytes,
    )
    run_server(app, host, port, limits)
