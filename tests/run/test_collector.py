"""FrogNano's pytest collector in real pytest processes: what it reports, and what it catches."""

from __future__ import annotations

import os
from pathlib import Path

from frognano.run.collector import COLLECTOR_MODULE, collector_dir
from frognano.run.results import NO_SESSION, parse_records
from tests.run.collector_project import pytest_argv, run_command, run_pytest, write_files

INI = {"pytest.ini": "[pytest]\n"}

OUTCOMES_PROJECT = {
    **INI,
    "tests/test_kinds.py": """
        import pytest

        def test_passes():
            pass

        def test_fails():
            assert 1 + 1 == 3, "arithmetic"

        @pytest.fixture
        def broken():
            raise RuntimeError("fixture broke")

        def test_setup_error(broken):
            pass

        @pytest.fixture
        def bad_teardown():
            yield
            raise RuntimeError("teardown broke")

        def test_teardown_error(bad_teardown):
            pass

        def test_fails_and_teardown_error(bad_teardown):
            assert False, "call first"

        def test_skipped():
            pytest.skip("not here")

        @pytest.fixture
        def skipping():
            pytest.skip("no resource")

        def test_skipped_in_setup(skipping):
            pass

        @pytest.mark.xfail(reason="known bug", strict=False)
        def test_xfailed():
            assert False

        def test_xfailed_imperatively():
            pytest.xfail("not yet")

        @pytest.mark.xfail(reason="fixed?", strict=False)
        def test_xpassed():
            pass

        @pytest.mark.xfail(reason="must fail", strict=True)
        def test_xpassed_strict():
            pass

        @pytest.mark.parametrize("value", [1, "two words", None], ids=["one", "a b", "none"])
        def test_param(value):
            assert value != 1

        class TestGroup:
            def test_method(self):
                pass
    """,
    "tests/test_unit.py": """
        import unittest

        class Case(unittest.TestCase):
            def test_ok(self):
                self.assertTrue(True)

            def test_bad(self):
                self.assertEqual(1, 2)

            @unittest.skip("later")
            def test_skip(self):
                pass

            def test_subtest_fails(self):
                for n in range(2):
                    with self.subTest(n=n):
                        self.assertEqual(n, 0)
    """,
}


def test_every_outcome_is_reported_per_test(tmp_path: Path) -> None:
    write_files(tmp_path, OUTCOMES_PROJECT)
    run = run_pytest(tmp_path)
    report = run.report()
    k, u = "tests/test_kinds.py::", "tests/test_unit.py::Case::"
    assert dict(report.outcomes) == {
        k + "test_passes": "passed",
        k + "test_fails": "failed",
        k + "test_setup_error": "error",
        k + "test_teardown_error": "error",
        k + "test_fails_and_teardown_error": "failed",
        k + "test_skipped": "skipped",
        k + "test_skipped_in_setup": "skipped",
        k + "test_xfailed": "xfailed",
        k + "test_xfailed_imperatively": "xfailed",
        k + "test_xpassed": "xpassed",
        k + "test_xpassed_strict": "failed",
        k + "test_param[one]": "failed",
        k + "test_param[a b]": "passed",
        k + "test_param[none]": "passed",
        k + "TestGroup::test_method": "passed",
        u + "test_ok": "passed",
        u + "test_bad": "failed",
        u + "test_skip": "skipped",
        u + "test_subtest_fails": "failed",
    }, run.output
    assert report.problems == (), run.output
    assert run.exit_code == 1
    crashes = report.crashes
    assert crashes[k + "test_fails"].startswith("AssertionError: arithmetic")
    assert crashes[k + "test_setup_error"] == "RuntimeError: fixture broke"
    assert crashes[k + "test_teardown_error"] == "RuntimeError: teardown broke"
    assert crashes[k + "test_fails_and_teardown_error"].startswith("AssertionError: call first")
    assert crashes[k + "test_xpassed_strict"].startswith("[XPASS(strict)]")
    assert crashes[u + "test_bad"] == "AssertionError: 1 != 2"
    assert k + "test_passes" not in crashes
    assert report.summary == "5 passed, 6 failed, 2 errors, 3 skipped, 2 xfailed, 1 xpassed"
    setup_error = report.tests[k + "test_setup_error"]
    assert dict(setup_error.phases) == {"setup": "failed", "teardown": "passed"}
    (session,) = report.sessions
    assert session.exitstatus == 1
    assert session.rootdir == str(tmp_path)
    assert report.collected == tuple(report.outcomes)


