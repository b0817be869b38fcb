"""What FrogNano writes on GitHub: titles, bodies, commit messages, checks, status comments."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from frognano.app.review import HUMAN_REVIEW_CHECK
from frognano.run.report import (
    RUN_STAGES,
    ComparisonList,
    FindingRecord,
    GateRecord,
    RunReport,
    SuiteRunKey,
    SuiteRunRecord,
    TokensRecord,
    VerificationRecord,
)

__all__ = [
    "BODY_BUDGET",
    "CHECK_BUDGET",
    "STAGES",
    "TITLE_LIMIT",
    "WARNING",
    "Conclusion",
    "Stage",
    "co_author_trailer",
    "commit_message",
    "neutralise",
    "no_pull_request_reason",
    "pull_request_body",
    "pull_request_title",
    "size",
    "status_comment",
    "status_marker",
    "verification_check",
]

# Text rules, for every renderer here:
# - Whatever did not come from this module (model output, issue titles, test ids, paths,
#   reasons, stop details) is untrusted: `neutralise` puts a zero-width joiner into each
#   `@mention` and each closing keyword ("fixes #3") so GitHub neither notifies anyone nor
#   links/closes an issue because of it; in Markdown, `<` before a tag, comment or
#   declaration becomes `&lt;`, so such text cannot open an HTML comment that hides the rest
#   of a body or fake a hidden marker. Control and bidirectional-override characters go.
# - Bodies stay under BODY_BUDGET and check texts under CHECK_BUDGET, measured in UTF-16
#   code units (as GitHub's limits may count), well below GitHub's 65,536 / 65,535 so the
#   client's own last-resort truncation never has to act. When a text is too long, the
#   longest untrusted parts are cut first, each with a visible note; the lines this module
#   writes itself (markers, warning, headings, the `Refs #N` line) are never cut.

TITLE_LIMIT = 256
"""Characters in a pull request title (GitHub's own limit)."""
BODY_BUDGET = 60_000
"""Most UTF-16 code units in a pull request body or comment (GitHub: 65,536)."""
CHECK_BUDGET = 60_000
"""Most UTF-16 code units in a check run's summary or text (GitHub: 65,535 each)."""
_SUBJECT_WIDTH = 72
_WRAP_WIDTH = 72
_COMMIT_SUMMARY_CHARS = 4_000
_LIST_ITEMS = 50
_ITEM_CHARS = 200
_OUTPUT_LINES = 80

WARNING = (
    "Drafted by FrogNano-4B, a 4B research model. A human must review every line before "
    f"merging; the `{HUMAN_REVIEW_CHECK}` check stays blocking until someone other than the "
    "person who asked approves."
)

Conclusion = Literal["success", "failure"]
Stage = Literal[
    "queued",
    "already_running",
    "working",
    "testing",
    "published",
    "no_pull_request",
    "cancelled",
    "error",
]
STAGES: tuple[Stage, ...] = (
    "queued",
    "already_running",
    "working",
    "testing",
    "published",
    "no_pull_request",
    "cancelled",
    "error",
)

# -- neutralising untrusted text ----------------------------------------------------------------

_ZWJ = "\u200d"
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_CLOSE_KEYWORD = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b"
    r"(?=[\s:*_\[(`'\"]*(?:#\d|[\w.-]+/[\w.-]+#\d|https?://|gh-\d))",
    re.IGNORECASE,
)
_TRAILER = re.compile(r"^(\s*[A-Za-z][A-Za-z-]*-by)(\s*:)", re.MULTILINE | re.IGNORECASE)
_HTML_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")


def neutralise(text: str) -> str:
    """`text` with mentions, closing keywords, trailers and control characters defused
    (plain text: commit messages, code spans). Idempotent."""
    text = _CONTROL.sub("", _ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n")))
    text = _MENTION.sub("@" + _ZWJ, text.replace("@" + _ZWJ, "@"))
    text = _CLOSE_KEYWORD.sub(lambda m: m.group(0)[0] + _ZWJ + m.group(0)[1:], text)
    return _TRAILER.sub(lambda m: m.group(1) + _ZWJ + m.group(2), text)


def _md(text: str) -> str:
    """Untrusted text for Markdown prose: neutralised, and unable to open HTML."""
    return _HTML_OPEN.sub("&lt;", neutralise(text))


def _code(text: str) -> str:
    """Untrusted text as one inline code span."""
    flat = " ".join(neutralise(str(text)).replace("`", "'").split())
    return f"`{flat}`" if flat else "``"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.split("\n"))


