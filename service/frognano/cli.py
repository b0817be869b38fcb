"""The `frognano` command: builds Settings once, then wires and starts what was asked for."""

from __future__ import annotations

import asyncio
import functools
import shlex
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from frognano import __version__
from frognano.agent.trajectory import read_events, render
from frognano.cli_kube import (
    default_pod,
    probe_pod_network,
    reap_command,
    seccomp_profile_command,
)
from frognano.cli_model import model_app
from frognano.cli_policy import policy_app
from frognano.cli_serve import serve_command
from frognano.cli_worker import worker_command
from frognano.errors import ConfigError, FrogNanoError, SandboxUnavailable, UnsafePathError
from frognano.log import configure_logging
from frognano.policy.loader import load_policies
from frognano.policy.models import EffectivePolicy
from frognano.sandbox import SandboxOptions, create_sandbox
from frognano.sandbox.netcheck import (
    DEFAULT_PROBES,
    ProbeResult,
    check_network,
    host_listener,
    loopback_service,
)
from frognano.sandbox.registry import check_backend
from frognano.settings import Settings, load_settings
from frognano.workspace import repo_name

if TYPE_CHECKING:
    from frognano.pipeline import SolveOutcome
    from frognano.run.baselines import BaselineCache

T = TypeVar("T")

app = typer.Typer(
    name="frognano",
    help="Draft pull requests with the FrogNano-4B coding agent, in sandboxes without network.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sandbox_app = typer.Typer(
    help="Check and use the sandboxes that agent commands run in.", no_args_is_help=True
)
app.add_typer(sandbox_app, name="sandbox")
sandbox_app.command("reap")(reap_command)
sandbox_app.command("seccomp-profile")(seccomp_profile_command)
app.command("serve")(serve_command)
app.command("worker")(worker_command)
app.add_typer(policy_app, name="policy")
app.add_typer(model_app, name="model")
trajectory_app = typer.Typer(help="Read the trajectories that runs record.", no_args_is_help=True)
app.add_typer(trajectory_app, name="trajectory")


@functools.cache
def _console(stderr: bool = False) -> Console:
    # Made on first use, not at import: a Console reads the environment (NO_COLOR, COLUMNS).
    return Console(stderr=stderr)


SandboxChoice = Annotated[
    str | None,
    typer.Option("--sandbox", help="Backend: local or kubernetes (default: FROGNANO_SANDBOX)."),
]
PythonEnvOption = Annotated[
    Path | None,
    typer.Option(
        "--python-env",
        help="Python environment to mount read-only and put first on PATH "
        "(default: FROGNANO_PYTHON_ENV, else the one running frognano).",
        file_okay=False,
    ),
]
RepoVenvOption = Annotated[
    bool,
    typer.Option(
        "--repo-venv",
        help="Use REPO_DIR/.venv as the Python environment (only for a checkout you trust; "
        "refused if it points outside itself).",
    ),
]


