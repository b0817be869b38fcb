"""Files the test command runs or reads (rule 3): every command form, as harness_changes sees it."""

from __future__ import annotations

import pytest

from frognano.policy.gate.harness.command import MAX_DEPTH, command_targets, simple_commands
from frognano.policy.gate.harness.files import harness_changes


def command_hit(command: str, path: str, *, added: bool = False) -> str | None:
    """The reason when the patch changing (or adding) `path` hits rule 3 for `command`."""
    change = (path, None if added else b"old\n", b"new\n")
    base_paths = frozenset() if added else frozenset([path])
    hits = harness_changes([change], command=command, base_paths=base_paths)
    assert all(hit.rule == "command_file" for hit in hits), hits
    return hits[0].reason if hits else None


@pytest.mark.parametrize(
    ("command", "path", "expected"),
    [
        # Scripts, however they are started.
        ("./scripts/test.sh", "scripts/test.sh", True),
        ("scripts/test.sh --fast", "scripts/test.sh", True),
        ("./scripts/test.sh", "scripts/other.sh", False),
        ("bash scripts/test.sh", "scripts/test.sh", True),
        ("bash -x -o pipefail ./scripts/test.sh", "scripts/test.sh", True),
        ("sh -e scripts/test.sh", "scripts/test.sh", True),
        ("bash -s < ci/test.sh", "ci/test.sh", True),
        ("python runtests.py", "runtests.py", True),
        ("python3 -u runtests.py --fast", "runtests.py", True),
        ("python3.11 -W error -X dev runtests.py", "runtests.py", True),
        ("python -Wignore runtests.py", "runtests.py", True),
        ("/workspace/run.sh", "run.sh", True),
        ("/usr/bin/env python runtests.py", "runtests.py", True),
        ("/opt/run.sh", "opt/run.sh", False),
        ("source ci/env.sh && pytest", "ci/env.sh", True),
        (". ci/env.sh; pytest", "ci/env.sh", True),
        ("python -c 'import runtests'", "runtests.py", False),  # code, not a file
        # python -m: the module, its package's __init__ and __main__, at the root or in src/.
        ("python -m tools.run_tests", "tools/run_tests.py", True),
        ("python -m tools.run_tests", "tools/run_tests/__main__.py", True),
        ("python -m tools.run_tests", "tools/run_tests/__init__.py", True),
        ("python -m tools.run_tests", "src/tools/run_tests.py", True),
        ("python -Bm tools.run_tests", "tools/run_tests.py", True),
        ("python -mtools.run_tests", "tools/run_tests.py", True),
        ("python -m tools.run_tests", "tools/__init__.py", False),
        ("python -m pytest", "pytest.py", True),  # shadows the installed pytest
        ("python -m pytest", "pytest/__init__.py", True),
        ("python -m pytest", "_pytest/__init__.py", True),
        ("python -m pytest", "pluggy.py", True),
        ("python -m pytest", "src/pytest/__init__.py", False),  # src/ comes after site-packages
        ("PYTHONPATH=src python -m pytest", "src/pytest/__init__.py", True),
        ("python -m pytest", "src/app.py", False),
        ("python -m pytest", "tests/test_app.py", False),
        # Separators, prefixes and wrappers.
        ("make lint && ./run.sh", "run.sh", True),
        ("make lint || ./run.sh", "run.sh", True),
        ("make lint; ./run.sh", "run.sh", True),
        ("./gen.sh | ./run.sh", "run.sh", True),
        ("make lint\n./run.sh", "run.sh", True),
        ("(cd sub && ./run.sh)", "sub/run.sh", True),
        ("./run.sh > out.log 2>&1 && ./after.sh", "after.sh", True),
        ("pytest # ./evil.sh", "evil.sh", False),  # a comment
        ("VAR=x ./run.sh", "run.sh", True),
        ("FOO=1 BAR=2 make test", "Makefile", True),
        ("env VAR=x python runtests.py", "runtests.py", True),
        ("env -i PATH=/usr/bin -u HOME bash -c './ci/test.sh'", "ci/test.sh", True),
        ("env -C sub ./run.sh", "sub/run.sh", True),
        ("env -S 'python runtests.py'", "runtests.py", True),
        ("bash -c 'cd sub && make test'", "sub/Makefile", True),
        ('bash -lc "python -m pytest -p tests.plugin"', "tests/plugin.py", True),
        ("sh -ec 'bash -c \"./deep.sh\"'", "deep.sh", True),
        ("timeout 600 ./run.sh", "run.sh", True),
        ("timeout -s KILL 10m ./run.sh", "run.sh", True),
        ("timeout --kill-after=5 60 ./run.sh", "run.sh", True),
        ("xvfb-run -a python -m pytest -p plug", "plug.py", True),
        ("xvfb-run -s '-screen 0 1024x768x24' ./run.sh", "run.sh", True),
        ("exec ./run.sh", "run.sh", True),
        ("nice -n 5 ./run.sh", "run.sh", True),
        ("command ./run.sh", "run.sh", True),
        ("time ./run.sh", "run.sh", True),
        ("nohup ./run.sh", "run.sh", True),
        ("if true; then ./run.sh; fi", "run.sh", True),
        ("uv run pytest -p plug", "plug.py", True),
        ("uv run --with pytest-xdist python runtests.py", "runtests.py", True),
        ("uv run --directory sub ./run.sh", "sub/run.sh", True),
        ("poetry run ./run.sh", "run.sh", True),
        ("poetry -C sub run ./run.sh", "sub/run.sh", True),
        ("pipenv run python runtests.py", "runtests.py", True),
        ("pdm run ./run.sh", "run.sh", True),
        ("hatch run test:python runtests.py", "runtests.py", True),
        ("coverage run -m pytest -p plug", "plug.py", True),
        ("coverage run --source=src runtests.py", "runtests.py", True),
        ("python -m coverage run --rcfile .coveragerc runtests.py", "runtests.py", True),
        ("cd sub && ./run.sh", "sub/run.sh", True),
        ("cd sub && ./run.sh", "run.sh", True),  # a `cd` is followed, and the root kept too
        ("cd .. && ./run.sh", "run.sh", True),
        # make: its makefiles, where -C and -f say.
        ("make test", "Makefile", True),
        ("make test", "makefile", True),
        ("make test", "GNUmakefile", True),
        ("gmake check", "Makefile", True),
        ("make test", "sub/Makefile", False),
        ("make test", "mk/rules.mk", False),  # included makefiles are not followed
        ("make -C sub test", "sub/Makefile", True),
        ("make -C sub test", "Makefile", False),
        ("make -Csub test", "sub/Makefile", True),
        ("make --directory=sub test", "sub/Makefile", True),
        ("make -C a -C b", "a/b/Makefile", True),
        ("make -f ci.mk test", "ci.mk", True),
        ("make -f ci.mk test", "Makefile", False),
        ("make -sfci.mk test", "ci.mk", True),
        ("make --file=ci.mk test", "ci.mk", True),
        ("make --makefile ci.mk test", "ci.mk", True),
        ("make -C sub -f ../ci.mk", "ci.mk", True),
        ("make -j 4 test", "Makefile", True),
        # tox and nox.
        ("tox -e py311", "tox.toml", True),
        ("tox -e py311", "tox-ci.ini", False),
        ("tox -c ci/tox-ci.ini", "ci/tox-ci.ini", True),
        ("tox --conf=ci/tox-ci.ini", "ci/tox-ci.ini", True),
        ("tox -cci/tox-ci.ini", "ci/tox-ci.ini", True),
        ("tox -c ci", "ci/tox.toml", True),
        ("tox --root sub -e py", "sub/tox.toml", True),
        ("python -m tox -c ci/t.ini", "ci/t.ini", True),
        ("nox -f ci/sessions.py", "ci/sessions.py", True),
        ("nox --noxfile=ci/sessions.py -s tests", "ci/sessions.py", True),
        ("nox --noxfile ci/sessions.py", "ci/sessions.py", True),
        ("python -m nox -fci/sessions.py", "ci/sessions.py", True),
        # pytest's options that name files.
        ("pytest -c ci/pytest-ci.cfg", "ci/pytest-ci.cfg", True),
        ("pytest --config-file ci/pytest-ci.cfg", "ci/pytest-ci.cfg", True),
        ("pytest --config-file=ci/pytest-ci.cfg", "ci/pytest-ci.cfg", True),
        ("pytest -cci/pytest-ci.cfg", "ci/pytest-ci.cfg", True),
        ("python -m pytest -q -c ci/p.toml", "ci/p.toml", True),
        ("py.test -c ci/p.cfg", "ci/p.cfg", True),
        ("timeout 600 python -m pytest -c ci/p.cfg", "ci/p.cfg", True),
        ("pytest -p myplugin", "myplugin.py", True),
        ("pytest -p myplugin", "myplugin/__init__.py", True),
        ("pytest -p myplugin", "src/myplugin.py", True),
        ("pytest -p myplugin", "myplugin/__main__.py", False),
        ("pytest -pmyplugin", "myplugin.py", True),
        ("pytest -qp myplugin", "myplugin.py", True),
        ("pytest -p tools.plugins.frog", "tools/plugins/frog.py", True),
        ("pytest -p no:cacheprovider", "cacheprovider.py", False),
        ("pytest -k myplugin", "myplugin.py", False),
        ("pytest --pyargs pkg.tests.test_mod", "pkg/tests/test_mod.py", True),
        ("pytest --pyargs pkg.tests.test_mod", "src/pkg/tests/test_mod.py", True),
        ("pytest --pyargs pkg", "pkg/__init__.py", False),  # code under test
        ("pytest --pyargs -k x pkg.check", "pkg/check.py", True),
        ("pytest --pyargs pkg.check", "pkg/check.py", True),
        ("pytest pkg.check", "pkg/check.py", False),
        ("pytest tests/test_app.py::test_add", "tests/test_app.py", True),
        ("pytest tests/test_app.py", "tests/test_other.py", False),
        ("pytest --ignore=tests/slow.py", "tests/slow.py", True),
        ("pytest --deselect tests/test_app.py::test_x", "tests/test_app.py", True),
        ("pytest tests/test_*.py", "tests/test_app.py", True),
        ("pytest tests/test_{a,b}.py", "tests/test_b.py", True),
        ("pytest tests/test_*.py", "tests/unit/test_app.py", False),
        ("pytest -k 'test_* and not slow'", "test_x.py", False),
        # Environment variables pytest reads.
        ("PYTEST_ADDOPTS='-p plug' make test", "plug.py", True),
        ("PYTEST_ADDOPTS='-c ci/p.cfg' ./run.sh", "ci/p.cfg", True),
        ("PYTEST_PLUGINS=a.b,c python -m pytest", "a/b.py", True),
        ("PYTEST_PLUGINS=a.b,c python -m pytest", "c/__init__.py", True),
        ("export PYTEST_PLUGINS=plug; pytest", "plug.py", True),
        ("PYTHONPATH=lib pytest -p plug", "lib/plug.py", True),
        ("env PYTHONPATH=lib:other PYTEST_PLUGINS=plug pytest", "other/plug.py", True),
        # Tokens that cannot be resolved name no file; unbalanced quotes still parse.
        ("$RUNNER ./run.sh", "run.sh", True),
        ("./run.sh $HOME/x", "x", False),
        ("./run.sh ~/x", "x", False),
        ("./run.sh 'unterminated", "run.sh", True),
        ("bash -c 'pytest -p plug", "run.sh", False),
    ],
)
def test_files_the_command_runs(command: str, path: str, expected: bool) -> None:
    assert (command_hit(command, path) is not None) is expected