def _fence(text: str, info: str = "text") -> str:
    runs = [len(run) for run in re.findall(r"`{3,}", text)]
    fence = "`" * max(3, *(run + 1 for run in runs)) if runs else "```"
    return f"{fence}{info}\n{text}\n{fence}"


def size(text: str) -> int:
    """Length as GitHub may count it: UTF-16 code units (astral characters count twice)."""
    return len(text.encode("utf-16-le")) // 2


# -- fitting a text under a limit ---------------------------------------------------------------


def _same(text: str) -> str:
    return text


@dataclass
class _Part:
    """One piece of a text. `fixed` pieces are this module's own words and never cut;
    others are cut from the end (`keep="head"`) or the start (`keep="tail"`)."""

    text: str
    render: Callable[[str], str] = _same
    fixed: bool = False
    keep: Literal["head", "tail"] = "head"
    limit: int = -1

    def shown(self) -> str:
        if self.limit < 0 or self.limit >= len(self.text):
            return self.render(self.text)
        cut = len(self.text) - self.limit
        note = f"… ({cut:,} characters cut to fit GitHub's size limit)"
        if self.keep == "tail":
            return self.render(f"{note}\n{self.text[len(self.text) - self.limit :]}")
        return self.render(f"{self.text[: self.limit]}\n{note}")


def _fixed(text: str) -> _Part:
    return _Part(text, fixed=True)