def _fail(message: str, code: int) -> NoReturn:
    _console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine so that SIGTERM, like Ctrl-C, cancels it and its cleanup runs."""

    async def main() -> T:
        task = asyncio.ensure_future(coro)
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await task

    try:
        return asyncio.run(main())
    except (ConfigError, SandboxUnavailable, UnsafePathError) as exc:
        _fail(str(exc), 2)
    except FrogNanoError as exc:
        _fail(str(exc), 1)
    except KeyboardInterrupt:
        _console(stderr=True).print("interrupted")
        raise typer.Exit(130) from None
    except asyncio.CancelledError:
        _console(stderr=True).print("terminated")
        raise typer.Exit(143) from None


def _settings(ctx: typer.Context) -> Settings:
    settings = ctx.find_root().obj
    if not isinstance(settings, Settings):  # only if a command is invoked without the root
        raise typer.Exit(2)
    return settings


def _version(value: bool) -> None:
    if value:
        _console().print(f"frognano {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", is_eager=True, callback=_version
        ),
    ] = False,
) -> None:
    """FrogNano drafts pull requests for labelled issues with a small coding agent that works
    in a sandbox without network; a human reviews every draft.

    Settings come from FROGNANO_* environment variables (see docs/configuration.md).
    """
    try:
        settings = load_settings()
    except ConfigError as exc:
        _fail(str(exc), 2)
    configure_logging(settings.log_format, settings.log_level)
    ctx.obj = settings


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
            help="Command to run, after `--`. One argument is a bash command line; "
            "several are quoted word by word."
        ),
    ],
    python_env: PythonEnvOption = None,
    repo_venv: RepoVenvOption = False,
    timeout: Annotated[
        float, typer.Option(help="Seconds before everything is killed.", min=1)
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
        pod = default_pod(settings) if backend == "kubernetes" else None
        options = SandboxOptions.from_settings(
            settings,
            repo_venv=source / ".venv" if repo_venv else None,
            python_env=python_env,
            pod=pod,
        )
        async with await create_sandbox(backend, options) as box:
            exclude = []
            env = getattr(box, "python_env", None)
            if env is not None and env.prefix.is_relative_to(source):
                # Already mounted read-only at its own path; copying it would only cost time.
                exclude.append(str(env.prefix.relative_to(source)))
            await box.upload_tree(source, exclude=exclude)
            result = await box.exec(line, timeout=timeout)
            return result.exit_code, result.output, result.timed_out

    code, output, timed_out = _run(go())
    sys.stdout.write(output)
    sys.stdout.flush()
    if timed_out:
        _fail(f"the command was killed after {timeout:g}s", 124)
    raise typer.Exit(code if code is not None else 1)


def _with_model(settings: Settings, url: str | None, name: str | None) -> Settings:
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
        _fail(f"invalid --model-url or --model: {exc.errors()[0]['msg']}", 2)


def _policy_for(repo: str, given: Path | None, configured: Path) -> tuple[EffectivePolicy, str]:
    """The effective policy for `repo` and where it came from. Without `--policy-dir`, a
    missing FROGNANO_POLICY_DIR means the built-in defaults (a laptop has no policy folder)."""
    directory = given or configured
    if given is None and not directory.exists():
        return EffectivePolicy(), f"built-in defaults ({directory} does not exist)"
    policies = load_policies(directory)
    try:
        effective = policies.for_repo(repo)
    except ValueError as exc:
        raise ConfigError(f"--repo {repo!r}: {exc}") from exc
    return effective, f"{directory} ({len(policies.files)} file(s))"


def _read_issue(path: Path, title: str | None) -> tuple[str, str]:
    """Title and body from an issue file; a leading Markdown heading is the default title."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot read the issue file {path}: {exc}", 2)
    lines = text.strip().splitlines()
    if title is None and lines and lines[0].startswith("# "):
        return lines[0][2:].strip(), "\n".join(lines[1:]).strip()
    if not text.strip():
        _fail(f"the issue file {path} is empty; describe the problem in it", 2)
    return title or path.stem, text.strip()


