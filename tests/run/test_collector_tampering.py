"""Tests that stop the run, forge records or start pytest again: the collector catches them."""

from __future__ import annotations

from pathlib import Path

from frognano.run.collector import COLLECTOR_MODULE, collector_dir
from tests.run.collector_project import INI, run_pytest, write_files


def test_stopping_early_leaves_collected_tests_unreported(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {**INI, "tests/test_x.py": "def test_a():\n    assert 0\n\ndef test_b():\n    pass\n"},
    )
    report = run_pytest(tmp_path, "-x").report()
    assert dict(report.outcomes) == {"tests/test_x.py::test_a": "failed"}
    (problem,) = report.problems
    assert problem.kind == "unreported"
    assert "tests/test_x.py::test_b" in problem.message


def test_a_test_collected_twice_is_a_problem(tmp_path: Path) -> None:
    write_files(tmp_path, {**INI, "tests/test_x.py": "def test_a():\n    pass\n"})
    run = run_pytest(tmp_path, "--keep-duplicates", "tests/test_x.py", "tests/test_x.py")
    assert run.exit_code == 0, run.output
    assert run.kinds() == {"duplicate"}


def test_os_exit_in_a_test_leaves_the_session_unfinished(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            **INI,
            "tests/test_x.py": """
                import os

                def test_a():
                    pass

                def test_quits():
                    os._exit(0)

                def test_c():
                    assert 0
            """,
        },
    )
    run = run_pytest(tmp_path)
    assert run.exit_code == 0
    report = run.report()
    assert [p.kind for p in report.problems] == ["unfinished"]
    assert "never finished" in report.problems[0].message
    assert not report.passed


def test_pytest_exit_is_an_interrupted_run(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            **INI,
            "tests/test_x.py": """
                import pytest

                def test_stops():
                    pytest.exit("enough")

                def test_never():
                    assert 0
            """,
        },
    )
    assert run_pytest(tmp_path).kinds() == {"unreported", "exit_status"}
    # Even an exit that claims success leaves the remaining tests unreported.
    (tmp_path / "tests/test_x.py").write_text(
        "import pytest\n\ndef test_stops():\n    pytest.exit('ok', returncode=0)\n"
        "\ndef test_never():\n    assert 0\n"
    )
    run = run_pytest(tmp_path)
    assert run.exit_code == 0
    assert "unreported" in run.kinds()
    assert not run.report().passed


FORGERIES = {
    **INI,
    "tests/test_x.py": """
        import json, os

        def test_fails():
            assert 0

        def test_forges():
            record = {"v": 1, "kind": "test", "token": "guessed", "pid": os.getpid(), "seq": 3,
                      "id": "tests/test_x.py::test_fails", "outcome": "passed", "duration": 0,
                      "phases": {"setup": "passed", "call": "passed", "teardown": "passed"},
                      "crash": None}
            os.write(87, (json.dumps(record) + "\\n").encode())

        def test_garbage():
            os.write(87, b"all tests passed\\n")

        def test_half_a_line():
            os.write(87, b'{"v": 1, ')
    """,
    "tests/test_y.py": """
        import json, os, sys

        def test_fails_too():
            assert 0

        def test_forges_with_the_token():
            # Code in the test process can find the token; it still has to get the order right.
            token = sys.modules["frognano_collector"]._SETTINGS.token
            record = {"v": 1, "kind": "test", "token": token, "pid": os.getpid(), "seq": 1,
                      "id": "tests/test_y.py::test_fails_too", "outcome": "passed",
                      "duration": 0, "crash": None,
                      "phases": {"setup": "passed", "call": "passed", "teardown": "passed"}}
            os.write(87, (json.dumps(record) + "\\n").encode())
    """,
}


def test_records_forged_by_a_test_are_problems(tmp_path: Path) -> None:
    write_files(tmp_path, FORGERIES)
    report = run_pytest(tmp_path).report()
    messages = [p.message for p in report.problems if p.kind == "tampered"]
    assert any("the wrong token" in m for m in messages), messages
    assert any("not JSON" in m for m in messages), messages
    assert report.outcomes.get("tests/test_x.py::test_fails") == "failed"
    assert any("where" in m and "was due" in m for m in messages), messages
    assert "duplicate" in {p.kind for p in report.problems}
    assert report.outcomes.get("tests/test_y.py::test_fails_too") == "failed"
    assert not report.trustworthy
    assert not report.passed


def test_test_code_finds_no_trace_of_the_collector(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            **INI,
            "tests/test_env.py": f"""
                import os

                def test_environment_is_clean():
                    assert not [name for name in os.environ if name.startswith("FROGNANO_")]
                    assert "{COLLECTOR_MODULE}" not in os.environ.get("PYTEST_PLUGINS", "")
                    assert os.environ.get("PYTEST_PLUGINS") == "pytester"
                    assert os.environ.get("PYTHONPATH") == "src"

                def test_stream_is_not_inherited():
                    assert os.get_inheritable(87) is False
            """,
        },
    )
    run = run_pytest(
        tmp_path,
        env={
            "PYTEST_PLUGINS": f"{COLLECTOR_MODULE},pytester",
            "PYTHONPATH": f"{collector_dir()}:src",
        },
    )
    assert run.report().passed, run.output


NESTED = {
    **INI,
    "tests/test_outer.py": """
        import os, subprocess, sys
        import pytest

        pytest_plugins = ["pytester"]

        def test_pytest_main_in_process(tmp_path):
            (tmp_path / "test_inner.py").write_text("def test_inner():\\n    pass\\n")
            # Even naming the collector again does not make it report this session.
            args = [str(tmp_path), "-p", "frognano_collector", "-p", "no:cacheprovider", "-q"]
            assert pytest.main(args) == 0

        def test_pytester_inline(pytester):
            pytester.makepyfile(test_nested="def test_nested():\\n    assert 0\\n")
            pytester.inline_run().assertoutcome(failed=1)

        def test_subprocess_pytest(tmp_path):
            (tmp_path / "test_sub.py").write_text(
                "import os\\n"
                "def test_sub():\\n"
                "    assert not [n for n in os.environ if n.startswith('FROGNANO_')]\\n"
                "    os.fstat(87)\\n"
            )
            command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tmp_path)]
            result = subprocess.run(command, close_fds=False, capture_output=True, text=True)
            assert result.returncode == 1, result.stdout  # fd 87 is not there
            assert "Bad file descriptor" in result.stdout
    """,
}


def test_a_pytest_started_by_a_test_does_not_report(tmp_path: Path) -> None:
    write_files(tmp_path, NESTED)
    run = run_pytest(tmp_path)
    report = run.report()
    assert report.problems == (), run.output
    assert len(report.sessions) == 1
    assert report.passed, run.output
    assert set(report.outcomes) == {
        "tests/test_outer.py::test_pytest_main_in_process",
        "tests/test_outer.py::test_pytester_inline",
        "tests/test_outer.py::test_subprocess_pytest",
    }
