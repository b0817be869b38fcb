"""Changed-line measurement in real pytest processes: only FrogNano's settings count."""

from __future__ import annotations

import json
from pathlib import Path

from frognano.run.results import parse_records
from tests.run.collector_project import INI, run_pytest, write_files

PROJECT = {
    **INI,
    "calc.py": """
        LIMIT = 10


        def add(a, b):
            if a > LIMIT:
                return 0
            return a + b
    """,
    "other.py": "def unused():\n    return 1\n",
    "tests/conftest.py": "import calc  # imported before any test, as conftest files do\n",
    "tests/test_calc.py": """
        from calc import add

        def test_add():
            assert add(1, 2) == 3
    """,
    # The repository's own settings would hide calc.py entirely.
    ".coveragerc": "[run]\nomit = calc.py\n[report]\nexclude_lines =\n    return a\n",
}


def _lines(run_records: list[dict[str, object]]) -> dict[str, list[int]]:
    (record,) = [r for r in run_records if r["kind"] == "coverage"]
    assert record["error"] is None, record
    files = record["files"]
    assert isinstance(files, dict)
    return files


def test_only_the_listed_files_are_measured_from_before_conftest(tmp_path: Path) -> None:
    write_files(tmp_path, PROJECT)
    run = run_pytest(tmp_path, cover=["calc.py"])
    assert run.exit_code == 0, run.output
    # Line 1 runs when conftest.py imports calc: measuring started before that.
    assert _lines(run.records()) == {"calc.py": [1, 4, 5, 7]}
    report = run.report()
    assert not report.problems
    assert report.executed == {"calc.py": frozenset({1, 4, 5, 7})}
    assert report.coverage_error == ""


def test_xdist_workers_send_their_lines_back(tmp_path: Path) -> None:
    write_files(tmp_path, PROJECT)
    run = run_pytest(tmp_path, "-p", "xdist", "-n", "2", cover=["calc.py", "other.py"])
    assert run.exit_code == 0, run.output
    # Lines 5 and 7 run only inside a worker; other.py is never imported.
    assert _lines(run.records()) == {"calc.py": [1, 4, 5, 7]}


def test_a_coverage_module_in_the_tree_cannot_stand_in(tmp_path: Path) -> None:
    """`python -m pytest` puts the tree first on sys.path; a forged coverage.py there, which
    would say every line ran, is never the one imported."""
    forged = """
        class Coverage:
            def __init__(self, *args, **kwargs):
                pass
            def set_option(self, *args):
                pass
            def start(self):
                pass
            def stop(self):
                pass
            def sys_info(self):
                return [("core", "forged")]
            def get_data(self):
                return self
            def measured_files(self):
                import os
                return [os.path.abspath("calc.py")]
            def lines(self, path):
                return list(range(1, 100))
    """
    write_files(tmp_path, {**PROJECT, "coverage.py": forged})
    run = run_pytest(tmp_path, cover=["calc.py"])
    assert _lines(run.records()) == {"calc.py": [1, 4, 5, 7]}
    (record,) = [r for r in run.records() if r["kind"] == "coverage"]
    assert record["core"] != "forged"


def test_a_second_coverage_record_is_tampering(tmp_path: Path) -> None:
    write_files(tmp_path, PROJECT)
    run = run_pytest(tmp_path, cover=["calc.py"])
    lines = run.stream.splitlines()
    index = next(i for i, line in enumerate(lines) if b'"kind":"coverage"' in line)
    again = json.loads(lines[index])
    again["seq"] += 1
    again["files"] = {"calc.py": [1, 4, 5, 6, 7]}
    forged = [*lines[: index + 1], json.dumps(again).encode(), *lines[index + 1 :]]
    report = parse_records(b"\n".join(forged) + b"\n", run.token)
    assert any(problem.kind == "tampered" for problem in report.problems)


def test_nothing_is_measured_unless_asked(tmp_path: Path) -> None:
    write_files(tmp_path, PROJECT)
    run = run_pytest(tmp_path)
    assert not [r for r in run.records() if r["kind"] == "coverage"]
    assert run.report().executed is None
