"""Reading the instructions files from the base tree: what is used, cut, absent or refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from frognano.agent.prompts import Guidance
from frognano.policy.models import AgentPolicy
from frognano.run.instructions import (
    MAX_FILE_BYTES,
    MAX_TOTAL_BYTES,
    InstructionFile,
    instructions_line,
    read_instructions,
)
from frognano.run.report import InstructionsRecord

SECRET = "root:x:0:0:THE-SECRET\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A base tree, with a secret beside it that no instructions file may ever reach."""
    (tmp_path / "secret").write_text(SECRET)
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    return root


def policy(*files: str, text: str = "") -> AgentPolicy:
    return AgentPolicy(instructions=text, instructions_files=list(files))


def read_one(root: Path, path: str, exclude: tuple[str, ...] = ()) -> InstructionFile:
    (found,) = read_instructions(root, policy(path), exclude).files
    assert SECRET.strip() not in found.text
    return found


def test_a_present_file_is_used_whole(tree: Path) -> None:
    (tree / "AGENTS.md").write_text("Run `make test`.\n")
    (tree / "docs" / "AI.md").write_text("Säg hej.\n")
    read = read_instructions(tree, policy("AGENTS.md", "docs/AI.md", text="Be brief."))
    assert read.files == (
        InstructionFile("AGENTS.md", "used", "Run `make test`.\n", size=17),
        InstructionFile("docs/AI.md", "used", "Säg hej.\n", size=10),
    )
    assert read.guidance() == (
        Guidance("Be brief."),
        Guidance("Run `make test`.\n", "AGENTS.md"),
        Guidance("Säg hej.\n", "docs/AI.md"),
    )
    assert read.record() == {
        "policy_text_bytes": 9,
        "files": [
            {"path": "AGENTS.md", "status": "used", "bytes": 17, "size": 17, "cut": False,
             "reason": None},
            {"path": "docs/AI.md", "status": "used", "bytes": 10, "size": 10, "cut": False,
             "reason": None},
        ],
    }  # fmt: skip


def test_an_absent_file_is_listed_as_absent_not_an_error(tree: Path) -> None:
    (tree / "docs" / "x").write_text("a file, not a folder")
    for path in ("AGENTS.md", "nowhere/AGENTS.md", "docs/x/AGENTS.md"):
        assert read_one(tree, path) == InstructionFile(path, "absent")
    read = read_instructions(tree, policy("AGENTS.md"))
    assert read.guidance() == ()
    assert read.record()["files"][0]["status"] == "absent"


def test_admin_text_alone(tree: Path) -> None:
    read = read_instructions(tree, policy(text="Use tox."))
    assert read.guidance() == (Guidance("Use tox."),)
    assert read.record() == {"policy_text_bytes": 8, "files": []}
    blank = read_instructions(tree, policy(text="  \n"))
    assert blank.guidance() == ()
    assert blank.record()["policy_text_bytes"] == 0


