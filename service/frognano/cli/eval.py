"""`frognano eval`: SWE-bench-format instances through the App's own harness, graded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from frognano.cli.common import console as _console
from frognano.cli.common import fail as _fail
from frognano.cli.common import root_settings as _settings
from frognano.cli.common import run as _run
from frognano.cli.common import say as _say
from frognano.cli.common import with_model
from frognano.cli.options import PythonEnvOption, SandboxChoice
from frognano.cli.policyfor import PolicyDirOption, policy_for
from frognano.errors import ConfigError
from frognano.sandbox.registry import check_backend


def eval_command(  # noqa: PLR0917 - typer maps each parameter to an option
    ctx: typer.Context,
    instances_file: Annotated[
        Path,
        typer.Argument(
            metavar="INSTANCES",
            help="SWE-bench-format instances: a .jsonl file (one per line) or a JSON list.",
            exists=True,
            dir_okay=False,
        ),
    ],
    repos: Annotated[
        Path,
        typer.Option(
            metavar="DIR",
            help="Where the repositories are: DIR/owner__name (or DIR/owner/name, DIR/name), "
            "a checkout or a bare mirror; nothing is fetched.",
            exists=True,
            file_okay=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="The run's folder (default: frognano-eval/INSTANCES' name). Running again "
            "with the same folder resumes it.",
        ),
    ] = None,
    gold: Annotated[
        bool, typer.Option("--gold", help="Evaluate the instances' own patches (validation).")
    ] = False,
    predictions: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Evaluate these patches (SWE-bench's predictions: .jsonl or .json).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    attempts: Annotated[
        int, typer.Option(min=1, max=20, help="Agent runs per instance (pass@k, best-of-K).")
    ] = 1,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Attempts run at once.")] = 1,
    slice_: Annotated[
        str | None, typer.Option("--slice", metavar="A:B", help="Take instances A to B-1.")
    ] = None,
    filter_: Annotated[
        str | None,
        typer.Option("--filter", metavar="REGEX", help="Take ids the expression matches."),
    ] = None,
    instance_ids: Annotated[
        list[str] | None,
        typer.Option("--instance-ids", metavar="ID", help="Take these ids (repeatable)."),
    ] = None,
    redo: Annotated[bool, typer.Option("--redo", help="Run finished instances again.")] = False,
    sandbox: SandboxChoice = None,
    python_env: PythonEnvOption = None,
    model_url: Annotated[
        str | None,
        typer.Option("--model-url", metavar="URL", help="The model server (agent runs)."),
    ] = None,
    model: Annotated[
        str | None, typer.Option(metavar="NAME", help="The served model name.")
    ] = None,
    policy_dir: PolicyDirOption = None,
    wandb_project: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Also log the figures and a table of the instances to this Weights & Biases "
            "project (the wandb extra; WANDB_MODE=offline keeps them on disk).",
        ),
    ] = None,
) -> None:
    """Run the agent on each instance exactly as the App would (same loop, sandbox, policy,
    limits), then SWE-bench's evaluation: the instance's test patch after the agent's patch,
    FAIL_TO_PASS and PASS_TO_PASS in a fresh sandbox. With --gold or --predictions, only the
    evaluation. Writes predictions.jsonl, summary.json, index.html and a folder per instance.
    Exits 0 when every instance finished (1 when no model server answers, or with --gold
    when an instance is broken), 2 for bad usage or configuration."""
    from frognano.eval.instances import load_instances, select  # noqa: PLC0415
    from frognano.eval.records import Mode  # noqa: PLC0415
    from frognano.eval.runner import EvalPlan  # noqa: PLC0415
    from frognano.run.baselines import FileCache  # noqa: PLC0415

    if gold and predictions is not None:
        _fail("--gold and --predictions are two modes: give one", 2)
    if attempts > 1 and (gold or predictions is not None):
        _fail("--attempts counts agent runs; --gold and --predictions have one patch each", 2)
    settings = with_model(_settings(ctx), model_url, model)
    try:
        backend = sandbox or settings.sandbox
        check_backend(backend)
        chosen = select(
            load_instances(instances_file),
            ids=_ids(instance_ids or []),
            pattern=filter_,
            slice_text=slice_,
        )
        patches = _predictions(predictions) if predictions is not None else {}
    except ConfigError as exc:
        _fail(str(exc), 2)
    err = _console(stderr=True)
    if predictions is not None:
        left = [i for i in chosen if i.instance_id not in patches]
        chosen = [i for i in chosen if i.instance_id in patches]
        if left:
            _say(err, f"{len(left)} instance(s) have no prediction and are left out.")
    if not chosen:
        _fail("no instance is left to run (check --slice, --filter, --instance-ids)", 2)
    mode: Mode = "gold" if gold else "predictions" if predictions is not None else "agent"
    names = {v for _, v in patches.values()}
    name = "gold" if gold else next(iter(names)) if names else settings.model_name
    try:
        # Each repository's own policy, as the App resolves it for an issue there.
        by_repo = {
            repo: policy_for(repo, policy_dir, settings.policy_dir)
            for repo in sorted({i.repo for i in chosen})
        }
    except ConfigError as exc:
        _fail(str(exc), 2)
    policy, source = next(iter(by_repo.values()))
    run_dir = out if out is not None else Path("frognano-eval") / instances_file.stem
    if run_dir.exists() and not run_dir.is_dir():
        _fail(f"--out {run_dir} is a file: name a folder (new, or an earlier run to resume)", 2)
    folder = settings.baseline_cache_dir()
    plan = EvalPlan(
        instances=tuple(chosen),
        repos=repos,
        out=run_dir,
        mode=mode,
        model_name=name,
        policy=policy,
        policy_source=source,
        by_repo=by_repo,
        attempts=attempts,
        workers=workers,
        redo=redo,
        backend=backend,
        python_env=python_env,
        predictions={k: v for k, (v, _) in patches.items()},
        baseline_cache=None if folder is None else FileCache(folder),
    )
    from frognano.cli.evalshow import finish, run_with_progress  # noqa: PLC0415
    from frognano.run.ports import RunPorts  # noqa: PLC0415

    results = _run(run_with_progress(plan, RunPorts.from_settings(settings), err))
    finish(plan, results, err, wandb_project=wandb_project)


def _ids(values: list[str]) -> list[str]:
    """--instance-ids takes ids repeated or separated by commas or spaces."""
    return [part for value in values for part in value.replace(",", " ").split() if part]


def _predictions(path: Path) -> dict[str, tuple[str, str]]:
    """instance id -> (model_patch, model_name_or_path) from SWE-bench's predictions format:
    JSONL, a JSON list, or a JSON object keyed by id (SWE-agent's)."""
    try:
        text = path.read_text(encoding="utf-8")
        rows = (
            [json.loads(line) for line in text.splitlines() if line.strip()]
            if path.suffix == ".jsonl"
            else json.loads(text)
        )
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"cannot read the predictions {path}: {exc}") from None
    if isinstance(rows, dict):
        rows = list(rows.values())
    if not isinstance(rows, list):
        raise ConfigError(f"{path}: predictions are a list, or an object keyed by instance id")
    found: dict[str, tuple[str, str]] = {}
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not isinstance(row.get("instance_id"), str):
            raise ConfigError(f"{path}, prediction {number}: no instance_id")
        patch = row.get("model_patch")
        found[row["instance_id"]] = (
            patch if isinstance(patch, str) else "",
            str(row.get("model_name_or_path") or "unknown"),
        )
    return found
