"""The commit FrogNano makes: its message, wrapped at 72 columns, and the co-author trailer."""

from __future__ import annotations

import re
import textwrap

from frognano.app.markdown import neutralise, shorten, single_line

_SUBJECT_WIDTH = 72
_WRAP_WIDTH = 72
_COMMIT_SUMMARY_CHARS = 4_000
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
# A line git (and GitHub) could read as a trailer: `Token: value`, the token letters, digits
# and hyphens. Model text never gets to write one: FrogNano's own records are not in commit
# messages, but a `Co-authored-by:` or `Signed-off-by:` line still means something to people
# and tools reading them.
_TRAILER_SHAPED = re.compile(r"^(\s*[A-Za-z0-9][A-Za-z0-9-]*)(\s*:)", re.MULTILINE)
_ZWJ = "\u200d"


def no_trailers(text: str) -> str:
    """`text` with a zero-width joiner before the colon of every trailer-shaped line, so no
    line of it parses as a trailer (git allows only letters, digits and `-` before it)."""
    return _TRAILER_SHAPED.sub(lambda m: m.group(1) + _ZWJ + m.group(2), text)


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
    mention, closing keyword or trailer-shaped line survives from it or from the title), and
    the `Co-authored-by:` trailer crediting whoever asked for the run."""
    title = single_line(issue_title) or "(untitled issue)"
    subject = shorten(f"FrogNano draft for #{issue_number}: {title}", _SUBJECT_WIDTH)
    body = neutralise(summary).strip()
    body = re.sub(r"\n{3,}", "\n\n", body)
    if len(body) > _COMMIT_SUMMARY_CHARS:
        cut = len(body) - _COMMIT_SUMMARY_CHARS
        body = body[:_COMMIT_SUMMARY_CHARS].rstrip() + f"\n\n… ({cut:,} characters cut)"
    lines = [subject, ""]
    if body:
        lines += [no_trailers(_wrap(body)), ""]  # after wrapping: a wrap starts lines
    lines.append(co_author_trailer(co_author_login, co_author_id))
    return "\n".join(lines) + "\n"