def test_an_oversized_file_is_cut_at_the_cap_on_a_character_boundary(tree: Path) -> None:
    # "é" is two bytes; the cap falls in the middle of the last one that would fit.
    text = "a" + "é" * MAX_FILE_BYTES
    (tree / "AGENTS.md").write_text(text)
    found = read_one(tree, "AGENTS.md")
    assert found.status == "used"
    assert found.cut
    assert found.size == len(text.encode())
    assert found.text == text[: MAX_FILE_BYTES // 2]
    assert found.used_bytes == MAX_FILE_BYTES - 1
    guidance = read_instructions(tree, policy("AGENTS.md")).guidance()
    assert guidance == (Guidance(found.text, "AGENTS.md", cut_from=found.size),)


def test_the_files_share_a_total_cap(tree: Path) -> None:
    names = [f"{index}.md" for index in range(4)]
    for name in names:
        (tree / name).write_text("x" * (MAX_FILE_BYTES - 100))
    files = read_instructions(tree, policy(*names)).files
    used = [found.used_bytes for found in files]
    assert used[:2] == [MAX_FILE_BYTES - 100] * 2
    assert sum(used) == MAX_TOTAL_BYTES
    assert files[2].cut
    assert files[3].status == "skipped"
    assert files[3].reason == "the files before it used all 32,768 bytes allowed in all"


@pytest.mark.parametrize("target", ["/etc/passwd", "../secret", "../../secret", "docs/real.md"])
def test_a_symlink_is_never_followed(tree: Path, target: str) -> None:
    (tree / "docs" / "real.md").write_text("inside the tree, but through a link\n")
    (tree / "AGENTS.md").symlink_to(target)
    found = read_one(tree, "AGENTS.md")
    assert found == InstructionFile(
        "AGENTS.md", "skipped", reason="it is a symbolic link, and FrogNano follows none"
    )


@pytest.mark.parametrize("target", ["/etc", "..", "docs"])
def test_a_path_through_a_linked_folder_is_refused(tree: Path, target: str) -> None:
    (tree / "docs" / "passwd").write_text("docs\n")
    (tree / "linked").symlink_to(target)
    name = "secret" if target == ".." else "passwd"
    found = read_one(tree, f"linked/{name}")
    assert found.status == "skipped"
    assert found.reason == "it is inside linked, a symbolic link, and FrogNano follows none"


def test_non_regular_files_are_refused_without_blocking(tree: Path) -> None:
    os.mkfifo(tree / "fifo.md")
    (tree / "folder.md").mkdir()
    for path in ("fifo.md", "folder.md"):
        assert read_one(tree, path) == InstructionFile(
            path, "skipped", reason="it is not a regular file"
        )


def test_non_utf8_and_empty_files_are_skipped_with_the_reason(tree: Path) -> None:
    (tree / "latin1.md").write_bytes("Grüße\n".encode("latin-1"))
    (tree / "empty.md").write_text(" \n\n")
    latin = read_one(tree, "latin1.md")
    assert latin.status == "skipped"
    assert latin.reason == "it is not UTF-8 text (invalid start byte at byte 2)"
    assert latin.size == 6
    assert read_one(tree, "empty.md").reason == "it is empty"


def test_a_byte_order_mark_is_dropped(tree: Path) -> None:
    (tree / "AGENTS.md").write_bytes(b"\xef\xbb\xbfHello\n")
    assert read_one(tree, "AGENTS.md").text == "Hello\n"


def test_what_the_upload_leaves_out_is_not_read(tree: Path) -> None:
    (tree / "build").mkdir()
    (tree / "build" / "AGENTS.md").write_text("generated\n")
    (tree / "AGENTS.md").write_text("ignored\n")
    found = read_one(tree, "build/AGENTS.md", exclude=("build", ".git"))
    assert found == InstructionFile(
        "build/AGENTS.md", "skipped", reason="build is left out of the uploaded tree"
    )
    assert read_one(tree, "AGENTS.md", exclude=("./AGENTS.md",)).status == "skipped"
    assert read_one(tree, "gone.md", exclude=("gone.md",)).status == "absent"


@pytest.mark.parametrize("path", ["../secret", "/etc/passwd", "docs/../../secret", "./x"])
def test_a_policy_that_skipped_validation_still_cannot_leave_the_tree(
    tree: Path, path: str
) -> None:
    unchecked = AgentPolicy.model_construct(instructions="", instructions_files=[path])
    (found,) = read_instructions(tree, unchecked).files
    assert found.status == "skipped"
    assert found.reason is not None
    assert found.reason.startswith(f"the path {path!r}")
    assert found.text == ""


def test_the_one_line_summary() -> None:
    unopened = read_instructions(Path("/nonexistent"), policy("AGENTS.md")).record()
    assert unopened["files"][0]["status"] == "skipped"  # the tree itself cannot be opened
    assert instructions_line(unopened, str, absent=False) == (
        "Instructions for the agent: AGENTS.md skipped: the base tree cannot be opened "
        "(No such file or directory)"
    )
    record: InstructionsRecord = {
        "policy_text_bytes": 1200,
        "files": [
            {"path": "AGENTS.md", "status": "used", "bytes": 16384, "size": 40000, "cut": True,
             "reason": None},
            {"path": "CLAUDE.md", "status": "absent", "bytes": 0, "size": None, "cut": False,
             "reason": None},
            {"path": "docs/AI.md", "status": "skipped", "bytes": 0, "size": None, "cut": False,
             "reason": "it is a symbolic link, and FrogNano follows none"},
        ],
    }  # fmt: skip
    quoted = instructions_line(record, lambda path: f"`{path}`", absent=True)
    assert quoted == (
        "Instructions for the agent: the policy's text (1,200 bytes); `AGENTS.md` (16,384 "
        "bytes, cut); `CLAUDE.md` absent; `docs/AI.md` skipped: it is a symbolic link, and "
        "FrogNano follows none"
    )
    nothing: InstructionsRecord = {"policy_text_bytes": 0, "files": [record["files"][1]]}
    assert instructions_line(nothing, str, absent=False) is None
    assert instructions_line(nothing, str, absent=True) == (
        "Instructions for the agent: CLAUDE.md absent"
    )


def test_a_link_left_out_because_it_leads_outside_is_skipped_saying_so(tree: Path) -> None:
    # The download left out `AGENTS.md -> /etc/passwd` and `docs/x -> ../../..`: the tree has
    # neither (and may hold nothing there), yet neither file is merely absent.
    (tree / "CLAUDE.md").write_text("kept\n")
    links = ("AGENTS.md", "docs/x")
    read = read_instructions(
        tree, policy("AGENTS.md", "docs/x/AGENTS.md", "CLAUDE.md"), outside_links=links
    )
    assert read.files == (
        InstructionFile(
            "AGENTS.md",
            "skipped",
            reason="it is a symbolic link leading outside the repository, which FrogNano left "
            "out of the tree",
        ),
        InstructionFile(
            "docs/x/AGENTS.md",
            "skipped",
            reason="it is inside docs/x, a symbolic link leading outside the repository, "
            "which FrogNano left out of the tree",
        ),
        InstructionFile("CLAUDE.md", "used", "kept\n", size=5),
    )
    # Not a prefix match on names: `docs/xy` is not below `docs/x`.
    assert read_instructions(tree, policy("docs/xy.md"), outside_links=links).files[0] == (
        InstructionFile("docs/xy.md", "absent")
    )