def _water_level(sizes: Sequence[int], allowed: int) -> int:
    """The largest cap c with sum(min(s, c)) <= allowed."""
    ordered = sorted(sizes)
    below = 0
    for index, value in enumerate(ordered):
        remaining = len(ordered) - index
        if below + remaining * value > allowed:
            return max(0, (allowed - below) // remaining)
        below += value
    return ordered[-1] if ordered else 0


_NOTE_ROOM = 80


def _fit(parts: Sequence[_Part], budget: int, joiner: str = "\n") -> str:
    """Join the parts, cutting the longest cuttable ones first until the text fits."""
    for _ in range(24):
        shown = [part.shown() for part in parts]
        text = joiner.join(shown)
        over = size(text) - budget
        if over <= 0:
            return text
        cuttable = [
            (index, size(shown[index]))
            for index, part in enumerate(parts)
            if not part.fixed and part.limit != 0
        ]
        if not cuttable:
            break
        sizes = [value for _, value in cuttable]
        cap = _water_level(sizes, sum(sizes) - over)
        for index, value in cuttable:
            if value > cap:
                part = parts[index]
                current = len(part.text) if part.limit < 0 else part.limit
                part.limit = max(0, current - (value - cap) - _NOTE_ROOM)
    # Only this module's own words are left and they are too long: never expected, since
    # they are short; keep the first and last pieces (markers, link line) whole.
    if len(parts) < 3:
        return joiner.join(part.shown() for part in parts)[: budget // 2]
    head, tail = parts[0].shown(), parts[-1].shown()
    note = "\n\n… (cut to fit GitHub's size limit)\n\n"
    room = max(0, budget - size(head) - size(tail) - size(note))
    middle = joiner.join(part.shown() for part in parts[1:-1])
    return head + joiner + middle[:room] + note + tail


# -- pull request ------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(neutralise(text).split())


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def pull_request_title(issue_number: int, issue_title: str) -> str:
    """`FrogNano draft for #7: <title>`, one line, at most TITLE_LIMIT characters."""
    title = _one_line(issue_title) or "(untitled issue)"
    return _shorten(f"FrogNano draft for #{issue_number}: {title}", TITLE_LIMIT)


def _items(label: str, values: Sequence[str], limit: int = _LIST_ITEMS) -> str:
    shown = ", ".join(_code(_shorten(value, _ITEM_CHARS)) for value in values[:limit])
    more = f" and {len(values) - limit:,} more" if len(values) > limit else ""
    return f"- {label} ({len(values):,}): {shown}{more}"


def _run_line(label: str, run: SuiteRunRecord | None) -> str:
    if run is None:
        return f"- {label}: not run"
    extra = []
    if run["exit_code"] is not None:
        extra.append(f"exit code {run['exit_code']}")
    if run["timed_out"]:
        extra.append("timed out")
    extra.append(f"{run['duration']:.1f} s")
    if run["cached"]:
        extra.append("reused from an earlier run")
    problems = "; ".join(run["problems"])
    note = f"; not trusted: {_md(problems)}" if problems else ""
    details = f" ({', '.join(extra)})"
    return f"- {label}: {_md(run['summary'] or 'no summary')}{details}{note}"


_COMPARISONS: tuple[tuple[str, ComparisonList], ...] = (
    ("Fixed (failing before, passing now)", "fixed"),
    ("Broken (passing before, failing now)", "broken"),
    ("Still failing", "still_failing"),
    ("Failing differently before and after", "fails_differently"),
    ("Skipped", "skipped"),
    ("Added by the patch, failing without it and passing with it", "new_evidence"),
)
_RUN_LINES: tuple[tuple[str, SuiteRunKey], ...] = (
    ("Before (base)", "baseline"),
    ("After (base + patch)", "verification"),
    ("The patch's new tests, with the patch", "new_on_patched"),
    ("The patch's new tests, on the base", "new_on_base"),
)


def _evidence(verification: VerificationRecord | None) -> list[_Part]:
    if verification is None:
        return [_fixed("The patch was not verified.")]
    state = "held" if verification["held"] else "did not hold"
    parts = [
        _Part(
            f"Rule {_code(verification['require'])} {state}: "
            f"{_md(verification['reason'].rstrip('.'))}."
        ),
        _fixed(
            "Each test run started from a pristine copy of the base in a fresh sandbox the "
            "agent never used; FrogNano applied the patch itself and collected every outcome "
            "with its own pytest plugin."
        ),
        _fixed(""),
        *(
            _Part(_run_line(label, verification[key]))
            for label, key in _RUN_LINES
            if verification[key] is not None or key in ("baseline", "verification")
        ),
    ]
    comparison = verification["comparison"]
    if comparison is not None:
        for label, key in _COMPARISONS:
            if comparison[key]:
                parts.append(_Part(_items(label, comparison[key])))
        parts.append(_fixed(f"- Passing with the patch: {comparison['passing']:,}"))
    restored = verification["restored"]
    if restored:
        parts.append(
            _Part(_items("Protected test and harness files put back to the base", restored))
        )
    else:
        parts.append(_fixed("- Protected test and harness files changed by the agent: none."))
    limits = verification["limits"]
    if limits:
        parts.append(_fixed("\n**What this evidence does not show:**\n"))
        parts.append(_Part("\n".join(f"- {_md(limit)}" for limit in limits)))
    return parts


def _finding_line(finding: FindingRecord) -> str:
    path, line = finding["path"], finding["line"]
    where = f" {_code(path)}" if path else ""
    shown = f" ({_code(line)})" if line else ""
    severity, kind = _md(finding["severity"]), _md(finding["kind"])
    return f"- **{severity}** {kind}{where}: {_md(finding['reason'])}{shown}"


def _findings(gate: GateRecord | None, *, severity: str | None) -> list[_Part]:
    if gate is None:
        return [_fixed("The gate did not run.")]
    findings = [
        finding
        for finding in gate["findings"]
        if severity is None or finding["severity"] == severity
    ]
    if not findings:
        return [_fixed("None: nothing in the patch conflicts with the policy.")]
    lines = [_finding_line(finding) for finding in findings[:_LIST_ITEMS]]
    if len(findings) > _LIST_ITEMS:
        lines.append(f"- and {len(findings) - _LIST_ITEMS:,} more")
    return [_Part("\n".join(lines))]


def _cached(tokens: TokensRecord) -> str:
    cached = tokens["cached"]
    if cached is None:
        return "cache hits not reported"
    prompt = tokens["prompt"]
    share = 100 * cached / prompt if prompt else 0.0
    return f"{cached:,} from the prefix cache, {share:.0f}%"


def _seconds(value: float) -> str:
    return f"{value:.1f} s"


def _statistics(report: RunReport) -> list[str]:
    tokens, durations = report["tokens"], report["durations"]
    stages = ", ".join(
        f"{_md(name)} {_seconds(durations[name])}" for name in RUN_STAGES if name in durations
    )
    lines = [
        f"- Steps: {report['steps']:,} of {report['max_steps']:,}; "
        f"tool calls: {report['tool_calls']:,} ({report['tool_errors']:,} failed)",
        f"- Tokens: {tokens['prompt']:,} prompt ({_cached(tokens)}), "
        f"{tokens['completion']:,} generated",
        f"- Time: {_seconds(durations['total'])} in all; model {_seconds(durations['model'])}, "
        f"tools {_seconds(durations['tools'])}" + (f"; stages: {stages}" if stages else ""),
    ]
    patch = report["patch"]
    if patch is not None:
        lines.append(
            f"- Patch: {len(patch['files']):,} file(s), "
            f"+{patch['insertions']:,} -{patch['deletions']:,}"
        )
    stop = report["stop_reason"]
    if stop and stop != "completed":
        lines.append(
            f"- The agent stopped early: {_code(stop)} ({_md(report['stop_detail'] or '')})"
        )
    return lines


def pull_request_body(
    report: RunReport,
    *,
    issue_number: int,
    link: Literal["refs", "fixes"],
    run_id: str,
    trajectory_location: str,
    draft: bool = True,
) -> str:
    """The pull request description: the warning first, then the agent's summary (quoted),
    test evidence, gate warnings, run statistics, run id and trajectory, and the link line
    (`Refs #N`, or `Fixes #N` to close the issue on merge) last. `draft` False adds a note
    that the repository cannot have draft pull requests."""
    if link not in ("refs", "fixes"):
        raise ValueError(f"link must be 'refs' or 'fixes', not {link!r}")
    parts: list[_Part] = [_fixed(f"> [!WARNING]\n> {WARNING}")]
    if not draft:
        parts.append(
            _fixed(
                "\n> [!NOTE]\n> This repository cannot have draft pull requests, so this one is "
                f"a normal pull request. Treat it as a draft: the `{HUMAN_REVIEW_CHECK}` check "
                "blocks merging (when branch protection requires it) until an independent "
                "approval."
            )
        )
    summary = report["summary"].strip()
    parts += [_fixed("\n## What the agent says\n")]
    if summary:
        parts.append(_Part(_md(summary), render=_quote))
    else:
        parts.append(_fixed("_The agent wrote no summary._"))
    parts += [_fixed("\n## Test evidence\n"), *_evidence(report["verification"])]
    parts += [_fixed("\n## Gate warnings\n"), *_findings(report["gate"], severity="warn")]
    parts += [
        _fixed("\n## Run\n"),
        *(_Part(line) for line in _statistics(report)),
        _fixed(f"- Run id: {_code(run_id)}"),
        _fixed(f"- Trajectory: {_code(trajectory_location)}"),
        _fixed(f"\n{'Fixes' if link == 'fixes' else 'Refs'} #{issue_number}"),
    ]
    return _fit(parts, BODY_BUDGET)


# -- commit ------------------------------------------------------------------------------------


def _wrap(text: str) -> str:
    """Wrap long prose lines at 72 columns; code (fenced or indented) and short lines stay."""
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence or line.startswith(("    ", "\t")) or len(line) <= _WRAP_WIDTH:
            out.append(line.rstrip())
            continue
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        bullet = re.match(r"([-*+]|\d+[.)])\s+", stripped)
        hanging = indent + " " * (len(bullet.group(0)) if bullet else 0)
        out.append(
            textwrap.fill(
                stripped,
                width=_WRAP_WIDTH,
                initial_indent=indent,
                subsequent_indent=hanging,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


def co_author_trailer(login: str, user_id: int | None) -> str:
    """`Co-authored-by: LOGIN <ID+LOGIN@users.noreply.github.com>` for a GitHub user. Without
    the numeric id (the webhook's `sender.id`), the older `LOGIN@users.noreply.github.com`,
    which GitHub also links to the account but which breaks if the user is renamed."""
    if not _LOGIN.fullmatch(login):
        raise ValueError(f"{login!r} is not a GitHub user login")
    if user_id is None:
        return f"Co-authored-by: {login} <{login}@users.noreply.github.com>"
    if isinstance(user_id, bool) or not isinstance(user_id, int) or user_id < 1:
        raise ValueError(f"{user_id!r} is not a GitHub user id")
    return f"Co-authored-by: {login} <{user_id}+{login}@users.noreply.github.com>"


def commit_message(
    issue_number: int,
    issue_title: str,
    summary: str,
    *,
    co_author_login: str,
    co_author_id: int | None,
) -> str:
    """A subject of at most 72 characters, the agent's summary wrapped at 72 columns (no
    mention, closing keyword or trailer survives from it or from the title), and the
    `Co-authored-by:` trailer crediting whoever asked for the run."""
    title = _one_line(issue_title) or "(untitled issue)"
    subject = _shorten(f"FrogNano draft for #{issue_number}: {title}", _SUBJECT_WIDTH)
    body = neutralise(summary).strip()
    body = re.sub(r"\n{3,}", "\n\n", body)
    if len(body) > _COMMIT_SUMMARY_CHARS:
        cut = len(body) - _COMMIT_SUMMARY_CHARS
        body = body[:_COMMIT_SUMMARY_CHARS].rstrip() + f"\n\n… ({cut:,} characters cut)"
    lines = [subject, ""]
    if body:
        lines += [_wrap(body), ""]
    lines.append(co_author_trailer(co_author_login, co_author_id))
    return "\n".join(lines) + "\n"


# -- check runs --------------------------------------------------------------------------------


def _output_block(label: str, run: SuiteRunRecord | None) -> list[_Part]:
    if run is None or not run["output"]:
        return []
    text = _CONTROL.sub("", _ANSI.sub("", run["output"])).rstrip("\n")
    lines = text.split("\n")
    if len(lines) > _OUTPUT_LINES:
        text = f"… ({len(lines) - _OUTPUT_LINES:,} earlier lines not shown)\n" + "\n".join(
            lines[-_OUTPUT_LINES:]
        )
    return [
        _fixed(f"\n### {label} (last lines)\n"),
        _Part(text, render=_fence, keep="tail"),
    ]


def verification_check(report: RunReport) -> tuple[Conclusion, str, str, str]:
    """The `FrogNano / verification` check run: (conclusion, title, summary, text).
    `success` only when the gate passed and the policy's `require` rule held."""
    gate, verification = report["gate"], report["verification"]
    gate_passed = gate is not None and gate["passed"]
    held = verification is not None and verification["held"]
    require = _code(verification["require"] if verification is not None else "-")
    conclusion: Conclusion = "success" if gate_passed and held else "failure"
    if conclusion == "success":
        title = "The gate passed and verification held"
        verdict = f"The gate passed and rule {require} held."
    elif gate is None or verification is None:
        title = "Not verified"
        verdict = "The patch was not both gated and verified, so it must not be published."
    elif not gate_passed:
        title = "The gate blocked the patch"
        verdict = "The gate blocked the patch: it must not be published."
    else:
        title = "Verification failed"
        verdict = f"Rule {require} did not hold: the patch must not be published."
    summary_parts = [
        _fixed(f"**{verdict}**\n"),
        *_evidence(verification),
        _fixed("\n### Gate\n"),
        *_findings(gate, severity=None),
    ]
    summary = _fit(summary_parts, CHECK_BUDGET)
    text_parts = [_fixed("Test output, most recent lines last.")]
    if verification is not None:
        text_parts += _output_block("Before (base)", verification["baseline"])
        text_parts += _output_block("After (base + patch)", verification["verification"])
    if len(text_parts) == 1:
        text_parts = [_fixed("No test output was recorded.")]
    return conclusion, title, summary, _fit(text_parts, CHECK_BUDGET)


# -- why there is no pull request ---------------------------------------------------------------

_STOPS = {
    "step_limit": "the agent used all its steps",
    "time_limit": "the agent ran out of time",
    "context_limit": "the conversation outgrew the model's context",
    "model_error": "the model server failed",
    "no_answer": "the model's replies had neither a usable tool call nor an answer",
    "sandbox_error": "the sandbox failed",
    "cancelled": "the run was cancelled",
}


_FAILURES: tuple[tuple[str, ComparisonList], ...] = (
    ("Broken", "broken"),
    ("Failing differently", "fails_differently"),
    ("Still failing", "still_failing"),
)


def no_pull_request_reason(report: RunReport) -> list[str]:
    """Markdown lines saying why a run opened no pull request, most decisive first: gate
    findings that block, failing verification, an empty patch, the agent's limits."""
    lines: list[str] = []
    gate, verification, patch = report["gate"], report["verification"], report["patch"]
    stop = report["stop_reason"] or ""
    detail = _md(report["stop_detail"] or "")
    if report["error"]:
        lines.append(f"The run failed: {_md(report['error'])}.")
    elif patch is None or not patch["files"]:
        why = _STOPS.get(stop)
        lines.append("The agent changed no file" + (f" ({why}: {detail})." if why else "."))
    elif gate is not None and not gate["passed"]:
        lines.append("The gate blocked the patch:")
        blocking = [f for f in gate["findings"] if f["severity"] == "block"]
        lines += [_finding_line(finding) for finding in blocking[:10]]
        if len(blocking) > 10:
            lines.append(f"- and {len(blocking) - 10:,} more")
    elif verification is None or not verification["held"]:
        if verification is None:
            lines.append("The patch was not verified.")
        else:
            lines.append(
                f"The tests did not support the patch: rule "
                f"{_code(verification['require'])} did not hold "
                f"({_md(verification['reason'])})."
            )
            comparison = verification["comparison"]
            for label, key in _FAILURES:
                if comparison is not None and comparison[key]:
                    lines.append(_items(label, comparison[key], limit=10))
            lines.append(_run_line("After (base + patch)", verification["verification"]))
    else:
        lines.append(_md(report["outcome"]["reason"] or "unknown") + ".")
    empty = lines[0].startswith("The agent changed no file")
    if patch is not None and stop in _STOPS and not empty:
        lines.append(f"Also, {_STOPS[stop]} ({detail}).")
    return lines


# -- the status comment -------------------------------------------------------------------------

_MARKER = re.compile(r"<!-- frognano:status[ -~]*? -->")


def status_marker(issue_number: int) -> str:
    """The hidden first line of the status comment on issue `issue_number`."""
    return f"<!-- frognano:status issue={int(issue_number)} -->"


def _run(run_id: str | None) -> str:
    return f"\n\n<sub>Run {_code(run_id)}</sub>" if run_id else ""


def _queued(*, run_id: str | None = None, retry_in: float | None = None) -> str:
    if retry_in is not None:
        minutes = max(1, round(retry_in / 60))
        return (
            "**FrogNano: waiting for a sandbox.** Every sandbox the cluster allows is in use; "
            f"this run starts again in about {minutes} minute{'s' if minutes != 1 else ''}. "
            "Nothing needs doing; this comment is updated as it goes." + _run(run_id)
        )
    return (
        "**FrogNano: queued.** A sandboxed run will start on this issue shortly; this comment "
        "is updated as it goes." + _run(run_id)
    )


def _already_running(*, run_id: str | None = None, label: str = "frognano") -> str:
    return (
        "**FrogNano is already working on this issue**, so the new request did not start a "
        f"second run. To start over, wait for this run to finish, then remove the "
        f"{_code(label)} label and add it again." + _run(run_id)
    )


def _working(
    *, step: int, max_steps: int, tool: str | None = None, run_id: str | None = None
) -> str:
    now = f"; now running {_code(tool)}" if tool else ""
    return (
        f"**FrogNano is working:** step {int(step):,} of at most {int(max_steps):,}{now}. "
        "Everything runs in an isolated sandbox without network or credentials." + _run(run_id)
    )


def _testing(*, run_id: str | None = None) -> str:
    return (
        "**FrogNano is testing the patch:** the tests run on the base and on the base plus "
        "the patch, in a fresh sandbox, and the patch is checked against the policy." + _run(run_id)
    )


def _published(
    *, url: str, number: int | None = None, draft: bool = True, run_id: str | None = None
) -> str:
    if number is None:
        found = re.search(r"/pull/(\d+)/?$", url)
        number = int(found.group(1)) if found else None
    kind = "a draft pull request" if draft else "a pull request"
    which = f": #{int(number)}" if number is not None else ""
    note = (
        ""
        if draft
        else " This repository cannot have drafts, so it is a normal pull request: treat it "
        "as a draft."
    )
    return (
        f"**FrogNano opened {kind}{which}** ({_md(url)}).{note}\n\n"
        "It was written by a small research model: a human must review every line, and the "
        f"`{HUMAN_REVIEW_CHECK}` check blocks it until someone other than the person who "
        "asked approves." + _run(run_id)
    )


def _no_pull_request(
    *,
    report: RunReport | None = None,
    reason: str | None = None,
    run_id: str | None = None,
) -> str:
    if report is not None:
        lines = no_pull_request_reason(report)
        run_id = run_id or report["run_id"]
    elif reason is not None:
        lines = [_md(reason.rstrip(".")) + "."]
    else:
        raise TypeError("no_pull_request needs the report or a reason")
    return (
        "**FrogNano opened no pull request.**\n\n"
        + "\n".join(lines)
        + "\n\nYou can improve the issue's description and add the label again to retry."
        + _run(run_id)
    )


def _cancelled(*, reason: str, run_id: str | None = None) -> str:
    return (
        f"**FrogNano stopped: the run was cancelled** ({_md(reason)}). Nothing was published."
        + _run(run_id)
    )


def _error(*, run_id: str, label: str = "frognano") -> str:
    return (
        "**FrogNano failed with an internal error**, and nothing was published. Add the "
        f"{_code(label)} label again to retry; if it fails again, ask the administrators "
        f"to look up run {_code(run_id)} in the worker's logs."
    )


_STAGE_RENDERERS: dict[str, Callable[..., str]] = {
    "queued": _queued,
    "already_running": _already_running,
    "working": _working,
    "testing": _testing,
    "published": _published,
    "no_pull_request": _no_pull_request,
    "cancelled": _cancelled,
    "error": _error,
}


def status_comment(stage: Stage, *, marker: str, **facts: Any) -> str:
    """The body of the status comment at `stage`, starting with the hidden `marker` line
    (`status_marker(N)`). Facts per stage (keyword arguments; a missing or unknown one
    raises TypeError):

    - `queued`: run_id?, retry_in? (seconds until a run that found no sandbox tries again)
    - `already_running` (a second trigger while a run is on): run_id?, label?
    - `working`: step, max_steps, tool?, run_id?
    - `testing`: run_id?
    - `published`: url (the pull request's html_url), number? (else read from the url),
      draft?, run_id?
    - `no_pull_request`: report (build_report's dict; the reasons come from it) or reason,
      run_id?
    - `cancelled`: reason, run_id?
    - `error`: run_id, label? (the exception is never shown: it may hold internal detail)

    There is no `unauthorised` stage on purpose: a labeller without the required permission
    gets no comment at all (nothing that tells an outsider how the app is set up, and no
    bot-written noise an outsider could trigger at will); the worker only logs it.
    """
    if str(stage) == "unauthorised":
        raise ValueError("unauthorised labellers get no status comment; log it instead")
    renderer = _STAGE_RENDERERS.get(stage)
    if renderer is None:
        raise ValueError(f"unknown status stage {stage!r}; one of {', '.join(STAGES)}")
    if not _MARKER.fullmatch(marker):
        raise ValueError(f"{marker!r} is not a FrogNano status marker")
    body = renderer(**facts)
    return _fit([_fixed(marker), _Part(body)], BODY_BUDGET)
