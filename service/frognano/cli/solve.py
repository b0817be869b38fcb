"""`frognano solve`: one agent run on a local checkout, verified and gated."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from frognano.cli.common import console as _console
from frognano.cli.common import fail as _fail
from frognano.cli.common import root_settings as _settings
from frognano.cli.common import run as _run
from frognano.cli.common import say as _say
from frognano.cli.common import with_model
from frognano.cli.options import PythonEnvOption, RepoVenvOption, SandboxChoice
from frognano.cli.policyfor import (
    IndexUrlOption,
    PolicyDirOption,
    RepoOption,
    policy_for,
    with_index_url,
)
from frognano.errors import ConfigError
from frognano.run.workspace import repo_name
from frognano.sandbox.registry import check_backend
from frognano.settings import Settings

if TYPE_CHECKING:
    from frognano.run.baselines import BaselineCache
    from frognano.run.pipeline import SolveOutcome
    from frognano.run.report import ReplayRecord


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
        typer.Option(
            metavar="DIR", help="Folder for the results (default: ./frognano-runs/RUN_ID)."
        ),
    ] = None,
    python_env: PythonEnvOption = None,
    repo_venv: RepoVenvOption = False,
    model_url: Annotated[
        str | None,
        typer.Option(
            "--model-url",
            metavar="URL",
            help="The model server's OpenAI-compatible base URL (default: "
            "FROGNANO_MODEL_BASE_URL).",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="The served model name (default: FROGNANO_MODEL_NAME)."),
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            help="Play back the model turns of a recorded trajectory.jsonl instead of asking a "
            "model server (the tools, verification and gate run for real), auditing the run "
            "against it: the task, base tree and policy digests, then each tool call's "
            "arguments and result; exit 1 at the first difference.",
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
        typer.Option(
            metavar="COMMAND",
            help="Test command for verification (default: the policy's verify.command).",
        ),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option(help="Model turns before the run stops (default: the policy's).", min=1),
    ] = None,
    policy_dir: PolicyDirOption = None,
    repo: RepoOption = None,
    index_url: IndexUrlOption = None,
    fail_to_pass: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-to-pass",
            metavar="NODE_ID",
            help="A pytest node id that must pass with the patch (repeatable; sets the policy's "
            "verify.fail_to_pass).",
        ),
    ] = None,
    pass_to_pass: Annotated[
        list[str] | None,
        typer.Option(
            "--pass-to-pass",
            metavar="NODE_ID",
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
    from frognano.agent.replay import Recording, ReplayModel  # noqa: PLC0415
    from frognano.cli.progress import LiveProgress  # noqa: PLC0415
    from frognano.run.job import SolveJob  # noqa: PLC0415
    from frognano.run.pipeline import solve  # noqa: PLC0415
    from frognano.run.ports import RunPorts, fixed_model  # noqa: PLC0415
    from frognano.run.replay_audit import ReplayOf  # noqa: PLC0415
    from frognano.run.runid import new_run_id  # noqa: PLC0415

    settings = _settings(ctx)
    settings = with_model(settings, model_url, model)
    issue_title, body = _read_issue(issue_file, title)
    name = repo or repo_name(repo_dir)
    try:
        check_backend(sandbox or settings.sandbox)  # before anything is contacted or started
        policy, source = policy_for(name, policy_dir, settings.policy_dir)
        policy, source = with_index_url(policy, source, index_url)
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
    recording: Recording | None = None
    if replay is not None:
        try:
            recording = Recording.load(replay)
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
        replay=None
        if recording is None
        else ReplayOf(recording, expect_patch.read_bytes() if expect_patch else None),
    )
    err = _console(stderr=True)
    live = LiveProgress(err, policy.agent.max_steps) if err.is_terminal else None

    ports = RunPorts.from_settings(settings)
    if recording is not None:
        played = ReplayModel.of(recording)
        _say(
            err,
            f"Replaying {len(played.turns)} recorded model turns from {replay}: no model server "
            "is asked; the tools, the tests and the gate run for real, and each tool call's "
            "arguments and result are compared with the recording's.",
        )
        ports = RunPorts(
            fixed_model(played, played.describe()), ports.sandboxes, ports.environments
        )

    async def go() -> SolveOutcome:
        if live is None:
            return await solve(ports, job)
        with live:
            return await solve(ports, job, on_progress=live.update, on_stage=live.stage)

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
    _say(err, f"Results in {outcome.out_dir}/ ({', '.join(written) or 'nothing written'})")
    replayed: ReplayRecord | None = report.get("replay")
    if replayed is not None:
        from frognano.run.replay_report import replay_lines  # noqa: PLC0415

        for line in replay_lines(replayed):
            _say(err, line)
    if expect_patch is not None:
        produced = outcome.out_dir / "patch.diff"
        same = produced.is_file() and produced.read_bytes() == expect_patch.read_bytes()
        _say(
            err,
            f"The run {'reproduces' if same else 'does NOT reproduce'} {expect_patch} byte for "
            "byte.",
        )
        if not same:
            _fail(f"the patch differs from {expect_patch} (see {produced})", 1)
    if replayed is not None and not replayed["reproduced"]:
        _fail(outcome.reason, 1)  # "the replay did not reproduce the recording: ..."
    if not outcome.patch_ready:
        _fail(f"no patch: {outcome.reason}", 1)
    patch, verification = report["patch"], report["verification"]
    after = verification["verification"] if verification else None
    if patch is None or verification is None or after is None:
        # The verdict makes a patch ready only once it was tested: never reached.
        raise RuntimeError("a ready patch without the runs that verified it")
    _say(
        _console(),
        f"Patch ready for review: {len(patch['files'])} file(s), +{patch['insertions']} "
        f"-{patch['deletions']}; tests: {after['summary']}; {verification['reason']}",
    )


def _baseline_cache(settings: Settings) -> BaselineCache | None:
    from frognano.run.baselines import FileCache  # noqa: PLC0415

    folder = settings.baseline_cache_dir()
    return None if folder is None else FileCache(folder)
