"""`frognano sandbox reap`, `sandbox seccomp-profile` and the Kubernetes network probe."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from frognano.cli.common import console as _console
from frognano.cli.common import fail as _fail
from frognano.cli.common import root_settings as _settings
from frognano.cli.common import run as _run
from frognano.policy.loader import load_policies
from frognano.run.sandbox_policy import sandbox_spec
from frognano.sandbox import SandboxOptions, SandboxSpec
from frognano.sandbox.netcheck import ProbeResult
from frognano.settings import Settings
from frognano.terminal import printable

# Policies apply per repository; a repository name no admin would write gets the defaults.
DEFAULTS_REPO = "frognano-defaults/frognano-defaults"


def default_spec(settings: Settings) -> SandboxSpec:
    """The sandbox the policy's defaults describe (image, resources, runtime class)."""
    return sandbox_spec(load_policies(settings.policy_dir).for_repo(DEFAULTS_REPO))


async def probe_pod_network(settings: Settings) -> list[ProbeResult]:
    # Imported here: the kubernetes client takes a third of a second to import, which every
    # other command would pay.
    from frognano.sandbox.kubernetes.netcheck import check_pod_network  # noqa: PLC0415

    options = SandboxOptions.from_settings(settings, spec=default_spec(settings))
    return await check_pod_network(options)


def reap_command(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")
    ] = False,
) -> None:
    """Delete sandbox pods that expired, finished, failed or were evicted (Kubernetes).

    Looks only at pods FrogNano labelled in FROGNANO_K8S_NAMESPACE; a worker runs the same
    sweep every FROGNANO_K8S_REAP_INTERVAL_SECONDS. Exits 1 if a deletion or the API server
    failed, 2 when the settings reach no cluster.
    """
    from frognano.sandbox.kubernetes.reaper import reap_namespace  # noqa: PLC0415 - see above

    settings = _settings(ctx)
    console = _console()
    # _run turns errors into messages: 2 for settings that reach no cluster, 1 otherwise.
    reaped = _run(reap_namespace(settings.k8s_namespace, settings.k8s_kubeconfig, dry_run=dry_run))
    if not reaped:
        console.print(f"No sandbox pod to reap in {settings.k8s_namespace}.")
        return
    table = Table(title=f"Sandbox pods in {settings.k8s_namespace}")
    for column in ("pod", "phase", "why", "result"):
        table.add_column(column)
    for item in reaped:
        result = (
            "would delete" if dry_run
            else f"[red]failed: {escape(printable(item.error))}[/]" if item.error
            else "deleted" if item.deleted
            else "already gone"
        )  # fmt: skip
        name, reason = escape(printable(item.name)), escape(printable(item.reason))
        table.add_row(name, item.phase, reason, result)
    console.print(table)
    if any(item.error for item in reaped):
        raise typer.Exit(1)


def seccomp_profile_command(
    base: Annotated[
        Path,
        typer.Option(
            "--base",
            help="The nodes' runtime default profile to start from (OCI JSON, e.g. CRI-O's "
            "/usr/share/containers/seccomp.json or containerd's default).",
            exists=True,
            dir_okay=False,
        ),
    ],
    out: Annotated[
        Path,
        typer.Option("--out", help="Where to write the profile.", dir_okay=False),
    ] = Path("frognano-sandbox.json"),
) -> None:
    """Write a Localhost seccomp profile for sandbox pods: BASE plus FrogNano's denied list.

    Copy the file to each node's kubelet seccomp folder (usually
    /var/lib/kubelet/seccomp/profiles/) and set sandbox.seccompLocalhostProfile in the chart
    (FROGNANO_K8S_SECCOMP_PROFILE), e.g. profiles/frognano-sandbox.json.
    """
    from frognano.errors import ConfigError  # noqa: PLC0415
    from frognano.sandbox.kubernetes.seccomp import write_profile  # noqa: PLC0415

    try:
        profile = write_profile(base, out)
    except ConfigError as exc:
        _fail(str(exc), 2)
    _console().print(
        f"Wrote {out} ({len(profile['syscalls'])} rules): {base} with FrogNano's sandbox "
        "denials added."
    )
