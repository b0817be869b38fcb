"""An eval run's figures in Weights & Biases (the `wandb` extra), for researchers who track."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from frognano.errors import ConfigError
from frognano.eval.records import InstanceResult
from frognano.eval.scoring import RunSummary, chosen

COLUMNS = (
    "instance_id", "status", "ready", "steps", "prompt_tokens", "completion_tokens",
    "agent_seconds", "eval_seconds", "attempts", "chosen",
)  # fmt: skip


def metrics(summary: RunSummary) -> dict[str, float | int]:
    """The run's numbers, flat, as a tracker's summary holds them."""
    total = summary["total_instances"]
    figures: dict[str, float | int] = {
        "instances": total,
        "resolved": summary["resolved_instances"],
        "unresolved": summary["unresolved_instances"],
        "empty_patch": summary["empty_patch_instances"],
        "error": summary["error_instances"],
        "resolved_rate": summary["resolved_instances"] / total if total else 0.0,
    }
    for k, value in summary["pass_at_k"].items():
        figures[f"pass@{k}"] = value
    best = summary["best_of_k"]
    if best is not None:
        figures[f"best_of_{best['k']}"] = best["rate"]
    agree = summary["agreement"]
    figures["agreement/ready_resolved"] = agree["ready_resolved"]
    figures["agreement/ready_unresolved"] = agree["ready_unresolved"]
    figures["agreement/not_ready_resolved"] = agree["not_ready_resolved"]
    figures["agreement/not_ready_unresolved"] = agree["not_ready_unresolved"]
    return figures


def rows(results: Sequence[InstanceResult]) -> list[list[object]]:
    table: list[list[object]] = []
    for result in results:
        attempt = chosen(result)
        table.append([
            result.instance_id,
            attempt.official.status,
            None if attempt.verdict is None else attempt.verdict.ready,
            attempt.steps,
            attempt.prompt_tokens,
            attempt.completion_tokens,
            attempt.agent_seconds,
            attempt.official.seconds,
            len(result.attempts),
            result.chosen + 1,
        ])  # fmt: skip
    return table


def log_run(
    project: str,
    out: Path,
    summary: RunSummary,
    results: Sequence[InstanceResult],
    config: Mapping[str, object],
) -> str:
    """One W&B run with the summary's figures and a table of the instances; returns its
    folder. W&B's own settings apply: `WANDB_MODE=offline` keeps everything on disk (sync
    later with `wandb sync`), and nothing leaves the machine until then."""
    try:
        import wandb  # noqa: PLC0415 - the extra is optional
    except ImportError:
        raise ConfigError(
            "--wandb-project needs the wandb extra: pip install 'frognano[wandb]'"
        ) from None
    run = wandb.init(
        project=project,
        dir=str(out),
        config=dict(config),
        job_type="eval",
        reinit="finish_previous",
    )
    try:
        run.summary.update(metrics(summary))
        run.log({"instance_table": wandb.Table(columns=list(COLUMNS), data=rows(results))})
        folder = str(run.dir)
    finally:
        run.finish()
    return folder