@pytest.mark.parametrize(
    ("command", "path", "expected"),
    [
        ("./scripts/test.sh", "scripts/test.sh", True),
        ("python runtests.py", "runtests.py", True),
        ("python -m pytest -q", "pytest.py", True),
        ("python -m pytest -q", "_pytest/__init__.py", True),
        ("make test", "GNUmakefile", True),  # read before the base's Makefile
        ("pytest -p plug", "plug.py", True),
        ("pytest tests/test_new.py", "tests/test_new.py", True),
        # A new test file the shell's pattern picks up is a new test, not harness.
        ("pytest tests/test_*.py", "tests/test_new.py", False),
        ("python -m pytest -q", "src/app.py", False),
    ],
)
def test_files_the_patch_adds_that_the_command_would_run(
    command: str, path: str, expected: bool
) -> None:
    reason = command_hit(command, path, added=True)
    assert (reason is not None) is expected
    if reason is not None:
        assert reason.endswith(", and the patch adds it")


@pytest.mark.parametrize(
    ("command", "path", "base", "new", "reason"),
    [
        ("make test", "Makefile", b"a", b"b",
         "the test command `make test` reads its make rules from it, and the patch changes it"),
        ("./scripts/test.sh", "scripts/test.sh", None, b"exit 0",
         "the test command `./scripts/test.sh` runs it, and the patch adds it"),
        ("bash ci/t.sh", "ci/t.sh", b"a", None,
         "the test command `bash ci/t.sh` runs it with bash, and the patch deletes it"),
        ("python runtests.py", "runtests.py", b"a", b"b",
         "the test command `python runtests.py` runs it with python, and the patch changes it"),
        ("python -m tools.run", "tools/run/__main__.py", b"a", b"b",
         "the test command `python -m tools.run` runs it as `python -m tools.run`, and the patch "
         "changes it"),
        ("python -m pytest -q", "_pytest/__init__.py", None, b"",
         "the test command `python -m pytest -q` imports it in place of pytest's own `_pytest` "
         "(`python -m pytest`), and the patch adds it"),
        ("pytest -p plug", "plug.py", b"a", b"b",
         "the test command `pytest -p plug` loads it as the pytest plugin `-p plug`, and the "
         "patch changes it"),
        ("pytest -c ci/p.cfg", "ci/p.cfg", b"a", b"b",
         "the test command `pytest -c ci/p.cfg` reads pytest's configuration from it (`-c`), and "
         "the patch changes it"),
        ("tox", "tox.toml", b"a", b"b",
         "the test command `tox` reads tox's configuration from it, and the patch changes it"),
        ("nox -f n.py", "n.py", b"a", b"b",
         "the test command `nox -f n.py` reads nox's sessions from it, and the patch changes it"),
        ("pytest tests/test_a.py", "tests/test_a.py", b"a", b"b",
         "the test command `pytest tests/test_a.py` names it, and the patch changes it"),
        ("pytest tests/test_*.py", "tests/test_a.py", b"a", b"b",
         "the test command `pytest tests/test_*.py` names it (the shell expands the pattern), and "
         "the patch changes it"),
        ("make lint\n  && ./run.sh", "run.sh", b"a", b"b",
         "the test command `make lint && ./run.sh` runs it, and the patch changes it"),
        ("./run.sh " + "x" * 100, "run.sh", b"a", b"b",
         "the test command `./run.sh " + "x" * 68 + "...` runs it, and the patch changes it"),
    ],
)  # fmt: skip
def test_command_reasons(
    command: str, path: str, base: bytes | None, new: bytes | None, reason: str
) -> None:
    base_paths = frozenset([path] if base is not None else [])
    [hit] = harness_changes([(path, base, new)], command=command, base_paths=base_paths)
    assert (hit.rule, hit.reason) == ("command_file", reason)


