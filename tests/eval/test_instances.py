"""The instances file: both list encodings, errors that name the line and field, selection."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from frognano.errors import ConfigError
from frognano.eval.instances import load_instances, select
from frognano.eval.repos import check_out, find_repository

ROW: dict[str, object] = {
    "instance_id": "o__r-1",
    "repo": "o/r",
    "base_commit": "0123abc",
    "problem_statement": "# It breaks\n\nDetails.",
    "FAIL_TO_PASS": '["tests/test_a.py::test_x"]',
    "PASS_TO_PASS": ["tests/test_a.py::test_y"],
}


def _write(path: Path, *rows: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_both_encodings_of_the_test_lists_and_the_json_list_form(tmp_path: Path) -> None:
    (one,) = load_instances(_write(tmp_path / "a.jsonl", ROW))
    assert one.fail_to_pass == ["tests/test_a.py::test_x"]
    assert one.pass_to_pass == ["tests/test_a.py::test_y"]
    assert one.title == "It breaks"
    listed = tmp_path / "b.json"
    listed.write_text(json.dumps([ROW, {**ROW, "instance_id": "o__r-2", "PASS_TO_PASS": ""}]))
    assert [i.pass_to_pass for i in load_instances(listed)] == [["tests/test_a.py::test_y"], []]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"repo": "../etc"}, "line 2: repo"),
        ({"repo": "o/.."}, "line 2: repo: Value error, a repository is not named . or .."),
        ({"instance_id": "../x"}, "line 2: instance_id"),
        ({"base_commit": "HEAD"}, "line 2: base_commit"),
        ({"FAIL_TO_PASS": "[not json"}, "line 2: FAIL_TO_PASS"),
        ({"instance_id": "o__r-1"}, "line 2: instance_id o__r-1 repeats"),
    ],
)
def test_a_bad_instance_refuses_the_file_naming_line_and_field(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = _write(tmp_path / "i.jsonl", ROW, {**ROW, "instance_id": "o__r-2", **change})
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_instances(path)


def test_ids_then_filter_then_slice(tmp_path: Path) -> None:
    rows = [{**ROW, "instance_id": f"o__r-{n}"} for n in range(1, 6)]
    found = load_instances(_write(tmp_path / "i.jsonl", *rows))
    assert [i.instance_id for i in select(found, pattern=r"-[2-5]$", slice_text="1:3")] == [
        "o__r-3",
        "o__r-4",
    ]
    assert [i.instance_id for i in select(found, ids=["o__r-5", "o__r-1"])] == [
        "o__r-1",
        "o__r-5",
    ]
    with pytest.raises(ConfigError, match="unknown instances: o__r-9"):
        select(found, ids=["o__r-9"])
    with pytest.raises(ConfigError, match="--slice takes START:STOP"):
        select(found, slice_text="3")


def test_a_tree_is_written_whole_without_history_or_export_ignore(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(origin), *args], capture_output=True, text=True,
                              check=True)  # fmt: skip
        return done.stdout.strip()

    git("init", "-q")
    (origin / "kept.py").write_text("x = 1\n")
    (origin / ".gitattributes").write_text("kept.py export-ignore\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    (origin / "kept.py").write_text("x = 2  # the fix, later\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "fix")
    mirrors = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--mirror", str(origin), str(mirrors / "o__r")],
                   check=True)  # fmt: skip
    tree = tmp_path / "tree"
    check_out(find_repository(mirrors, "o/r"), base, tree)
    assert (tree / "kept.py").read_text() == "x = 1\n"
    assert not (tree / ".git").exists()
    with pytest.raises(ConfigError, match="no git repository for o/other"):
        find_repository(mirrors, "o/other")
    with pytest.raises(ConfigError, match="cannot read commit"):
        check_out(find_repository(mirrors, "o/r"), "0" * 40, tmp_path / "none")
