"""The draft's "What the tests stand behind": hunk by hunk, the tests that need it."""

from __future__ import annotations

from frognano.app.markdown import Part, code, fixed, md, shorten
from frognano.run.standbehind import ChangedLinesRecord, NecessityRecord, changed_lines_sentence

_SHOWN = 20
_PREVIEW_CHARS = 100


def changed_lines_parts(record: ChangedLinesRecord | None) -> list[Part]:
    if record is None:
        return []
    if record["error"]:
        # The measurement's own words come from the sandbox (the collector's record).
        said = f"The changed lines' coverage could not be measured: {md(record['error'])}."
        parts = [Part(said)]
    else:
        parts = [fixed(changed_lines_sentence(record))]
    missed = [
        f"- no test executed {code(shorten(path, 160))} lines {spans}"
        for path, spans in list(record["not_executed"].items())[:_SHOWN]
    ]
    missed += [f"- {code(shorten(path, 160))} does not parse" for path in record["unparsed"]]
    if missed:
        parts.append(Part("\n".join(missed)))
    return parts


def stand_behind_parts(
    record: NecessityRecord | None, changed: ChangedLinesRecord | None = None
) -> list[Part]:
    """The section for the pull request body and the verification check run; every path,
    test id and line of code in it is the repository's or the agent's text, made inert."""
    if record is None and changed is None:
        return []
    parts = [fixed("\n**What the tests stand behind:**\n"), *changed_lines_parts(changed)]
    if record is None:
        return parts
    if not record["hunks"]:
        return [*parts, fixed(record["note"] or "No hunk of the fix was checked.")]
    parts.append(
        fixed(
            "Each hunk of the fix was reverted alone, then the tests the fix made pass ran "
            "again in fresh sandboxes. A test that runs a line does not check it."
        )
    )
    lines = []
    agent = set(record["agent_tests"])
    for hunk in record["hunks"][:_SHOWN]:
        where = ", ".join(code(place) for place in hunk["where"])
        status = hunk["status"]
        if status == "unknown":
            said = f"could not tell ({md(hunk['problem'])})"
        elif status == "not_needed":
            first = hunk["preview"][0] if hunk["preview"] else ""
            said = "**no test needs this change**" + (
                f": {code(shorten(first, _PREVIEW_CHARS))}" if first else ""
            )
        else:
            named = ", ".join(
                code(shorten(test, 160)) + (" (the agent's own test)" if test in agent else "")
                for test in hunk["needed_by"][:3]
            )
            more = len(hunk["needed_by"]) - 3
            said = f"needed by {named}" + (f" and {more} more" if more > 0 else "")
        lines.append(f"- {where}: {said}")
    left = len(record["hunks"]) - _SHOWN
    if left > 0:
        lines.append(f"- and {left} more (report.json)")
    parts.append(Part("\n".join(lines)))
    if record["note"]:
        parts.append(fixed(record["note"]))
    return parts