def test_shared_config_files_the_command_names_count_by_section_only() -> None:
    project = b'[project]\nname = "a"\n'
    for command in ("pytest -c pyproject.toml", "tox -c setup.cfg", "cat pyproject.toml setup.cfg"):
        changes = [
            ("pyproject.toml", project, project + b"version = '1'\n"),
            ("setup.cfg", b"", b"[x]\n"),
        ]
        assert (
            harness_changes(changes, command=command, base_paths=frozenset(["pyproject.toml"]))
            == []
        )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("a b && c", [(["a", "b"], []), (["c"], [])]),
        (
            "a&&b||c;d|e&f",
            [(["a"], []), (["b"], []), (["c"], []), (["d"], []), (["e"], []), (["f"], [])],
        ),
        ("a > out 2>&1", [(["a", "2"], ["out", "1"])]),
        ("a < in", [(["a"], ["in"])]),
        ("a # b\nc", [(["a"], []), (["c"], [])]),
        ("a#b", [(["a#b"], [])]),
        ("a \\\n b", [(["a", "b"], [])]),
        ("(a; b)", [(["a"], []), (["b"], [])]),
        ("bash -c 'x && y'", [(["bash", "-c", "x && y"], [])]),
        ("a 'b", [(["a", "'b"], [])]),
        ("", []),
    ],
)
def test_simple_commands(line: str, expected: list[tuple[list[str], list[str]]]) -> None:
    assert simple_commands(line) == expected