@app.command("solve")
def solve_command(  # noqa: PLR0917 - typer maps each parameter to an argument or option
    ctx: typer.Context,
    repo_dir: Annotated[
        Path,
        typer.Argument(
            help="A local git checkout; the agent works on a copy of its files.",
            exists=True,
            file_okay=False,
        ),
    ],
    issue_file: Annotated[
        Path,
        typer.Option(
            "--issue-file",
            help="The issue text (Markdown). A first line '# Title' is the title.",
            exists=True,
            dir_okay=False,
        ),
    ],
    title: Annotated[
        str | None, typer.Option(help="Issue title (default: the file's heading or name).")
    ] = None,
    sandbox: SandboxChoice = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Folder for the results (default: ./frognano-runs/RUN_ID)."),
    ] = None,
    python_env: PythonEnvOption = None,
    repo_venv: RepoVenvOption = False,
    model_url: Annotated[
        str | None,
        typer.Option(
            "--model-url",
            help="The model server's OpenAI-compatible base URL (default: "
            "FROGNANO_MODEL_BASE_URL).",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="The served model name (default: FROGNANO_MODEL_NAME)."),
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            help="Play back the model turns of a recorded trajectory.jsonl instead of asking a "
            "model server (the tools, verification and gate run for real).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    expect_patch: Annotated[
        Path | None,
        typer.Option(
            help="After the run, compare patch.diff with this file byte for byte; exit 1 when "
            "they differ.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    test_command: Annotated[
        str | None,
        typer.Option(help="Test command for verification (default: the policy's verify.command)."),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option(help="Model turns before the run stops (default: the policy's).", min=1),
    ] = None,
    policy_dir: Annotated[
        Path | None,
        typer.Option(
            help="Policy folder (default: FROGNANO_POLICY_DIR; the built-in defaults when that "
            "folder does not exist).",
            file_okay=False,
        ),
    ] = None,
    repo: Annotated[
        str | None,
        typer.Option(
            help="OWNER/NAME the policy rules match (default: from the `origin` remote, else "
            "local/FOLDER)."
        ),
    ] = None,
    fail_to_pass: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-to-pass",
            help="A pytest node id that must pass with the patch (repeatable; sets the policy's "
            "verify.fail_to_pass).",
        ),
    ] = None,
    pass_to_pass: Annotated[
        list[str] | None,
        typer.Option(
            "--pass-to-pass",
            help="A pytest node id that must keep passing (repeatable; verify.pass_to_pass).",
        ),
    ] = None,
) -> None:
    """Run the agent on REPO_DIR for one issue; write patch.diff, report.json, report.md and
    trajectory.jsonl.

    The model server is FROGNANO_MODEL_BASE_URL (an OpenAI-compatible endpoint such as SGLang
    started with --reasoning-parser qwen3 --tool-call-parser qwen3_coder), serving
    FROGNANO_MODEL_NAME. Exits 0 when the patch is ready for review, 1 when the run ended
    without one, 2 for bad usage or configuration.
    """
    # Imported here: the model client's dependencies take a second to import, which every
    # other command would pay for nothing.
    from frognano.agent.replay import ReplayModel  # noqa: PLC0415
    from frognano.pipeline import SolveJob, solve  # noqa: PLC0415
    from frognano.progress import LiveProgress  # noqa: PLC0415
    from frognano.runid import new_run_id  # noqa: PLC0415

    settings = _settings(ctx)
    settings = _with_model(settings, model_url, model)
    issue_title, body = _read_issue(issue_file, title)
    name = repo or repo_name(repo_dir)
    try:
        check_backend(sandbox or settings.sandbox)  # before anything is contacted or started
        policy, source = _policy_for(name, policy_dir, settings.policy_dir)
        if test_command is not None:
            policy = policy.model_copy(
                update={"verify": policy.verify.model_copy(update={"command": test_command})}
            )
            source += f"; --test-command {test_command!r}"
        if max_steps is not None:
            policy = policy.model_copy(
                update={"agent": policy.agent.model_copy(update={"max_steps": max_steps})}
            )
            source += f"; --max-steps {max_steps}"
        if fail_to_pass or pass_to_pass:
            lists = {
                key: list(value)
                for key, value in (("fail_to_pass", fail_to_pass), ("pass_to_pass", pass_to_pass))
                if value
            }
            policy = policy.model_copy(update={"verify": policy.verify.model_copy(update=lists)})
            source += "; " + ", ".join(
                f"{len(v)} --{k.replace('_', '-')}" for k, v in lists.items()
            )
    except ConfigError as exc:
        _fail(str(exc), 2)
    run_id = new_run_id()
    job = SolveJob(
        repo_dir=repo_dir,
        title=issue_title,
        body=body,
        out_dir=out if out is not None else Path("frognano-runs") / run_id,
        repo=name,
        policy=policy,
        policy_source=source,
        backend=sandbox or settings.sandbox,
        python_env=python_env,
        repo_venv=repo_venv,
        run_id=run_id,
        baseline_cache=_baseline_cache(settings),
    )
    err = _console(stderr=True)
    live = LiveProgress(err, policy.agent.max_steps) if err.is_terminal else None

    played: ReplayModel | None = None
    if replay is not None:
        try:
            played = ReplayModel.load(replay)
        except ConfigError as exc:
            _fail(str(exc), 2)
        err.print(
            f"Replaying {len(played.turns)} recorded model turns from {replay}: no model server "
            "is asked; the tools, the tests and the gate run for real.",
            highlight=False,
            soft_wrap=True,
        )

    async def go() -> SolveOutcome:
        if live is None:
            return await solve(settings, job, model=played)
        with live:
            return await solve(
                settings, job, model=played, on_progress=live.update, on_stage=live.stage
            )

    _report_outcome(_run(go()), err, expect_patch)


