"""`frognano worker`: the arq worker that runs queued jobs, in one process."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

import typer

from frognano.cli.common import fail as _fail
from frognano.cli.common import root_settings as _settings
from frognano.cli.common import run as _run
from frognano.settings import Settings

REDIS_CHECK_SECONDS = 5.0
"""How long the start-up check waits for Redis to accept a connection."""
GITHUB_CHECK_SECONDS = 10
"""How long the start-up check waits for GitHub's answer (one try)."""
_CREDENTIALS = (
    "FROGNANO_GITHUB_APP_ID (the App's numeric id, on its settings page) and "
    "FROGNANO_GITHUB_PRIVATE_KEY or FROGNANO_GITHUB_PRIVATE_KEY_PATH (a private key generated "
    "for that same App)"
)


def worker_command(
    ctx: typer.Context,
    max_jobs: Annotated[
        int,
        typer.Option(
            metavar="N", help="Runs at once in this process (each holds a sandbox).", min=1
        ),
    ] = 2,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            metavar="PORT", help="Serve Prometheus metrics on this port (default: none).", min=1
        ),
    ] = None,
) -> None:
    """Run queued jobs: a run for each labelled issue (authorise, sandbox, agent, verify,
    gate, draft pull request), the human-review gate, and token refreshes.

    Needs FROGNANO_REDIS_URL, the GitHub App settings (FROGNANO_GITHUB_APP_ID and the private
    key), a valid FROGNANO_POLICY_DIR and the model server (FROGNANO_MODEL_BASE_URL). It
    first checks that Redis answers (exit 1 if not) and that GitHub accepts the App's
    credentials (exit 2 when it refuses them, 1 when it does not answer).
    SIGTERM stops taking jobs and lets running ones finish or be retried by another worker.

    With FROGNANO_SANDBOX=kubernetes it first proves, with a probe pod, that the sandbox
    namespace has no network, and refuses to start when it has (FROGNANO_K8S_NETWORK_CHECK=
    warn runs anyway); it also deletes expired and failed sandbox pods periodically.
    """
    # Imported here: the worker's dependencies are heavy, and cli.py imports this module.
    from frognano.app.worker import build_worker  # noqa: PLC0415
    from frognano.errors import ConfigError  # noqa: PLC0415

    settings = _settings(ctx)
    if metrics_port is not None:
        from prometheus_client import start_http_server  # noqa: PLC0415

        start_http_server(metrics_port)
    try:
        worker = build_worker(settings, max_jobs=max_jobs)
    except ConfigError as exc:
        _fail(str(exc), 2)

    async def main() -> None:
        async with worker:
            if settings.sandbox == "kubernetes":
                await _require_isolated_sandboxes(settings)
            await _require_redis(settings.redis_url)
            await _require_github(settings)
            await worker.run()

    from redis.exceptions import RedisError  # noqa: PLC0415

    try:
        _run(main())
    except (RedisError, OSError) as exc:  # Redis went away after the start-up check
        _fail(f"lost Redis at {_shown_url(settings.redis_url)}: {exc}", 1)


def _shown_url(url: str) -> str:
    """`url` without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


async def _require_redis(url: str) -> None:
    """One line and exit 1, not arq's retries and a traceback, when Redis does not answer."""
    from redis.asyncio import Redis  # noqa: PLC0415
    from redis.exceptions import RedisError  # noqa: PLC0415

    client = Redis.from_url(url, socket_connect_timeout=REDIS_CHECK_SECONDS)
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        _fail(
            f"cannot reach Redis at {_shown_url(url)} ({exc}); start it or fix FROGNANO_REDIS_URL",
            1,
        )
    finally:
        await client.aclose()


async def _require_github(settings: Settings) -> None:
    """GET /app with the App's JWT, so that wrong credentials stop the worker at start with
    one line naming the settings (exit 2), not in every run's first request; a GitHub that
    does not answer is one line too (exit 1: start again later)."""
    from frognano.github.auth import GitHubApp  # noqa: PLC0415
    from frognano.github.errors import (  # noqa: PLC0415
        GitHubAuthError,
        GitHubError,
        GitHubNotFound,
        GitHubUnavailable,
    )
    from frognano.github.retry import RetryPolicy, Transport  # noqa: PLC0415
    from frognano.log import get_logger  # noqa: PLC0415

    api = settings.github_api_url
    # One try, not the runs' policy that rides out 15 minutes of outage: a check reports.
    retry = RetryPolicy(attempts=1, budget_seconds=GITHUB_CHECK_SECONDS)
    transport = Transport(base_url=api, timeout=GITHUB_CHECK_SECONDS, retry=retry)
    app = GitHubApp.from_settings(settings, transport=transport)
    try:
        login = await app.app_login()
    except GitHubAuthError as exc:
        said = f": {exc.github_message}" if exc.github_message else ""
        _fail(
            f"GitHub at {api} refused the App's credentials (HTTP 401 on GET /app{said}); "
            f"fix {_CREDENTIALS}, and check this host's clock",
            2,
        )
    except GitHubNotFound:
        _fail(
            f"GitHub at {api} has no App for these credentials (HTTP 404 on GET /app); fix "
            f"{_CREDENTIALS}, or FROGNANO_GITHUB_API_URL (GitHub Enterprise: https://HOST/api/v3)",
            2,
        )
    except GitHubUnavailable as exc:
        why = f"HTTP {exc.status}" if exc.status is not None else "no connection"
        _fail(
            f"cannot reach GitHub at {api} ({why} on GET /app); start the worker again once "
            "it answers, or fix FROGNANO_GITHUB_API_URL",
            1,
        )
    except GitHubError as exc:
        _fail(f"GitHub at {api} refused the App's start-up check: {exc}", 1)
    finally:
        app.close()
    get_logger(__name__).info("worker.github_check_passed", app=login)


async def _require_isolated_sandboxes(settings: Settings) -> None:
    """The start-up network check of the Kubernetes sandbox namespace (docs/deploy.md)."""
    from frognano.cli.kube import probe_pod_network  # noqa: PLC0415
    from frognano.errors import FrogNanoError  # noqa: PLC0415
    from frognano.log import get_logger  # noqa: PLC0415
    from frognano.sandbox.netcheck import network_verdict  # noqa: PLC0415

    log = get_logger(__name__)
    namespace = settings.k8s_namespace
    try:
        isolated, summary = network_verdict(await probe_pod_network(settings))
        problem = (
            f"the sandbox namespace {namespace} is not isolated ({summary}); does the "
            "cluster's CNI enforce NetworkPolicy, and is the chart's deny-all policy there?"
        )
    except FrogNanoError as exc:
        isolated, summary = False, f"the probe pod could not run: {exc}"
        problem = f"could not prove that the sandbox namespace {namespace} is isolated: {exc}"
    if isolated:
        log.info("worker.network_check_passed", namespace=namespace, result=summary)
        return
    if settings.k8s_network_check == "warn":
        log.warning(
            "worker.network_check_failed",
            namespace=namespace,
            result=summary,
            override="FROGNANO_K8S_NETWORK_CHECK=warn",
        )
        return
    _fail(
        f"{problem}. No job runs until this check passes; FROGNANO_K8S_NETWORK_CHECK=warn "
        "overrides it.",
        1,
    )
