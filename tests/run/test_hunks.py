"""A fix's hunks as FrogNano cuts them, and reverts that rebuild the file exactly."""

from __future__ import annotations

from frognano.run.apply import AppliedFile
from frognano.run.hunks import file_units, units_of

BASE = b"def add(a, b):\n    return a - b\n\n\ndef is_admin(name):\n    return name == 'root'\n"
FIX = BASE.replace(b"a - b", b"a + b")
BYPASS = b"    if name == 'mallory':\n        return True\n"
RIDER = FIX.replace(b"def is_admin(name):\n", b"def is_admin(name):\n" + BYPASS)


def test_each_run_of_changed_lines_is_reverted_alone_and_exactly() -> None:
    units = file_units(AppliedFile("calc.py", "100644", RIDER), ("100644", BASE))
    assert [unit.hunks[0].where for unit in units] == ["calc.py:2", "calc.py:6-7"]
    fix, rider = units
    # Reverting the rider leaves exactly the fix; reverting the fix leaves the rider alone.
    assert rider.reverted.content == FIX
    assert fix.reverted.content == RIDER.replace(b"a + b", b"a - b")
    assert rider.hunks[0].preview == ("    if name == 'mallory':", "        return True")
    assert not fix.grouped
    assert not rider.grouped


def test_a_rider_on_the_line_next_to_the_fix_is_the_same_hunk() -> None:
    """The limit of the method, shown: lines that change together are one hunk."""
    patched = BASE.replace(b"    return a - b\n", b"    return a + b if a != 7 else 0\n")
    units = file_units(AppliedFile("calc.py", "100644", patched), ("100644", BASE))
    assert len(units) == 1
    assert units[0].reverted.content == BASE


def test_hunks_that_break_the_file_apart_are_reverted_together() -> None:
    base = b"def f():\n    x = 1\n\n    return x\n"
    # A new block opener and its body, one unchanged line apart: either alone does not parse.
    patched = b"def f():\n    if True:\n        x = 1\n\n        return x\n"
    units = file_units(AppliedFile("m.py", "100644", patched), ("100644", base))
    assert len(units) == 1
    assert units[0].reverted.content == base
    assert "unparseable" in units[0].grouped


def test_new_deleted_binary_and_mode_changes_are_whole_files() -> None:
    added = file_units(AppliedFile("new.py", "100644", b"x = 1\n"), None)
    assert added[0].reverted == AppliedFile("new.py", "", None)
    assert "new file" in added[0].grouped
    deleted = file_units(AppliedFile("old.py", "", None), ("100644", b"x = 1\n"))
    assert deleted[0].reverted == AppliedFile("old.py", "100644", b"x = 1\n")
    binary = file_units(AppliedFile("a.bin", "100644", b"\0\1"), ("100644", b"\0\2"))
    assert "binary" in binary[0].grouped
    mode = file_units(AppliedFile("run.sh", "100755", b"echo\n"), ("100644", b"echo\n"))
    assert "mode" in mode[0].grouped


def test_past_the_limit_each_files_hunks_go_together_and_it_says_so() -> None:
    changes = [
        AppliedFile("calc.py", "100644", RIDER),
        AppliedFile("other.py", "100644", b"y = 2\n"),
    ]

    def base(path: str) -> tuple[str, bytes] | None:
        return {"calc.py": ("100644", BASE), "other.py": ("100644", b"y = 1\n")}.get(path)

    units, note = units_of(changes, base, limit=3)
    assert len(units) == 3
    assert not note
    units, note = units_of(changes, base, limit=2)
    assert [len(unit.hunks) for unit in units] == [2, 1]
    assert units[0].reverted.content == BASE
    assert "more than verify.hunk_limit (2)" in note
    units, note = units_of(changes, base, limit=1)
    assert len(units) == 1
    assert "only the first 1 were checked" in note