def _report_outcome(outcome: SolveOutcome, err: Console, expect_patch: Path | None) -> None:
    """Name the files written, say whether a patch is ready, and with `expect_patch` whether
    it is that file byte for byte; exits 1 when there is no patch or it differs."""
    report = outcome.report
    written = [
        name
        for name in ("report.md", "patch.diff", "trajectory.jsonl")
        if (outcome.out_dir / name).is_file()
    ]
    err.print(
        f"Results in {outcome.out_dir}/ ({', '.join(written) or 'nothing written'})",
        highlight=False,
        soft_wrap=True,
    )
    if expect_patch is not None:
        produced = outcome.out_dir / "patch.diff"
        same = produced.is_file() and produced.read_bytes() == expect_patch.read_bytes()
        err.print(
            f"The run {'reproduces' if same else 'does NOT reproduce'} {expect_patch} byte for "
            "byte.",
            highlight=False,
            soft_wrap=True,
        )
        if not same:
            _fail(f"the patch differs from {expect_patch} (see {produced})", 1)
    if not outcome.patch_ready:
        _fail(f"no patch: {outcome.reason}", 1)
    patch = report["patch"]
    _console().print(
        f"Patch ready for review: {len(patch['files'])} file(s), +{patch['insertions']} "
        f"-{patch['deletions']}; tests: {report['verification']['verification']['summary']}; "
        f"{report['verification']['reason']}",
        highlight=False,
        soft_wrap=True,
    )


def _baseline_cache(settings: Settings) -> BaselineCache | None:
    from frognano.run.baselines import FileCache  # noqa: PLC0415

    folder = settings.baseline_cache_dir()
    return None if folder is None else FileCache(folder)


@trajectory_app.command("replay")
def trajectory_replay(  # noqa: PLR0917 - typer maps each parameter to an argument or option
    ctx: typer.Context,
    trajectory: Annotated[
        Path, typer.Argument(help="A run's trajectory.jsonl.", exists=True, dir_okay=False)
    ],
    repo_dir: Annotated[
        Path,
        typer.Argument(help="The checkout the run started from.", exists=True, file_okay=False),
    ],
    issue_file: Annotated[
        Path,
        typer.Option("--issue-file", help="The run's issue text.", exists=True, dir_okay=False),
    ],
    patch: Annotated[
        Path | None,
        typer.Option(help="The patch to reproduce (default: patch.diff beside the trajectory)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Folder for the replay's results (default: a new run's).")
    ] = None,
) -> None:
    """Re-execute a recorded run's tool calls in a fresh sandbox, then verification and the
    gate, and say whether that reproduces the recorded patch byte for byte: "this pull
    request's patch is what this trajectory produces". Exit 0 when it does, 1 when not."""
    expected = patch if patch is not None else trajectory.parent / "patch.diff"
    if not expected.is_file():
        _fail(f"no recorded patch at {expected}; pass the one to compare with --patch", 2)
    ctx.invoke(
        solve_command, ctx, repo_dir=repo_dir, issue_file=issue_file, replay=trajectory,
        expect_patch=expected, out=out,
    )  # fmt: skip


@trajectory_app.command("show")
def trajectory_show(
    file: Annotated[
        Path, typer.Argument(help="A trajectory.jsonl file.", exists=True, dir_okay=False)
    ],
    full: Annotated[bool, typer.Option(help="Print texts whole instead of cutting them.")] = False,
    output_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="text, or html: one self-contained page (reasoning folded), texts whole.",
        ),
    ] = "text",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Write to this file instead of standard output.", dir_okay=False
        ),
    ] = None,
) -> None:
    """Print a recorded run: each model turn, tool call and result. Exits 2 for a file with
    no readable event (empty, or not a trajectory) or an unknown --format."""
    if output_format not in ("text", "html"):
        _fail(f"unknown --format {output_format!r}; use text or html", 2)
    try:
        read = read_events(file)
    except OSError as exc:
        _fail(f"cannot read {file}: {exc.strerror or exc}", 2)
    if not read.events:
        what = (
            "is empty"
            if not read.damaged_lines
            else f"has no readable event ({len(read.damaged_lines)} unreadable line(s))"
        )
        _fail(
            f"{file} {what}: a trajectory is the trajectory.jsonl that `frognano solve` or the "
            "worker writes, one JSON event per line",
            2,
        )
    if output_format == "html":
        from frognano.agent.trajectory_html import render_html  # noqa: PLC0415

        page = render_html(read.events, source=str(file))
    else:
        limit = 10**9 if full else 2000
        page = "".join(block + "\n" for block in render(read.events, max_chars=limit))
    if out is None:
        sys.stdout.write(page)
        sys.stdout.flush()
    else:
        out.write_text(page, encoding="utf-8")
        _console(stderr=True).print(f"Wrote {out}", highlight=False)
    if read.damaged_lines:
        lines = ", ".join(map(str, read.damaged_lines))
        _console(stderr=True).print(
            f"warning: skipped unreadable line(s) {lines} (a run killed mid-write leaves one)"
        )


def main() -> None:
    """Console-script entry point."""
    app()
