"""The redirect scan of project files, lock files, configuration files and environment settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from .scanning import scan

INDEX = "names a package index; only the policy's environment.index_url may name one"
OUTSIDE = "would be fetched from outside the approved index"
CONFIG = (
    "a repository pip/uv configuration: pip or uv could read it and install from elsewhere; "
    "only the policy says where packages come from"
)

PROJECT = '[project]\nname = "x"\nversion = "1"\n'

# (pyproject.toml after the [project] table's three lines, the refusal with its line)
REFUSED_PYPROJECT = [
    (
        'dependencies = ["requests", "foo @ git+https://github.com/a/foo"]\n',
        f"pyproject.toml:4: [project] dependencies: foo @ git+https://github.com/a/foo is a "
        f"direct URL requirement that {OUTSIDE}",
    ),
    (
        '[project.optional-dependencies]\ntest = [\n  "pytest",\n  "bar @ https://e.example/b.whl",'
        "\n]\n",
        f"pyproject.toml:7: extra test: bar @ https://e.example/b.whl is a direct URL requirement "
        f"that {OUTSIDE}",
    ),
    (
        '[dependency-groups]\ndev = ["ruff", "baz @ file:///tmp/baz.whl"]\n',
        f"pyproject.toml:5: dependency group dev: baz @ file:///tmp/baz.whl is a direct URL "
        f"requirement that {OUTSIDE}",
    ),
    (
        '[dependency-groups]\ndev = ["--index-url=http://e.example"]\n',
        "pyproject.toml:5: dependency group dev: '--index-url=http://e.example' is not a "
        "requirement pip would accept",
    ),
    (
        '[dependency-groups]\ndev = [{include-group = "lint"}]\nlint = [{include-group = "dev"}]\n',
        "pyproject.toml:4: dependency groups include each other in a cycle: dev -> lint -> dev",
    ),
    (
        '[dependency-groups]\ndev = [{include-group = "nope"}]\n',
        "pyproject.toml:4: dependency group nope is included but not declared",
    ),
    (
        '[build-system]\nrequires = ["setuptools", "h @ https://e.example/h.whl"]\n',
        f"pyproject.toml:5: [build-system] requires: h @ https://e.example/h.whl is a direct URL "
        f"requirement that {OUTSIDE}",
    ),
    (
        '[tool.uv]\nindex-url = "http://e.example"\n',
        f"pyproject.toml:5: [tool.uv] index-url {INDEX}",
    ),
    (
        '[tool.uv]\nextra-index-url = ["http://e.example"]\n',
        f"pyproject.toml:5: [tool.uv] extra-index-url {INDEX}",
    ),
    (
        '[tool.uv]\nfind-links = ["http://e.example"]\n',
        f"pyproject.toml:5: [tool.uv] find-links {INDEX}",
    ),
    (
        '[[tool.uv.index]]\nname = "mine"\nurl = "http://e.example/simple"\n',
        f"pyproject.toml:4: [tool.uv] index {INDEX}",
    ),
    (
        '[tool.uv.pip]\nindex-url = "http://e.example"\n',
        f"pyproject.toml:5: [tool.uv.pip] index-url {INDEX}",
    ),
    (
        '[tool.uv.sources]\nws = { workspace = true }\ng = { git = "https://github.com/a/g" }\n',
        f"pyproject.toml:6: [tool.uv.sources] g: its git {OUTSIDE}",
    ),
    (
        '[tool.uv.sources]\nu = [{ url = "https://e.example/u.whl" }]\n',
        f"pyproject.toml:5: [tool.uv.sources] u: its url {OUTSIDE}",
    ),
    (
        '[tool.uv.sources]\np = { path = "../../outside" }\nq = { path = "libs/q" }\n',
        "pyproject.toml:5: [tool.uv.sources] p: its path ../../outside is outside the repository",
    ),
    (
        '[tool.uv.sources]\ni = { index = "mine" }\n',
        f"pyproject.toml:5: [tool.uv.sources] i: its index {INDEX}",
    ),
    (
        '[[tool.poetry.source]]\nname = "mine"\nurl = "http://e.example/simple"\n',
        f"pyproject.toml:4: [tool.poetry] source {INDEX}",
    ),
    (
        '[tool.poetry.source]\nname = "mine"\n',
        f"pyproject.toml:4: [tool.poetry] source {INDEX}",
    ),
    (
        '[tool.poetry.dependencies]\npython = "^3.11"\ng = { git = "https://github.com/a/g" }\n',
        f"pyproject.toml:6: [tool.poetry] dependencies g: its git {OUTSIDE}",
    ),
    (
        '[tool.poetry.dependencies]\nu = { url = "https://e.example/u.whl" }\n',
        f"pyproject.toml:5: [tool.poetry] dependencies u: its url {OUTSIDE}",
    ),
    (
        '[tool.poetry.dependencies]\ns = { version = "*", source = "mine" }\n',
        f"pyproject.toml:5: [tool.poetry] dependencies s: its source {INDEX}",
    ),
    (
        '[tool.poetry.group.test.dependencies]\nt = { git = "https://github.com/a/t" }\n',
        f"pyproject.toml:5: [tool.poetry] group test t: its git {OUTSIDE}",
    ),
    (
        '[tool.poetry.dev-dependencies]\nd = [{ git = "https://github.com/a/d" }]\n',
        f"pyproject.toml:5: [tool.poetry] dev-dependencies d: its git {OUTSIDE}",
    ),
    (
        '[[tool.poetry.source]]\nname = "a"\n[[tool.pdm.source]]\nname = "mine"\n',
        f"pyproject.toml:4: [tool.poetry] source {INDEX}\n"
        f"pyproject.toml:6: [tool.pdm] source {INDEX}",
    ),
    (
        '[tool.hatch.envs.default.env-vars]\nUV_EXTRA_INDEX_URL = "http://e.example"\n',
        "pyproject.toml:5: sets UV_EXTRA_INDEX_URL, which pip, uv or Poetry read as "
        "configuration; only the policy configures the install",
    ),
    (
        "dependencies = [\n  'a',,\n]\n",
        "pyproject.toml:5: not valid TOML, so it cannot be checked: Invalid value (at line 5, "
        "column 7)",
    ),
]


@pytest.mark.parametrize(("tail", "refusals"), REFUSED_PYPROJECT)
def test_each_pyproject_redirect_is_refused_with_its_line(
    tmp_path: Path, tail: str, refusals: str
) -> None:
    assert scan(tmp_path, {"pyproject.toml": PROJECT + tail}) == refusals.split("\n")


def test_an_ordinary_pyproject_is_not_refused(tmp_path: Path) -> None:
    text = PROJECT + (
        'dependencies = ["requests>=2", "tomli; python_version < \'3.11\'"]\n'
        '[project.optional-dependencies]\ntest = ["pytest[testing]~=8.0"]\n'
        '[dependency-groups]\ndev = ["ruff", {include-group = "test"}]\ntest = ["pytest"]\n'
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        "[tool.uv]\nno-index = false\n[tool.uv.sources]\nlib = { workspace = true }\n"
        'own = { path = "libs/own", editable = true }\n'
        '[tool.poetry.dependencies]\npython = "^3.11"\nlocal = { path = "libs/local" }\n'
        "[tool.ruff]\nline-length = 100  # https://docs.astral.sh/ruff/\n"
    )
    assert scan(tmp_path, {"pyproject.toml": text}) == []


def test_a_group_the_default_install_leaves_alone_may_not_resolve(tmp_path: Path) -> None:
    text = PROJECT + '[dependency-groups]\ndocs = [{include-group = "nope"}]\ntest = ["pytest"]\n'
    assert scan(tmp_path, {"pyproject.toml": text}) == []


def test_setup_files_that_may_point_elsewhere_are_refused(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "setup.cfg": (
            "[metadata]\nname = x\n\n[options]\ninstall_requires =\n    requests\n"
            "    foo @ https://e.example/foo.whl\ndependency_links = http://e.example\n\n"
            "[options.extras_require]\ntest = pytest\n\n[easy_install]\nindex_url = http://e\n"
        ),
        "setup.py": "from setuptools import setup\n\nsetup(dependency_links=['http://e'])\n",
    }
    assert scan(tmp_path, files) == [
        f"setup.cfg:7: foo @ https://e.example/foo.whl is a direct URL requirement that {OUTSIDE}",
        "setup.cfg:8: dependency_links may point the install elsewhere than the approved index",
        "setup.cfg:14: index_url may point the install elsewhere than the approved index",
        "setup.py:3: dependency_links may point the install elsewhere than the approved index",
    ]


def test_an_ordinary_setup_cfg_is_not_refused(tmp_path: Path) -> None:
    text = "[metadata]\nname = x\n[options]\ninstall_requires =\n    requests>=2  # pinned\n"
    assert scan(tmp_path, {"setup.cfg": text, "setup.py": "import setuptools\n"}) == []


def test_environment_variables_for_pip_uv_or_poetry_are_refused(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        ".env": "PYTHONPATH=src\nPIP_INDEX_URL=http://e.example\n",
        ".envrc": "export UV_INDEX_URL=http://e.example\n",
        "tox.ini": "[testenv]\nsetenv =\n    POETRY_REPOSITORIES_X_URL = http://e.example\n",
        "setup.cfg": "[tool:pytest]\nenv =\n    PIP_FIND_LINKS: http://e.example\n",
        # only the files at the root that tools load are read
        "sub/.env": "PIP_INDEX_URL=http://e.example\n",
    }
    reason = "which pip, uv or Poetry read as configuration; only the policy configures the install"
    assert scan(tmp_path, files) == [
        f".env:2: sets PIP_INDEX_URL, {reason}",
        f".envrc:1: sets UV_INDEX_URL, {reason}",
        f"setup.cfg:3: sets PIP_FIND_LINKS, {reason}",
        f"tox.ini:3: sets POETRY_REPOSITORIES_X_URL, {reason}",
    ]


def test_pip_and_uv_configuration_anywhere_but_git_is_refused(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "pip.conf": "[global]\nindex-url = http://e.example\n",
        "a/b/pip.ini": "",
        "uv.toml": "",
        ".venv/pip.conf": "",
        ".pip/pip.conf": "",
        ".pip/more/notes": "",
        ".netrc": "",
        "docs/.pydistutils.cfg": "",
        ".git/pip.conf": "",
        "vendor/lib/.git/uv.toml": "",
        "docs/pip.conf.md": "",
    }
    assert scan(tmp_path, files) == [
        f".netrc: {CONFIG}",
        f".pip/more/notes: {CONFIG}",
        f".pip/pip.conf: {CONFIG}",
        f".venv/pip.conf: {CONFIG}",
        f"a/b/pip.ini: {CONFIG}",
        f"docs/.pydistutils.cfg: {CONFIG}",
        f"pip.conf: {CONFIG}",
        f"uv.toml: {CONFIG}",
    ]


UV_LOCK = """version = 1
requires-python = ">=3.11"

