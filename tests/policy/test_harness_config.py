"""Harness sections of shared config files (rule 2): compared as parsed values, per tool."""

from __future__ import annotations

import pytest

from frognano.policy.gate.harness.files import harness_changes

PYTEST = "python -m pytest -q"
PROJECT = '[project]\nname = "app"\ndependencies = ["attrs"]\n'
INI_OPTIONS = '[tool.pytest.ini_options]\naddopts = "-q"\ntestpaths = ["tests"]\n'


def reason(
    path: str, base: str | bytes | None, new: str | bytes | None, command: str = PYTEST
) -> str | None:
    """The reason of the one hit for this change, or None when it is not harness."""
    old = base.encode() if isinstance(base, str) else base
    content = new.encode() if isinstance(new, str) else new
    base_paths = frozenset([path] if old is not None else [])
    hits = harness_changes([(path, old, content)], command=command, base_paths=base_paths)
    assert len(hits) <= 1
    assert all(hit.rule == "config_section" for hit in hits)
    return hits[0].reason if hits else None


@pytest.mark.parametrize(
    ("base", "new", "command", "label"),
    [
        (PROJECT, PROJECT.replace("attrs", "attrs>=23"), PYTEST, None),
        (PROJECT + INI_OPTIONS, PROJECT.replace("attrs", "cattrs") + INI_OPTIONS, PYTEST, None),
        (PROJECT, PROJECT + INI_OPTIONS, PYTEST, "[tool.pytest.ini_options]"),
        (INI_OPTIONS, INI_OPTIONS.replace('"-q"', '"-q -p no:randomly"'), PYTEST,
         "[tool.pytest.ini_options]"),
        # The same values written differently: key order, quotes, comments, inline tables.
        (INI_OPTIONS,
         "# options\n[tool.pytest.ini_options]\ntestpaths = ['tests']  # where\naddopts = '-q'\n",
         PYTEST, None),
        ('[tool.pytest]\nini_options = {addopts = "-q"}\n',
         '[tool.pytest.ini_options]\naddopts = "-q"\n', PYTEST, None),
        # An empty section still makes its file pytest's config file (and its folder rootdir).
        (PROJECT, PROJECT + "[tool.pytest.ini_options]\n", PYTEST, "[tool.pytest.ini_options]"),
        # pytest 9's TOML mode reads [tool.pytest] itself.
        ('[tool.pytest]\naddopts = ["-q"]\n', '[tool.pytest]\naddopts = ["-q", "-x"]\n', PYTEST,
         "[tool.pytest]"),
        ("[tool.pytest]\n", "", PYTEST, "[tool.pytest]"),
        ("[tool.coverage.run]\nbranch = true\n", "[tool.coverage.run]\nbranch = false\n",
         PYTEST, None),
        ("[tool.ruff]\nline-length = 100\n", "[tool.ruff]\nline-length = 99\n", PYTEST, None),
        ("tool = 1\n", "[tool.pytest.ini_options]\n", PYTEST, "[tool.pytest.ini_options]"),
        ("tool = 1\n", "tool = 2\n", PYTEST, None),
        # Plugins pytest loads from entry points, in every spelling TOML allows.
        (PROJECT, PROJECT + '[project.entry-points.pytest11]\nfrog = "app.plugin"\n', PYTEST,
         "[project.entry-points.pytest11]"),
        (PROJECT + '[project.entry-points."pytest11"]\nfrog = "app.plugin"\n',
         PROJECT + '[project.entry-points.pytest11]\nfrog = "app.plugin"\n', PYTEST, None),
        ('[project]\nentry-points = {pytest11 = {frog = "app.plugin"}}\n',
         '[project.entry-points."pytest11"]\nfrog = "app.other"\n', PYTEST,
         "[project.entry-points.pytest11]"),
        (PROJECT + '[project.entry-points.console_scripts]\napp = "app:main"\n',
         PROJECT + '[project.entry-points.console_scripts]\napp = "app:cli"\n', PYTEST, None),
        (PROJECT + '[project.scripts]\napp = "app:main"\n', PROJECT, PYTEST, None),
        # Tools' own sections count when the command runs the tool.
        ('[tool.tox]\nenv_list = ["py311"]\n', '[tool.tox]\nenv_list = ["py312"]\n',
         "tox -e py311", "[tool.tox]"),
        ('[tool.tox]\nenv_list = ["py311"]\n', '[tool.tox]\nenv_list = ["py312"]\n', PYTEST, None),
        ('[tool.tox]\nenv_list = ["a"]\n', "", "python -m tox", "[tool.tox]"),
        ("[tool.hatch.envs.default.scripts]\ntest = 'pytest'\n",
         "[tool.hatch.envs.default.scripts]\ntest = 'true'\n", "hatch run test",
         "[tool.hatch.envs]"),
        ("[tool.hatch.envs.hatch-test]\nparallel = true\n", "", "hatch test", "[tool.hatch.envs]"),
        ("[tool.hatch.env]\nrequires = ['a']\n", "", "hatch run test", "[tool.hatch.env]"),
        ("[tool.hatch.envs.default.scripts]\ntest = 'pytest'\n",
         "[tool.hatch.envs.default.scripts]\ntest = 'true'\n", PYTEST, None),
        ("[tool.hatch.build]\ninclude = ['a']\n", "", "hatch run test", None),
        ("[tool.pdm.scripts]\ntest = 'pytest'\n", "[tool.pdm.scripts]\ntest = 'true'\n",
         "pdm run test", "[tool.pdm.scripts]"),
        ("[tool.pdm.scripts]\ntest = 'pytest'\n", "[tool.pdm.scripts]\ntest = 'true'\n", "pdm test",
         "[tool.pdm.scripts]"),
        ("[tool.pdm.scripts]\ntest = 'pytest'\n", "[tool.pdm.scripts]\ntest = 'true'\n", PYTEST,
         None),
        # `pytest -c pyproject.toml` reads only pytest's sections of it too.
        (PROJECT, PROJECT.replace("attrs", "cattrs"), "pytest -c pyproject.toml", None),
    ],
)  # fmt: skip
def test_pyproject_sections(base: str, new: str, command: str, label: str | None) -> None:
    found = reason("pyproject.toml", base, new, command)
    if label is None:
        assert found is None
    else:
        assert found is not None
        assert f" {label} in pyproject.toml, and the patch changes it" in found