def test_records_are_whole_json_lines_with_the_token(tmp_path: Path) -> None:
    write_files(tmp_path, {**INI, "tests/test_one.py": "def test_one():\n    pass\n"})
    run = run_pytest(tmp_path)
    records = run.records()
    assert [r["kind"] for r in records] == ["session_start", "collected", "test", "session_finish"]
    assert {r["token"] for r in records} == {run.token}
    assert [r["seq"] for r in records] == [0, 1, 2, 3]
    assert all(r["v"] == 1 for r in records)
    assert run.report().passed
    assert run.report().summary == "1 passed"


def test_a_collection_error_is_reported_apart_from_problems(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            **INI,
            "tests/test_good.py": "def test_good():\n    pass\n",
            "tests/test_broken.py": "import no_such_module\n",
            "tests/test_skipped_module.py": """
                import pytest
                pytest.skip("not on this platform", allow_module_level=True)
            """,
        },
    )
    report = run_pytest(tmp_path).report()
    (error,) = report.collect_errors
    assert error.id == "tests/test_broken.py"
    assert "No module named 'no_such_module'" in error.message
    # pytest stops before running anything when collection fails: a failure, not a problem.
    assert report.problems == ()
    assert not report.usable_baseline
    assert not report.passed
    assert report.summary == "1 collection error"

    report = run_pytest(tmp_path, "--continue-on-collection-errors").report()
    assert dict(report.outcomes) == {"tests/test_good.py::test_good": "passed"}
    assert len(report.collect_errors) == 1
    assert report.problems == ()


def test_a_module_level_skip_is_no_error(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            **INI,
            "tests/test_good.py": "def test_good():\n    pass\n",
            "tests/test_skipped_module.py": """
                import pytest
                pytest.skip("not on this platform", allow_module_level=True)
            """,
        },
    )
    run = run_pytest(tmp_path)
    report = run.report()
    assert report.collect_errors == ()
    assert report.problems == ()
    assert report.passed, run.output


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
}


def test_records_forged_by_a_test_are_problems(tmp_path: Path) -> None:
    write_files(tmp_path, FORGERIES)
    report = run_pytest(tmp_path).report()
    messages = [p.message for p in report.problems if p.kind == "tampered"]
    assert any("the wrong token" in m for m in messages), messages
    assert any("not JSON" in m for m in messages), messages
    assert report.outcomes.get("tests/test_x.py::test_fails") == "failed"
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


def test_only_selected_files_run(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            **INI,
            "tests/test_a.py": "def test_a():\n    pass\n",
            "tests/test_b.py": "def test_b():\n    assert 0\n",
            "tests/sub/test_c.py": "def test_c():\n    pass\n",
        },
    )
    run = run_pytest(tmp_path, select=["tests/test_a.py", "./tests/sub/test_c.py"])
    report = run.report()
    # pytest 7 collects a directory's files before its subdirectories, pytest 8 in name order.
    assert sorted(report.collected) == ["tests/sub/test_c.py::test_c", "tests/test_a.py::test_a"]
    assert report.passed, run.output
    assert report.sessions[0].selected_files == 2
    assert "1 deselected" in run.output

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


def test_ids_are_relative_to_the_repository_root(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "service/pytest.ini": "[pytest]\n",
            "service/tests/test_s.py": "def test_s():\n    pass\n",
            "service/tests/test_p.py": """
                import pytest

                @pytest.mark.parametrize("x", ["a/b"])
                def test_p(x):
                    pass
            """,
        },
    )
    run = run_pytest(tmp_path, cwd=tmp_path / "service")
    report = run.report()
    assert report.sessions[0].rootdir == str(tmp_path / "service")
    assert set(report.outcomes) == {
        "service/tests/test_s.py::test_s",
        "service/tests/test_p.py::test_p[a/b]",
    }
    assert report.passed, run.output

    run = run_pytest(tmp_path, cwd=tmp_path / "service", select=["service/tests/test_s.py"])
    assert run.report().collected == ("service/tests/test_s.py::test_s",)


def test_a_src_layout_package_is_importable(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src"]\n',
            "src/shapes/__init__.py": "def area(w, h):\n    return w * h\n",
            "tests/test_shapes.py": "from shapes import area\n\ndef test_area():\n"
            "    assert area(2, 3) == 6\n",
            "tests/conftest.py": "",
        },
    )
    run = run_pytest(tmp_path)
    report = run.report()
    assert report.passed, run.output
    assert report.sessions[0].conftests == ("tests/conftest.py",)


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