[[package]]
name = "a"
version = "1.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "b"
version = "1.0"
source = { git = "https://github.com/a/b?rev=main#abc" }

[[package]]
name = "c"
version = "1.0"
source = { url = "https://e.example/c-1.0.whl" }

[[package]]
name = "x"
version = "1"
source = { editable = "." }
"""

POETRY_LOCK = """[[package]]
name = "a"
version = "1.0"
files = []

[[package]]
name = "b"
version = "1.0"
files = []

[package.source]
type = "git"
url = "https://github.com/a/b"
reference = "main"

[[package]]
name = "c"
version = "1.0"

[package.source]
type = "legacy"
url = "https://mirror.example/simple"
reference = "mirror"
"""


def test_lock_entries_from_git_or_a_url_are_refused(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "pyproject.toml": PROJECT,
        "uv.lock": UV_LOCK,
        "poetry.lock": POETRY_LOCK,
    }
    assert scan(tmp_path, files) == [
        "poetry.lock:11: package b is locked to the git https://github.com/a/b, not to a package "
        "from an index",
        "uv.lock:12: package b is locked to the git https://github.com/a/b?rev=main#abc, not to a "
        "package from an index",
        "uv.lock:17: package c is locked to the url https://e.example/c-1.0.whl, not to a package "
        "from an index",
    ]


PYLOCK = """lock-version = "1.0"
created-by = "uv"

