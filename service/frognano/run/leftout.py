"""Symlinks left out of the base (they lead outside the repository) and the patch kept off them."""

# The worker's download leaves out every symlink of the repository whose target is absolute or
# climbs out of the tree (github/archive.py), so the agent and verification never see one. The
# published commit is the gated files applied to the base on GitHub, where each such link is
# still there: a file written at its path (or below it) would replace the real link, and the
# commit would no longer be the verified diff applied to the base. Such a patch is blocked.

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from frognano.policy.gate.findings import Finding, display
from frognano.run.apply import AppliedFile
from frognano.run.report import LeftOutLinkRecord

__all__ = ["KIND", "LeftOutLink", "left_out_findings", "link_above", "with_left_out"]

KIND = "left_out_link"
"""The kind of the gate finding about a patch that touches a left-out link."""


@dataclass(frozen=True)
class LeftOutLink:
    """A symlink of the repository that is not in the base tree FrogNano works on."""

    path: str
    """Its path in the repository."""
    target: str
    """Where it points: repository content, untrusted."""

    def record(self) -> LeftOutLinkRecord:
        return {"path": self.path, "target": self.target}


def link_above(path: str, links: Iterable[str]) -> str | None:
    """The left-out link that is `path` or one of its parent folders, or None."""
    for link in links:
        if path == link or path.startswith(link + "/"):
            return link
    return None


def left_out_findings(
    applied: Sequence[AppliedFile], links: Sequence[LeftOutLink]
) -> list[Finding]:
    """A blocking finding for each file of the patch at a left-out link or below one."""
    paths = [link.path for link in links]
    findings = []
    for change in applied:
        link = link_above(change.path, paths)
        if link is None:
            continue
        verb = "deletes" if change.content is None else "writes"
        where = "" if link == change.path else f", below {display(link)},"
        reason = (
            f"the patch {verb} {display(change.path)}{where} where the repository has a "
            "symbolic link leading outside it, which FrogNano left out of the tree: publishing "
            "it would replace that link with an untested change; leave the path alone"
        )
        findings.append(Finding("block", KIND, reason, change.path))
    return findings


def with_left_out(
    findings: Sequence[Finding], applied: Sequence[AppliedFile], links: Sequence[LeftOutLink]
) -> list[Finding]:
    """`findings` and the left-out links' own, sorted by path as the gate sorts them."""
    merged = list(dict.fromkeys([*findings, *left_out_findings(applied, links)]))
    merged.sort(key=lambda finding: (finding.path or "", finding.kind))
    return merged
