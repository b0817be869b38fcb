"""`frognano worker`: the arq worker that runs queued jobs, in one process."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated

import typer


def worker_command(
    ctx: typer.Context,
    max_jobs: Annotated[
        int,
        typer.Option(help="Runs at once in this process (each holds a sandbox).", min=1),
    ] = 2,
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Serve Prometheus metrics on this port (default: none).", min=1),
    ] = None,
) -> None:
    """Run queued jobs: a run for each labelled issue (authorise, sandbox, agent, verify,
    gate, draft pull request), the human-review gate, and token refreshes.

    Needs FROGNANO_REDIS_URL, the GitHub App settings (FROGNANO_GITHUB_APP_ID and the private
    key), a valid FROGNANO_POLICY_DIR and the model server (FROGNANO_MODEL_BASE_URL).
    SIGTERM stops taking jobs and lets running ones finish or be retried by another worker.
    """
    # Imported here: the worker's dependencies are heavy, and cli.py imports this module.
    from redis.asyncio import Redis  # noqa: PLC0415

    from frognano.cli import _fail, _run, _settings  # noqa: PLC0415
    from frognano.errors import ConfigError  # noqa: PLC0415
    from frognano.github.auth import GitHubApp  # noqa: PLC0415
    from frognano.policy.store import PolicyStore  # noqa: PLC0415
    from frognano.queue import IntakeQueue  # noqa: PLC0415
    from frognano.worker import WorkerDeps, make_worker  # noqa: PLC0415

    settings = _settings(ctx)
    if metrics_port is not None:
        from prometheus_client import start_http_server  # noqa: PLC0415

        start_http_server(metrics_port)
    try:
        app = GitHubApp.from_settings(settings)
        policies = PolicyStore(settings.policy_dir)
    except ConfigError as exc:
        _fail(str(exc), 2)

    async def main() -> None:
        redis = Redis.from_url(settings.redis_url)
        watcher = asyncio.create_task(policies.watch())
        worker = make_worker(
            WorkerDeps(settings=settings, app=app, policies=policies, queue=IntakeQueue(redis)),
            max_jobs=max_jobs,
        )
        try:
            await worker.async_run()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            await worker.close()
            await redis.aclose()
            app.close()

    _run(main())
