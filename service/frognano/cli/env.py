"""`frognano env build`: check a repository's environment before anyone labels an issue."""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from frognano.cli.common import console as _console
from frognano.cli.common import fail as _fail
from frognano.cli.common import root_settings as _settings
from frognano.cli.common import run as _run
from frognano.cli.options import PythonEnvOption, SandboxChoice
from frognano.cli.policyfor import (
    IndexUrlOption,
    PolicyDirOption,
    RepoOption,
    policy_for,
    with_index_url,
)
from frognano.cli.style import typer_app
from frognano.errors import ConfigError, EnvironmentBuildError
from frognano.run.environment.cache import EnvironmentCache
from frognano.run.environment.record import EnvironmentUse
from frognano.run.environment.stage import EnvironmentPort, EnvironmentRequest, use_environment
from frognano.run.workspace import env_prefix_in_tree, repo_name, upload_excludes
from frognano.sandbox import SandboxOptions, create_sandbox
from frognano.sandbox.registry import check_backend
from frognano.terminal import printable

env_app = typer_app(
    help="Build and check the per-repository Python environments of the environment phase.",
    no_args_is_help=True,
)


@env_app.command("build")
def build_command(  # noqa: PLR0917 - typer maps each parameter to an argument or option
    ctx: typer.Context,
    repo_dir: Annotated[
        Path,
        typer.Argument(
            help="A local git checkout.", exists=True, file_okay=False, show_default=False
        ),
    ],
    policy_dir: PolicyDirOption = None,
    repo: RepoOption = None,
    index_url: IndexUrlOption = None,
    sandbox: SandboxChoice = None,
    python_env: PythonEnvOption = None,
) -> None:
    """Build REPO_DIR's environment as a run would (or find it in the cache), and print the
    install commands, the environment key, the time taken and whether the cache had it.

    Exits 0 when the environment is ready, 1 when the repository's files were refused or an
    install command failed (the reason and the log's tail on stderr), 2 for bad usage or
    configuration (no environment.index_url, say).
    """
    settings = _settings(ctx)
    out = _console()
    name = repo or repo_name(repo_dir)
    backend = sandbox or settings.sandbox
    try:
        check_backend(backend)
        policy, source = policy_for(name, policy_dir, settings.policy_dir)
        policy, source = with_index_url(policy, source, index_url)
        _require_index(policy.environment.index_url, name, source)
        repo_path = repo_dir.resolve()
        options = SandboxOptions.from_settings(settings, python_env=python_env)
        request = EnvironmentRequest(
            repo_path,
            upload_excludes(repo_path) + env_prefix_in_tree(options, repo_path),
            policy.environment,
            "local" if backend == "local" else policy.sandbox.image,
            backend,
        )
    except ConfigError as exc:
        _fail(str(exc), 2)

    async def build() -> tuple[EnvironmentUse | None, float]:
        started = time.monotonic()
        async with contextlib.AsyncExitStack() as held:
            _, used = await use_environment(
                request,
                EnvironmentPort.from_settings(settings),
                options,
                lambda wanted: create_sandbox(backend, wanted),
                held,
            )
        return used, time.monotonic() - started

    out.print(f"Repository: {printable(name)} at {repo_path}; policy: {printable(source)}")
    try:
        used, seconds = _run(build())
    except EnvironmentBuildError as exc:
        _fail(str(exc), 1)
    if used is None:  # checked above; keeps the type checker and a future caller honest
        _fail("no environment phase for this policy", 2)
    source_of = "detected from the repository" if used.detected else "the policy's install"
    out.print(f"Install commands ({source_of}):", highlight=False)
    for command in used.commands:
        out.print(f"  {printable(command)}", highlight=False, markup=False, soft_wrap=True)
    for note in used.notes:
        out.print(f"  note: {printable(note)}", highlight=False, markup=False, soft_wrap=True)
    for tried in used.refused:
        out.print(
            f"  refused: the build tried to reach {printable(tried)}, not an approved host",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    how = "cache hit (no install ran)" if used.hit else "built now"
    out.print(f"Environment key: {used.key}", highlight=False, soft_wrap=True)
    out.print(
        f"{how}; {seconds:.1f} s in all; the build took {used.build_seconds:.1f} s; "
        f"{used.size_bytes / 2**20:.1f} MiB in {settings.environment_cache_dir()}",
        highlight=False,
    )


def _require_index(index_url: str | None, name: str, source: str) -> None:
    if index_url is None:
        raise ConfigError(
            f"the policy for {name} ({source}) sets no environment.index_url; set it, or "
            "pass --index-url URL"
        )


@env_app.command("list")
def list_command(ctx: typer.Context) -> None:
    """List the built environments in FROGNANO_ENVIRONMENT_CACHE, least recently used first:
    key, size and last use."""
    settings = _settings(ctx)
    cache = EnvironmentCache(settings.environment_cache_dir(), settings.environment_cache_max_bytes)
    out = _console()
    entries = cache.entries() if cache.root.is_dir() else []
    if not entries:
        out.print(f"No environment in {cache.root}.", highlight=False)
        return
    table = Table("Key", "Size", "Last used (UTC)", box=None)
    for key, used, size in entries:
        when = datetime.fromtimestamp(used, UTC).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(key, f"{size / 2**20:.1f} MiB", when)
    out.print(table)
    total = sum(size for _, _, size in entries)
    out.print(
        f"{len(entries)} environment(s), {total / 2**20:.1f} MiB of "
        f"{cache.max_bytes / 2**20:.0f} MiB (FROGNANO_ENVIRONMENT_CACHE_MAX_BYTES) in {cache.root}",
        highlight=False,
        soft_wrap=True,
    )


@env_app.command("prune")
def prune_command(
    ctx: typer.Context,
    max_bytes: Annotated[
        int | None,
        typer.Option(
            "--max-bytes",
            metavar="BYTES",
            min=0,
            help="Keep at most this many bytes (default: FROGNANO_ENVIRONMENT_CACHE_MAX_BYTES; "
            "0 deletes every environment no run is using).",
        ),
    ] = None,
) -> None:
    """Delete least recently used environments until the cache fits; one a run is using is
    never deleted."""
    settings = _settings(ctx)
    limit = settings.environment_cache_max_bytes if max_bytes is None else max_bytes
    cache = EnvironmentCache(settings.environment_cache_dir(), limit)
    deleted = cache.evict() if cache.root.is_dir() else []
    for key in deleted:
        _console().print(f"deleted {key}", highlight=False, soft_wrap=True)
    _console().print(f"{len(deleted)} environment(s) deleted.", highlight=False)
