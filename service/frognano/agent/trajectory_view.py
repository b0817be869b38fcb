"""What trajectory readers show besides the events: the run's facts, verdict and Edit diffs."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Every value here comes from a file a reader was handed: each is checked for its type, and
# what is text stays text for the caller to make printable (terminal) or escape (HTML).


@dataclass(frozen=True)
class RunFiles:
    """What the run folder holds beside the trajectory (`frognano solve` writes all three)."""

    report: Mapping[str, Any] | None = None
    """report.json, parsed; None when absent or not a JSON object."""
    patch: str | None = None
    """patch.diff as text (bytes that are not UTF-8 replaced); None when absent."""


def run_files(trajectory: Path) -> RunFiles:
    """report.json and patch.diff from the trajectory's folder, where they can be read."""
    folder = trajectory.parent
    report: Mapping[str, Any] | None = None
    try:
        parsed = json.loads((folder / "report.json").read_bytes())
        report = parsed if isinstance(parsed, dict) else None
    except (OSError, ValueError):
        report = None
    try:
        patch: str | None = (folder / "patch.diff").read_bytes().decode("utf-8", "replace")
    except OSError:
        patch = None
    return RunFiles(report, patch)


def _first(events: list[dict[str, Any]], kind: str) -> Mapping[str, Any]:
    return next((e for e in events if e.get("event") == kind), {})


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pairs(values: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    return ", ".join(
        f"{key} {', '.join(map(str, v)) if isinstance(v, list) else v}"
        for key in keys
        if (v := values.get(key)) is not None and v != ""
    )


def reported_models(events: list[dict[str, Any]]) -> list[str]:
    """The `model` names the server's replies carried, in the order first seen."""
    names: list[str] = []
    for event in events:
        name = event.get("model")
        if event.get("event") == "assistant" and isinstance(name, str) and name not in names:
            names.append(name)
    return names


def title(events: list[dict[str, Any]]) -> str:
    """ "run ID with model NAME": the name asked for, else the replies' or a replay's."""
    info = _first(events, "run_info")
    model = _map(info.get("model"))
    name = model.get("name") or _first(events, "run_start").get("model")  # older runs
    if not isinstance(name, str):
        replied = reported_models(events)
        if replied:
            name = ", ".join(replied)
        elif model.get("kind") == "replay":
            name = "replayed from " + str(_map(model.get("replay_of")).get("run_id") or "?")
        else:
            name = "not recorded"
    run_id = info.get("run_id") or _first(events, "run_start").get("run_id") or "?"
    return f"run {run_id} with model {name}"


def facts(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The run's facts as (label, value) rows: run, model, server, sampling, limits, sandbox,
    policy, tokens. A trajectory from before FrogNano recorded one leaves its row out."""
    info = _first(events, "run_info")
    rows: list[tuple[str, str]] = []
    if info:
        at = f" at {str(info['base_commit'])[:12]}" if info.get("base_commit") else ""
        version = f" (FrogNano {info['frognano']})" if info.get("frognano") else ""
        rows.append(("run", f"{info.get('run_id')} of {info.get('repo')}{at}{version}"))
    rows.extend(_model_rows(_map(info.get("model")), reported_models(events)))
    sampling = _map(info.get("sampling"))
    if sampling:
        thinking = sampling.get("enable_thinking")
        text = _pairs(sampling, ("temperature", "top_p", "top_k", "max_tokens"))
        if thinking is not None:
            text += f", thinking {'on' if thinking else 'off'}"
        rows.append(("sampling", text))
    limits = _map(_first(events, "run_start").get("limits"))
    if limits:
        rows.append(
            ("limits", _pairs(limits, ("max_steps", "time_limit_seconds", "context_tokens")))
        )
    sandbox = _map(info.get("sandbox"))
    if sandbox:
        mechanism = f" ({sandbox['mechanism']})" if sandbox.get("mechanism") else ""
        rows.append(("sandbox", f"{sandbox.get('backend')}{mechanism}"))
    if info.get("policy"):
        rows.append(("policy", str(info["policy"])))
    digests = [
        f"{label} {str(info[key])[:12]}"
        for label, key in (
            ("task", "task_sha256"),
            ("base tree", "base_tree_sha256"),
            ("policy", "policy_sha256"),
        )
        if info.get(key)
    ]
    if digests:
        rows.append(("inputs (sha256)", ", ".join(digests)))
    stats = _map(_first(events, "run_end").get("stats"))
    if stats:
        rows.append(("tokens in all", step_tokens(stats).replace("=", " ")))
    return rows


def _model_rows(model: Mapping[str, Any], replied: list[str]) -> list[tuple[str, str]]:
    kind = model.get("kind")
    rows: list[tuple[str, str]] = []
    if kind == "server":
        rows.append(("model", f"{model.get('name')} (the name asked for)"))
        served = _pairs(_map(model.get("served")), ("id", "root", "owned_by", "max_model_len"))
        if served:
            rows.append(("served", served))
        identity = _pairs(
            _map(model.get("model_info")),
            ("model_path", "tokenizer_path", "weight_version", "model_type", "architectures"),
        )
        rows.append(("identity", identity or "the server does not say (no /model_info)"))
    elif kind == "replay":
        of = _map(model.get("replay_of"))
        recorded = _map(of.get("model"))
        by = f", model {recorded['name']}" if recorded.get("name") else ""
        rows.append(("model", "none asked: a replay of recorded turns"))
        rows.append(("replay of", f"{of.get('trajectory')} (run {of.get('run_id')}{by})"))
    elif kind is not None:
        rows.append(("model", f"in process ({kind})"))
    else:
        rows.append(("model", "not recorded (a trajectory from before FrogNano recorded it)"))
    if replied:
        rows.append(("replies from", ", ".join(replied)))
    return rows


def step_tokens(usage: Any) -> str:
    """One assistant turn's token counts as the server reported them."""
    if not isinstance(usage, Mapping):
        return "no token counts reported"
    cached = usage.get("cached_tokens")
    return (
        f"prompt={usage.get('prompt_tokens', '?')}, "
        f"cached={'not reported' if cached is None else cached}, "
        f"completion={usage.get('completion_tokens', '?')}"
    )


def edit_diff(arguments: Any) -> str | None:
    """An Edit call's `old_string` -> `new_string` as a unified diff of the file's lines;
    None when the arguments are not an Edit's."""
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    old, new, path = parsed.get("old_string"), parsed.get("new_string"), parsed.get("file_path")
    if not (isinstance(old, str) and isinstance(new, str) and isinstance(path, str)):
        return None
    before, after = old.splitlines(), new.splitlines()
    # Whole snippets as context, and no hunk header: its line numbers would be the snippet's.
    lines = difflib.unified_diff(before, after, path, path, n=len(before) + len(after), lineterm="")
    every = " (every occurrence)" if parsed.get("replace_all") is True else ""
    kept = [line for line in lines if not line.startswith("@@")]
    return "\n".join(kept) + every if old != new else f"{path}: old_string == new_string"


def verdict(report: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The run's verdict from its report.json as (label, value) rows; [] without one."""
    if report is None:
        return []
    outcome = _map(report.get("outcome"))
    ready = outcome.get("patch_ready") is True
    rows = [
        ("verdict", f"{'patch ready for review' if ready else 'no patch'}: {outcome.get('reason')}")
    ]
    replay = _map(report.get("replay"))
    if replay:
        first = _map(replay.get("first_difference"))
        said = "reproduced" if replay.get("reproduced") is True else "did NOT reproduce"
        rows.append(("replay", f"{said}{': ' + str(first.get('headline')) if first else ''}"))
    patch = _map(report.get("patch"))
    if patch:
        files = patch.get("files")
        names = ", ".join(map(str, files)) if isinstance(files, list) else "?"
        rows.append(("patch", f"+{patch.get('insertions')} -{patch.get('deletions')} in {names}"))
    checked = _map(report.get("verification"))
    if checked:
        after = _map(checked.get("verification"))
        tests = f"; tests: {after['summary']}" if after.get("summary") else ""
        rows.append(("verification", f"{checked.get('reason')}{tests}"))
    gate = _map(report.get("gate"))
    if gate:
        findings = gate.get("findings")
        count = len(findings) if isinstance(findings, list) else 0
        rows.append(("gate", f"{'passed' if gate.get('passed') else 'failed'}, {count} finding(s)"))
    return rows
