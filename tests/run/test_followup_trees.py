"""A follow-up's trees: the head as changes to the base, and the increment to publish."""

from __future__ import annotations

import os
from pathlib import Path

from frognano.policy.models import EffectivePolicy
from frognano.run.apply import AppliedFile
from frognano.run.followup import FollowUpState, increment_files, tree_changes
from frognano.run.plan import make_plan
from frognano.run.trees import HostTree


def tree(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


BASE = {"a.py": "1\n", "gone.py": "x\n", "tests/test_a.py": "t\n"}
HEAD = {"a.py": "2\n", "b.py": "new\n", "tests/test_a.py": "t\n"}


async def trees(tmp_path: Path) -> tuple[HostTree, FollowUpState]:
    base = await HostTree.scan(tree(tmp_path / "base", BASE), [])
    head_dir = tree(tmp_path / "head", HEAD)
    os.symlink("a.py", head_dir / "link")
    head = await HostTree.scan(head_dir, [])
    return base, FollowUpState(head, tree_changes(base, head))


def changed(path: str, text: str) -> AppliedFile:
    return AppliedFile(path, "100644", text.encode())


async def test_the_head_is_the_files_it_changes(tmp_path: Path) -> None:
    _, state = await trees(tmp_path)
    assert state.earlier == (
        changed("a.py", "2\n"),
        changed("b.py", "new\n"),
        AppliedFile("gone.py", "", None),
        AppliedFile("link", "120000", b"a.py"),
    )


async def test_the_increment_comes_from_the_verified_tree(tmp_path: Path) -> None:
    base, state = await trees(tmp_path)
    earlier = {change.path: change for change in state.earlier}
    cumulative = [
        changed("a.py", "3\n"),
        earlier["b.py"],
        earlier["gone.py"],
        earlier["link"],
        changed("tests/test_a.py", "weakened\n"),
    ]
    plan = make_plan(cumulative, base, base.paths, EffectivePolicy())
    assert [item.path for item in plan.restored] == ["tests/test_a.py"]
    honest = [changed("a.py", "3\n"), changed("tests/test_a.py", "weakened\n")]
    # The restored test stays as on the head; only a.py goes into the new commit.
    assert increment_files(base, state, plan, honest) == ((changed("a.py", "3\n"),), None)
    # An increment diff that claims other bytes than the cumulative one is caught.
    assert increment_files(base, state, plan, [changed("a.py", "4\n")])[1] == "a.py"


async def test_a_cumulative_diff_that_drops_an_earlier_change_disagrees(tmp_path: Path) -> None:
    base, state = await trees(tmp_path)
    earlier = {change.path: change for change in state.earlier}
    cumulative = [changed("a.py", "3\n"), earlier["gone.py"], earlier["link"]]  # b.py dropped
    plan = make_plan(cumulative, base, base.paths, EffectivePolicy())
    files, disagreement = increment_files(base, state, plan, [changed("a.py", "3\n")])
    assert disagreement == "b.py"
    assert AppliedFile("b.py", "", None) in files