def test_pyproject_reason_in_full() -> None:
    assert reason("pyproject.toml", PROJECT, PROJECT + INI_OPTIONS) == (
        "pytest reads its options from [tool.pytest.ini_options] in pyproject.toml, and the "
        "patch changes it"
    )
    assert reason("pyproject.toml", "", '[tool.tox]\nenv_list = ["a"]\n', "tox") == (
        "the test command runs tox, which reads [tool.tox] in pyproject.toml, and the patch "
        "changes it"
    )


@pytest.mark.parametrize(
    ("path", "base", "new", "expected"),
    [
        ("pyproject.toml", None, PROJECT, False),
        ("pyproject.toml", None, PROJECT + INI_OPTIONS, True),
        ("pyproject.toml", PROJECT + INI_OPTIONS, None, True),
        ("pyproject.toml", PROJECT, None, False),
        ("services/api/pyproject.toml", PROJECT, PROJECT + INI_OPTIONS, True),
        ("services/api/pyproject.toml", PROJECT, PROJECT.replace("app", "api"), False),
        ("setup.cfg", None, "[metadata]\nname = app\n", False),
        ("setup.cfg", "[tool:pytest]\naddopts = -q\n", None, True),
        ("pkg/setup.cfg", None, "[tool:pytest]\n", True),
    ],
)
def test_config_files_added_or_deleted_whole(
    path: str, base: str | None, new: str | None, expected: bool
) -> None:
    assert (reason(path, base, new) is not None) is expected


@pytest.mark.parametrize(
    ("base", "new", "side", "what"),
    [
        (PROJECT, PROJECT + "[tool.pytest.ini_options\n", "after", "not valid TOML"),
        ("[tool.pytest.ini_options]\naddopts = \n", INI_OPTIONS, "before", "not valid TOML"),
        (PROJECT, PROJECT + "x = 1\nx = 2\n", "after", "not valid TOML"),  # duplicate key
        (PROJECT.encode(), b'[project]\nname = "caf\xe9"\n', "after", "not valid UTF-8"),
        (b"\xff\xfe[project]\n", PROJECT, "before", "not valid UTF-8"),
        (None, "[" * 100_000, "after", "not valid TOML"),  # deep nesting: no crash
    ],
)
def test_pyproject_that_cannot_be_parsed_counts(
    base: str | bytes | None, new: str | bytes, side: str, what: str
) -> None:
    assert reason("pyproject.toml", base, new) == (
        f"pyproject.toml is {what} {side} the patch, so FrogNano cannot tell whether the "
        "settings that steer the test run changed"
    )