def test_command_targets_of_the_default_command() -> None:
    targets = command_targets("python -m pytest -q")
    assert targets.tools == frozenset()
    assert targets.globs == ()
    paths = [target.path for target in targets.files]
    assert paths == sorted(paths)
    assert {"pytest.py", "pytest/__init__.py", "pytest/__main__.py", "_pytest/__init__.py"} <= set(
        paths
    )


def test_rootdir_and_confcutdir_name_files_rule_1_already_covers() -> None:
    files = {
        target.path: target.role
        for target in command_targets("pytest --rootdir=sub --confcutdir sub").files
    }
    for name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "tox.ini"):
        assert files[f"sub/{name}"] == "reads pytest's configuration from it (`--rootdir sub`)"
    assert files["sub/conftest.py"] == "loads it as a conftest (`--confcutdir sub`)"
    [hit] = harness_changes(
        [("sub/pytest.toml", b"", b"x")], command="pytest --rootdir=sub", base_paths=frozenset()
    )
    assert hit.rule == "harness_file"


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH + 5])
def test_nesting_is_followed_to_a_bound(depth: int) -> None:
    # Beyond the bound only the words themselves still count ("names it"); make's files need
    # the wrappers unwrapped.
    command = "env " * depth + "make test"
    assert (command_hit(command, "Makefile") is not None) is (depth <= MAX_DEPTH)
