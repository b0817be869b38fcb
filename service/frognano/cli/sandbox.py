"""`frognano sandbox run` and `sandbox check-network`; reap and seccomp-profile: cli/kube.py."""

# `frognano sandbox run` and `frognano sandbox check-network`; reap and seccomp-profile come
# from cli_kube.

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from frognano.cli.common import console as _console
from frognano.cli.common import fail as _fail
from frognano.cli.common import root_settings as _settings
from frognano.cli.common import run as _run
from frognano.cli.kube import default_spec, probe_pod_network, reap_command, seccomp_profile_command
from frognano.cli.options import PythonEnvOption, RepoVenvOption, SandboxChoice
from frognano.cli.style import typer_app
from frognano.run.workspace import env_in_tree
from frognano.sandbox import SandboxOptions, create_sandbox
from frognano.sandbox.netcheck import (
    DEFAULT_PROBES,
    ProbeResult,
    check_network,
    host_listener,
    loopback_service,
)

sandbox_app = typer_app(
    help="Check and use the sandboxes that agent commands run in.", no_args_is_help=True
)
sandbox_app.command("reap")(reap_command)
sandbox_app.command("seccomp-profile")(seccomp_profile_command)


@sandbox_app.command("check-network")
def check_network_command(
    ctx: typer.Context,
    sandbox: SandboxChoice = None,
    python_env: PythonEnvOption = None,
) -> None:
    """Prove that a sandbox has no network: every connection attempt from inside must fail.

    Local: probes the Internet (IPv4 and IPv6), public DNS, the cloud metadata address, name
    resolution, a server this command starts on the host's 127.0.0.1, and the Redis of
    FROGNANO_REDIS_URL when it is on this host. Kubernetes: starts a probe pod like a sandbox
    and tries the API server, cluster DNS, the Internet and the metadata address from it.
    Exits 1 if anything got through.
    """
    settings = _settings(ctx)
    backend = sandbox or settings.sandbox

    async def probe() -> list[ProbeResult]:
        if backend == "kubernetes":
            return await probe_pod_network(settings)
        options = SandboxOptions.from_settings(settings, python_env=python_env)
        async with host_listener() as (port, reached):
            async with await create_sandbox(backend, options) as box:
                probes = [*DEFAULT_PROBES]
                for url, name in (
                    (f"tcp://127.0.0.1:{port}", "server on the host's loopback"),
                    (settings.redis_url, "Redis of FROGNANO_REDIS_URL"),
                ):
                    found = loopback_service(url, name)
                    if found is not None:
                        probes.append(found)
                results = await check_network(box, probes)
            if reached:
                results.append(
                    ProbeResult(
                        "host listener",
                        f"127.0.0.1:{port}",
                        False,
                        f"accepted {len(reached)} connection(s)",
                    )
                )
            return results

    results = _run(probe())
    table = Table(title=f"Network probes from a {backend} sandbox")
    for column in ("probe", "target", "result", "detail"):
        table.add_column(column)
    for result in results:
        verdict = "[green]blocked[/]" if result.blocked else "[bold red]REACHED[/]"
        table.add_row(result.name, result.target, verdict, result.detail)
    _console().print(table)
    if not all(result.blocked for result in results):
        _fail("the sandbox reached the network; do not run agents on this host", 1)
    _console().print("No probe got out: the sandbox has no network.")


@sandbox_app.command("run", context_settings={"allow_interspersed_args": False})
def run_command(  # noqa: PLR0917 - typer maps each parameter to an argument or option
    ctx: typer.Context,
    repo_dir: Annotated[
        Path,
        typer.Argument(
            help="Directory copied to /workspace (the copy is thrown away after).",
            exists=True,
            file_okay=False,
        ),
    ],
    command: Annotated[
        list[str],
        typer.Argument(
            metavar="COMMAND",
            help="Command to run, after `--`. One argument is a bash command line; "
            "several are quoted word by word.",
        ),
    ],
    python_env: PythonEnvOption = None,
    repo_venv: RepoVenvOption = False,
    timeout: Annotated[
        float, typer.Option(metavar="SECONDS", help="Seconds before everything is killed.", min=1)
    ] = 600,
    sandbox: SandboxChoice = None,
) -> None:
    """Run a command in a fresh sandbox holding a copy of REPO_DIR, and exit with its status.

    Example: frognano sandbox run examples/calculator -- python -m pytest -q
    """
    settings = _settings(ctx)
    backend = sandbox or settings.sandbox
    if command and command[0] == "--":
        command = command[1:]  # click keeps the separator when options stop at the first word
    if not command:
        _fail("give the command to run after `--`", 2)
    line = command[0] if len(command) == 1 else shlex.join(command)
    source = repo_dir.resolve()

    async def go() -> tuple[int | None, str, bool]:
        # A pod follows the policy's defaults (image, resources), as a run's sandbox would.
        spec = default_spec(settings) if backend == "kubernetes" else None
        options = SandboxOptions.from_settings(
            settings,
            repo_venv=source / ".venv" if repo_venv else None,
            python_env=python_env,
            spec=spec,
        )
        async with await create_sandbox(backend, options) as box:
            await box.upload_tree(source, exclude=env_in_tree(box, source))
            result = await box.exec(line, timeout=timeout)
            return result.exit_code, result.output, result.timed_out

    code, output, timed_out = _run(go())
    sys.stdout.write(output)
    sys.stdout.flush()
    if timed_out:
        _fail(f"the command was killed after {timeout:g}s", 124)
    raise typer.Exit(code if code is not None else 1)
