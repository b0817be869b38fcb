"""The collector under the commands that start pytest: selection, scripts, exit codes, xdist."""

from __future__ import annotations

import os
from pathlib import Path

from frognano.run.results import NO_SESSION, parse_records
from tests.run.collector_project import INI, pytest_argv, run_command, run_pytest, write_files


def test_only_selected_files_run(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            **INI,
            "tests/test_a.py": "def test_a():\n    pass\n",
            "tests/test_b.py": "open('b-imported', 'w')\ndef test_b():\n    assert 0\n",
            "tests/sub/test_c.py": "def test_c():\n    pass\n\ndef test_d():\n    assert 0\n",
            "tests/other/conftest.py": "open('other-conftest-loaded', 'w')\n",
            "tests/other/test_e.py": "def test_e():\n    assert 0\n",
        },
    )
    selected = ["tests/test_a.py", "./tests/sub/test_c.py::test_c"]
    run = run_pytest(tmp_path, select=selected)
    report = run.report()
    # pytest 7 collects a directory's files before its subdirectories, pytest 8 in name order.
    assert sorted(report.collected) == ["tests/sub/test_c.py::test_c", "tests/test_a.py::test_a"]
    assert report.passed, run.output
    assert report.sessions[0].selected_files == 2
    assert "1 deselected" in run.output  # test_d: its file is selected, the test is not
    # A file or folder no selected test is in is never collected: not imported, no conftest.
    assert not (tmp_path / "b-imported").exists()
    assert not (tmp_path / "other-conftest-loaded").exists()

    report = run_pytest(tmp_path, select=[]).report()
    assert report.collected == ()
    assert report.problems == ()  # exit status 5: nothing collected
    assert not report.passed


def test_an_unreadable_selection_runs_nothing(tmp_path: Path) -> None:
    write_files(tmp_path, {**INI, "tests/test_a.py": "def test_a():\n    pass\n"})
    run = run_pytest(tmp_path, env={"FROGNANO_COLLECTOR_SELECT": str(tmp_path / "missing")})
    report = run.report()
    assert report.collected == ()
    assert [p.kind for p in report.problems] == ["selection"]
    assert report.sessions[0].exitstatus == 5


def test_the_exit_code_is_checked_against_the_sessions(tmp_path: Path) -> None:
    write_files(tmp_path, {**INI, "tests/test_a.py": "def test_a():\n    pass\n"})
    pytest_line = " ".join(pytest_argv())
    run = run_command(tmp_path, ["bash", "-c", f"{pytest_line}; exit 3"])
    assert run.exit_code == 3
    (problem,) = run.report().problems
    assert problem.kind == "exit_code"
    assert "exited 3 though every pytest session" in problem.message

    (tmp_path / "tests/test_a.py").write_text("def test_a():\n    assert 0\n")
    run = run_command(tmp_path, ["bash", "-c", f"{pytest_line} || true"])
    assert run.exit_code == 0
    (problem,) = run.report().problems
    assert problem.kind == "exit_code"
    assert "exited 0 though pytest" in problem.message


def test_a_script_running_pytest_twice_merges_its_sessions(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            **INI,
            "tests/unit/test_u.py": "def test_u():\n    pass\n",
            "tests/web/test_w.py": "def test_w():\n    pass\n",
            "run-tests.sh": f"""
                set -e
                cd tests/..
                {" ".join(pytest_argv("tests/unit"))}
                {" ".join(pytest_argv("-q", "tests/web"))}
            """,
        },
    )
    run = run_command(tmp_path, ["bash", "run-tests.sh"])
    report = run.report()
    assert report.problems == (), run.output
    assert len(report.sessions) == 2
    assert set(report.outcomes) == {"tests/unit/test_u.py::test_u", "tests/web/test_w.py::test_w"}
    assert report.passed

    (tmp_path / "run-tests.sh").write_text(" ".join(pytest_argv()) + "\n" + " ".join(pytest_argv()))
    report = run_command(tmp_path, ["bash", "run-tests.sh"]).report()
    assert [p.kind for p in report.problems] == ["duplicate"]
    assert "more than one pytest session" in report.problems[0].message


def test_without_a_usable_fd_pytest_still_runs(tmp_path: Path) -> None:
    write_files(tmp_path, {**INI, "tests/test_a.py": "def test_a():\n    pass\n"})
    for fd_value in ("", "not-a-number", "99"):
        run = run_pytest(tmp_path, fd_value=fd_value)
        assert run.exit_code == 0, run.output
        assert "INTERNALERROR" not in run.output
        assert run.stream == b""
        assert [p.message for p in run.report().problems] == [NO_SESSION]


def test_a_command_that_does_not_load_the_collector_reports_nothing(tmp_path: Path) -> None:
    write_files(tmp_path, {**INI, "tests/test_a.py": "def test_a():\n    pass\n"})
    run = run_pytest(tmp_path, "-p", "no:frognano_collector")
    assert run.exit_code == 0
    report = parse_records(run.stream, run.token)
    assert [p.kind for p in report.problems] == ["no_session"]
    assert "file descriptor 87" in report.problems[0].message


def test_importing_the_plugin_without_its_variables_does_nothing(tmp_path: Path) -> None:
    write_files(tmp_path, {**INI, "tests/test_a.py": "def test_a():\n    pass\n"})
    env = {name: "" for name in ("FROGNANO_COLLECTOR_TOKEN", "FROGNANO_COLLECTOR_ROOT")}
    run = run_command(
        tmp_path,
        ["env", *(f"--unset={name}" for name in ("FROGNANO_COLLECTOR_FD", *env)), *pytest_argv()],
    )
    assert run.exit_code == 0, run.output
    assert run.stream == b""
    assert os.environ.get("FROGNANO_COLLECTOR_FD") is None


XDIST_PROJECT = {
    **INI,
    "tests/test_a.py": """
        import os

        def test_passes():
            pass

        def test_fails():
            assert 0, "on a worker"

        def test_kills_its_worker():
            os._exit(3)
    """,
    "tests/test_b.py": "def test_elsewhere():\n    pass\n",
    "tests/test_broken.py": "import no_such_module\n",
}


def test_under_xdist_the_controller_reports_for_its_workers(tmp_path: Path) -> None:
    write_files(tmp_path, XDIST_PROJECT)
    run = run_pytest(tmp_path, "-p", "xdist", "-n", "2", "--continue-on-collection-errors")
    report = run.report()
    (session,) = report.sessions
    assert session.xdist_controller
    # Workers write nothing: one session, each test once, the collection error once.
    assert report.problems == (), run.output
    assert [e.id for e in report.collect_errors] == ["tests/test_broken.py"]
    assert dict(report.outcomes) == {
        "tests/test_a.py::test_passes": "passed",
        "tests/test_a.py::test_fails": "failed",
        "tests/test_a.py::test_kills_its_worker": "failed",
        "tests/test_b.py::test_elsewhere": "passed",
    }
    assert report.crashes["tests/test_a.py::test_kills_its_worker"].startswith("worker 'gw")

    # The workers collect, so they select: the controller hands them the selection.
    run = run_pytest(tmp_path, "-p", "xdist", "-n", "2", select=["tests/test_a.py"])
    report = run.report()
    assert report.problems == (), run.output
    assert sorted(report.collected) == [
        "tests/test_a.py::test_fails",
        "tests/test_a.py::test_kills_its_worker",
        "tests/test_a.py::test_passes",
    ]
