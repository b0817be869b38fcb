"""The `NN-name.yaml` naming convention, and a warning for each policy file that breaks it."""

# Files apply in sorted name order and later files win, so a name's place in that order is a
# policy decision. Digits sort before letters: a `default.yaml` dropped beside `50-acme.yaml`
# applies after it and silently takes back what it changed. Two digits and a dash make the
# order plain to read, so every other name is a warning (never an error: the files stay valid).

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from frognano.policy.issues import PolicyIssue

__all__ = ["CONVENTION", "name_warnings"]

CONVENTION = re.compile(r"\d\d-.")
"""A policy file's name starts with two digits and a dash: `00-default.yaml`, `50-acme.yaml`."""


def name_warnings(files: Sequence[Path]) -> list[PolicyIssue]:
    """A warning at line 1 of each of `files` (in the order they apply) whose name does not
    follow CONVENTION, naming the files it comes after (and so overrides)."""
    found: list[PolicyIssue] = []
    for index, path in enumerate(files):
        if CONVENTION.match(path.name):
            continue
        before = [earlier.name for earlier in files[:index]]
        if before:
            more = f" and {len(before) - 3} more" if len(before) > 3 else ""
            shown = ", ".join(before[:3]) + more
            where = f"it applies after {shown}, so any key it sets overrides theirs"
        else:
            where = "it applies first today, but a file added later may sort before or after it"
        if path.name == "default.yaml":
            rename = "rename it 00-default.yaml, so that it applies first"
        else:
            rename = (
                f"rename it NN-{path.name}, with the NN that puts it where it should apply "
                "(00- for defaults, 50- for a team's rules)"
            )
        found.append(
            PolicyIssue(
                path,
                1,
                "(file)",
                "the name does not start with two digits and a dash (NN-name.yaml), so its "
                f"place in the order is easy to misjudge: files apply in name order and later "
                f"ones win; {where}; {rename}",
                warning=True,
            )
        )
    return found