[[packages]]
name = "a"
version = "1.0"
index = "https://pypi.org/simple"
wheels = [{ url = "https://files.pythonhosted.org/a-1.0-py3-none-any.whl" }]

[[packages]]
name = "b"
vcs = { type = "git", url = "https://github.com/a/b", commit-id = "abc" }

[[packages]]
name = "c"

[packages.archive]
url = "https://e.example/c.tar.gz"

[[packages]]
name = "d"
directory = { path = "libs/d" }
"""


def test_pylock_entries_from_vcs_or_an_archive_url_are_refused(tmp_path: Path) -> None:
    assert scan(tmp_path, {"pyproject.toml": PROJECT, "pylock.toml": PYLOCK}) == [
        "pylock.toml:12: package b is locked to the vcs https://github.com/a/b, not to a package "
        "from an index",
        "pylock.toml:18: package c is locked to the archive https://e.example/c.tar.gz, not to a "
        "package from an index",
    ]


def test_a_malformed_lock_is_refused(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"pyproject.toml": PROJECT, "uv.lock": "[[package]\n"}
    [refusal] = scan(tmp_path, files)
    assert refusal.startswith("uv.lock:1: not valid TOML, so it cannot be checked: ")


def test_an_unreadable_project_file_is_refused(tmp_path: Path) -> None:
    assert scan(tmp_path, {"pyproject.toml": b"[project]\nname = '\xff'\n"}) == [
        "pyproject.toml: the file is not UTF-8 text (byte 18)"
    ]


def test_toml_nested_a_megabyte_deep_is_refused_not_a_crash(tmp_path: Path) -> None:
    deep = "a = " + "[" * 500_000 + "\n"
    assert scan(tmp_path, {"pyproject.toml": deep}) == [
        "pyproject.toml: not valid TOML, so it cannot be checked: arrays or tables are nested "
        "too deeply"
    ]
