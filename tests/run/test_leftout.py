"""A patch kept off the symlinks the download left out: the gate's blocking findings."""

from __future__ import annotations

from frognano.policy.gate.findings import Finding
from frognano.run.apply import AppliedFile
from frognano.run.leftout import KIND, LeftOutLink, left_out_findings, link_above, with_left_out

LINKS = (LeftOutLink("AGENTS.md", "/etc/passwd"), LeftOutLink("docs/x", "../../.."))


def test_a_change_at_a_left_out_link_or_below_one_is_blocked() -> None:
    applied = [
        AppliedFile("AGENTS.md", "100644", b"my own rules\n"),
        AppliedFile("docs/x/notes.md", "100644", b"x\n"),
        AppliedFile("docs/x", "", None),
        AppliedFile("docs/xy.md", "100644", b"not below docs/x\n"),
        AppliedFile("calc.py", "100644", b"print()\n"),
    ]
    findings = left_out_findings(applied, LINKS)
    assert [(f.severity, f.kind, f.path) for f in findings] == [
        ("block", KIND, "AGENTS.md"),
        ("block", KIND, "docs/x/notes.md"),
        ("block", KIND, "docs/x"),
    ]
    assert findings[0].reason == (
        "the patch writes AGENTS.md where the repository has a symbolic link leading outside "
        "it, which FrogNano left out of the tree: publishing it would replace that link with "
        "an untested change; leave the path alone"
    )
    assert findings[1].reason.startswith("the patch writes docs/x/notes.md, below docs/x, where")
    assert findings[2].reason.startswith("the patch deletes docs/x where")


def test_no_links_no_findings_and_merged_findings_stay_sorted_and_unique() -> None:
    applied = [AppliedFile("AGENTS.md", "100644", b"x\n"), AppliedFile("z.py", "100644", b"")]
    assert left_out_findings(applied, ()) == []
    warn = Finding("warn", "large_file", "big", "z.py")
    first = Finding("warn", "suspicious", "odd", "a.py")
    merged = with_left_out([warn, first, warn], applied, LINKS)
    assert [(f.path, f.kind) for f in merged] == [
        ("AGENTS.md", KIND),
        ("a.py", "suspicious"),
        ("z.py", "large_file"),
    ]


def test_link_above_names_the_link_itself_or_a_parent() -> None:
    paths = [link.path for link in LINKS]
    assert link_above("docs/x", paths) == "docs/x"
    assert link_above("docs/x/a/b", paths) == "docs/x"
    assert link_above("docs/x.md", paths) is None
    assert link_above("AGENTS.md/x", paths) == "AGENTS.md"
    assert LINKS[0].record() == {"path": "AGENTS.md", "target": "/etc/passwd"}
