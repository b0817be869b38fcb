"""The status comment's note when a run uses the last good policy: which file fails, and why."""

from __future__ import annotations

from frognano.app.markdown import code, shorten
from frognano.policy.store import InForce

__all__ = ["policy_note"]

_ERROR_LIMIT = 300
"""The error is cut to this many characters: the comment is about the run, not the policy."""


def policy_note(standing: InForce) -> str | None:
    """Markdown saying that the policy files fail to load (the first problem, inert) and that
    the run uses the last policy that loaded, with its time; None when the files load.

    The problem is the admins' YAML quoted back (a key, a value), so it is shown as a code
    span, nothing in it live; file names are relative to the policy directory, never the
    host's path.
    """
    if not standing.errors:
        return None
    first = standing.errors[0]
    directory = standing.policies.directory
    if first.line is None:
        where = "the policy directory"
    elif first.file.parent == directory:
        where = f"{first.file.name}:{first.line}"
    else:
        where = f"{first.file}:{first.line}"
    message = first.message.replace(str(directory), directory.name)
    error = " ".join(f"{where}: {first.path}: {message}".split())
    more = len(standing.errors) - 1
    others = f" and {more} more problem{'s' if more != 1 else ''}" if more else ""
    when = standing.loaded_at.strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"**Note: the policy files currently fail to load** ({code(shorten(error, _ERROR_LIMIT))}"
        f"{others}), so this run uses the last policy that loaded, in force since {when} "
        f"(policy generation {standing.generation}). The administrators see every problem "
        "with `frognano policy validate`."
    )
