"""FrogNano's pytest collector in real pytest processes: the outcomes and ids it reports."""

from __future__ import annotations

from pathlib import Path

from tests.run.collector_project import INI, run_pytest, write_files

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
