"""What `frognano eval` shows and writes as it goes: a progress bar, the files, a table."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from frognano import __version__
from frognano.cli.common import fail as _fail
from frognano.cli.common import say as _say
from frognano.errors import ConfigError
from frognano.eval.figures import headline_of
from frognano.eval.outputs import write_instance_report, write_run_files
from frognano.eval.pages import summary_page, terminal_table
from frognano.eval.records import Attempt, InstanceResult, replace_file
from frognano.eval.runner import EvalEvents, EvalPlan, finished, instance_dir, run_eval
from frognano.eval.scoring import RunSummary, chosen, summarize
from frognano.eval.tracking import log_run
from frognano.run.ports import RunPorts


def summary_of(plan: EvalPlan, results: list[InstanceResult]) -> RunSummary:
    return summarize(
        [i.instance_id for i in plan.instances],
        results,
        mode=plan.mode,
        model=plan.model_name,
        attempts=plan.attempts,
    )


def _record(plan: EvalPlan, results: dict[str, InstanceResult], result: InstanceResult) -> None:
    """One more instance finished: its report and the run's files, rewritten whole."""
    results[result.instance_id] = result
    write_instance_report(instance_dir(plan.out, result.instance_id), result)
    ordered = [results[i.instance_id] for i in plan.instances if i.instance_id in results]
    write_run_files(plan.out, ordered, summary_of(plan, ordered), plan.attempts)


async def run_with_progress(plan: EvalPlan, ports: RunPorts, err: Console) -> list[InstanceResult]:
    """The run, with a progress bar on a terminal and a line per instance otherwise."""
    results = {r.instance_id: r for r in finished(plan)}
    if results and not plan.redo:
        _say(err, f"Resuming {plan.out}: {len(results)} instance(s) finished before are kept.")
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not err.is_terminal,
    )
    task = bar.add_task(f"{plan.mode} on {len(plan.instances)} instance(s)", total=None)
    bar.update(task, total=len(plan.instances))

    def done(result: InstanceResult) -> None:
        _record(plan, results, result)
        bar.advance(task)
        if not err.is_terminal:
            official = chosen(result).official
            err.print(Text(f"{result.instance_id}: {official.status} ({official.reason})"))

    def kept(result: InstanceResult) -> None:
        bar.advance(task)

    with bar:
        return await run_eval(plan, ports, EvalEvents(finished=done, skipped=kept))


def _config(plan: EvalPlan) -> dict[str, object]:
    """What a tracked run was: the mode, the model, the budgets, FrogNano's version."""
    agent = plan.policy.agent
    return {
        "frognano": __version__,
        "mode": plan.mode,
        "model": plan.model_name,
        "instances": len(plan.instances),
        "attempts": plan.attempts,
        "workers": plan.workers,
        "max_steps": agent.max_steps,
        "context_tokens": agent.context_tokens,
        "max_tokens_per_turn": agent.max_tokens_per_turn,
        "time_limit_seconds": agent.time_limit_seconds,
        "temperature": agent.temperature,
        "policy": plan.policy_source,
    }


def _page(plan: EvalPlan, results: list[InstanceResult], summary: RunSummary) -> Path:
    """index.html: the figures and a row per instance, linking each attempt's trajectory."""

    def link(result: InstanceResult, attempt: Attempt) -> str | None:
        if attempt.run_dir is None:
            return None
        page = instance_dir(plan.out, result.instance_id) / attempt.run_dir / "trajectory.html"
        return page.relative_to(plan.out).as_posix() if page.is_file() else None

    no_verdict = sum(1 for r in results for a in r.attempts if a.verdict is None)
    text = summary_page(
        results,
        title=f"frognano eval: {plan.mode}, {plan.model_name}",
        links=link,
        figures=headline_of(summary, no_verdict=no_verdict),
    )
    return replace_file(plan.out / "index.html", text)


def finish(
    plan: EvalPlan,
    results: list[InstanceResult],
    err: Console,
    *,
    wandb_project: str | None = None,
) -> None:
    """The files, the table and the figures; exit 1 for `--gold` with a broken instance."""
    summary = summary_of(plan, results)
    written = write_run_files(plan.out, results, summary, plan.attempts)
    if wandb_project is not None:
        try:
            folder = log_run(wandb_project, plan.out, summary, results, _config(plan))
        except ConfigError as exc:
            _fail(str(exc), 2)
        _say(err, f"Logged to Weights & Biases ({wandb_project}): {folder}")
    written.append(_page(plan, results, summary))
    err.print(terminal_table(results, title=f"frognano eval: {plan.out}"))
    total = summary["total_instances"]
    _say(
        err,
        f"Resolved {summary['resolved_instances']} of {total} "
        f"({summary['resolved_instances'] / total:.1%}); unresolved "
        f"{summary['unresolved_instances']}, empty patch {summary['empty_patch_instances']}, "
        f"error {summary['error_instances']}.",
    )
    for k, value in summary["pass_at_k"].items():
        _say(err, f"pass@{k}: {value:.1%}")
    best = summary["best_of_k"]
    if best is not None:
        _say(err, f"best-of-{best['k']} by FrogNano's evidence: {best['rate']:.1%}")
    _say(err, f"Wrote {', '.join(str(p) for p in written)}")
    if plan.mode == "gold":
        broken = [r for r in results if not chosen(r).official.resolved]
        for result in broken:
            official = chosen(result).official
            err.print(Text(f"broken: {result.instance_id}: {official.status}: {official.reason}"))
        if broken:
            _fail(f"{len(broken)} instance(s) are broken: their own patch does not resolve them", 1)