SETUP = "[metadata]\nname = app\n\n[options]\ninstall_requires = attrs\n"


@pytest.mark.parametrize(
    ("base", "new", "command", "label"),
    [
        (SETUP, SETUP.replace("attrs", "cattrs"), PYTEST, None),
        (SETUP, SETUP + "[tool:pytest]\naddopts = -q\n", PYTEST, "[tool:pytest]"),
        ("[tool:pytest]\naddopts = -q\n", "[tool:pytest]\naddopts = -q -x\n", PYTEST,
         "[tool:pytest]"),
        ("[tool:pytest]\naddopts = -q\n", "[tool:pytest]\naddopts=-q\n\n# same\n", PYTEST, None),
        ("[tool:pytest]\naddopts = -q\n", "[tool:pytest]\nAddopts = -q\n", PYTEST, "[tool:pytest]"),
        ("[tool:pytest]\naddopts = --cov-fail-under=90%\n",
         "[tool:pytest]\naddopts = --cov-fail-under=80%\n",
         PYTEST, "[tool:pytest]"),  # `%` is no interpolation
        ("[tool:pytest]\naddopts = -q\n[DEFAULT]\nx = 1\n",
         "[tool:pytest]\naddopts = -q\n[DEFAULT]\nx = 2\n",
         PYTEST, "[tool:pytest]"),  # [DEFAULT] reaches into every section
        ("[DEFAULT]\nx = 1\n", "[DEFAULT]\nx = 2\n", PYTEST, None),
        (SETUP, SETUP + "[options.entry_points]\npytest11 =\n    frog = app.plugin\n", PYTEST,
         "pytest11 in [options.entry_points]"),
        ("[options.entry_points]\nconsole_scripts =\n    app = app:main\n",
         "[options.entry_points]\nconsole_scripts =\n    app = app:cli\n", PYTEST, None),
        ("[tox:tox]\nenvlist = py311\n", "[tox:tox]\nenvlist = py312\n", "tox", "[tox:tox]"),
        ("[tox:tox]\nenvlist = py311\n", "[tox:tox]\nenvlist = py312\n", PYTEST, None),
        ("[testenv]\ncommands = pytest\n", "[testenv]\ncommands = true\n", "tox -e py311",
         "[testenv] and [testenv:...]"),
        ("[testenv:py311]\ncommands = pytest\n", "", "tox -e py311", "[testenv] and [testenv:...]"),
        ("[testenv:py311]\ncommands = pytest\n", "", PYTEST, None),
    ],
)  # fmt: skip
def test_setup_cfg_sections(base: str, new: str, command: str, label: str | None) -> None:
    found = reason("setup.cfg", base, new, command)
    if label is None:
        assert found is None
    else:
        assert found is not None
        assert f" {label} in setup.cfg, and the patch changes it" in found


@pytest.mark.parametrize(
    ("base", "new", "side", "what"),
    [
        (SETUP, "addopts = -q\n", "after", "not a valid INI file"),  # no section header
        ("[tool:pytest]\n[tool:pytest]\n", SETUP, "before", "not a valid INI file"),
        (SETUP, "[a]\nx = 1\nx = 2\n", "after", "not a valid INI file"),
        (SETUP.encode(), b"[metadata]\nname = caf\xe9\n", "after", "not valid UTF-8"),
    ],
)
def test_setup_cfg_that_cannot_be_parsed_counts(
    base: str | bytes, new: str | bytes, side: str, what: str
) -> None:
    assert reason("setup.cfg", base, new) == (
        f"setup.cfg is {what} {side} the patch, so FrogNano cannot tell whether the settings "
        "that steer the test run changed"
    )


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("hatch run test", True),
        ("hatch test", True),
        ("uv run hatch run test", True),
        (PYTEST, False),
    ],
)
def test_hatch_toml_counts_when_the_command_runs_hatch(command: str, expected: bool) -> None:
    found = reason(
        "hatch.toml", "[envs.default]\n", "[envs.default.scripts]\ntest = 'true'\n", command
    )
    assert (found is not None) is expected
    if expected:
        assert (
            found == "the test command runs hatch, which reads its environments and scripts from it"
        )


def test_other_toml_and_ini_files_are_not_config_sections() -> None:
    assert reason("ruff.toml", "line-length = 1\n", "[[[", PYTEST) is None
    assert reason(".flake8", "[flake8]\n", "nonsense", PYTEST) is None
