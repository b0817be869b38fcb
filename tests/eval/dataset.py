"""A small SWE-bench-format dataset, built at test time from pinned PyPI sdists."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frognano.eval.instances import Instance, load_instances
from tests.sdists import SDIST_CACHE, download_sdist, unpack_sdist

OWNER = "pypi"
# FrogNano's own environment (the sandbox's in tests) has plugins these projects do not use:
# pytest-asyncio warns at start-up and toolz makes warnings errors. The collector still loads
# (through PYTEST_PLUGINS), and the suites need pytest alone.
TEST_COMMAND = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"

# Every commit gets the same author and time, and no configuration of this machine is read:
# the same sdists give the same commit ids on every build.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "FrogNano tests",
    "GIT_AUTHOR_EMAIL": "tests@frognano.invalid",
    "GIT_COMMITTER_NAME": "FrogNano tests",
    "GIT_COMMITTER_EMAIL": "tests@frognano.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True)
class Edit:
    """Replace `old` (which must occur exactly once) by `new` in `path`."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Task:
    """One instance: the bug its base commit brings, the issue and the test that shows it."""

    number: int
    bug: Edit
    """Made to the code of the commit before and committed as the base."""
    problem: str
    test_file: str
    test: str
    """A new test function, appended to `test_file` by the test patch and the fix commit."""
    pass_to_pass: tuple[str, ...]
    broken: str | None = None
    """Why the instance is broken; then `wrong` is made to the test in its test patch only."""
    wrong: tuple[str, str] | None = None

    @property
    def fail_to_pass(self) -> str:
        match = re.search(r"^def (test_\w+)", self.test, re.MULTILINE)
        assert match is not None, self.test
        return f"{self.test_file}::{match.group(1)}"


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    sha256: str
    tasks: tuple[Task, ...]
    encoded: bool
    """FAIL_TO_PASS and PASS_TO_PASS as JSON text inside the JSON, as the public datasets have."""

    @property
    def repo(self) -> str:
        return f"{OWNER}/{self.name}"


_INFLECTION_TESTS = "test_inflection.py"
_TOOLZ_ITER_TESTS = "toolz/tests/test_itertoolz.py"
_TOOLZ_DICT_TESTS = "toolz/tests/test_dicttoolz.py"

# Each bug passes the project's own suite (no existing test catches it), as a real bug
# reported in an issue would; only the instance's new test shows it.
PROJECTS: tuple[Project, ...] = (
    Project(
        name="inflection",
        version="0.5.1",
        sha256="1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
        encoded=True,
        tasks=(
            Task(
                number=1,
                bug=Edit("inflection/__init__.py", 'r"_id$", "", word', 'r"_id", "", word'),
                problem=(
                    "humanize() mangles words that contain `_id`\n\n"
                    "`inflection.humanize('user_identifier')` returns `'Userentifier'`; I "
                    "expected `'User identifier'`. Only a trailing `_id` should go "
                    "(`humanize('author_id')` is `'Author'`, which is right).\n"
                ),
                test_file=_INFLECTION_TESTS,
                test=(
                    "def test_humanize_keeps_id_inside_a_word():\n"
                    '    assert inflection.humanize("user_identifier") == "User identifier"\n'
                ),
                pass_to_pass=(
                    f"{_INFLECTION_TESTS}::test_humanize[employee_id-Employee]",
                    f"{_INFLECTION_TESTS}::test_humanize[underground-Underground]",
                    f"{_INFLECTION_TESTS}::test_pluralize_plurals",
                ),
            ),
            Task(
                number=2,
                bug=Edit(
                    "inflection/__init__.py",
                    "        re_sep = re.escape(separator)\n",
                    "        re_sep = separator\n",
                ),
                problem=(
                    "parameterize() returns an empty string with separator='.'\n\n"
                    "```python\n>>> inflection.parameterize('Donald E. Knuth', separator='.')\n"
                    "''\n```\n\nI expected `'donald.e.knuth'`. The default separator works.\n"
                ),
                test_file=_INFLECTION_TESTS,
                test=(
                    "def test_parameterize_with_a_dot_separator():\n"
                    '    result = inflection.parameterize("Donald E. Knuth", separator=".")\n'
                    '    assert result == "donald.e.knuth"\n'
                ),
                pass_to_pass=(
                    f"{_INFLECTION_TESTS}::test_pluralize_empty_string",
                    f"{_INFLECTION_TESTS}::test_uncountable_word_is_not_greedy",
                    f"{_INFLECTION_TESTS}::test_camelize_with_underscores",
                ),
            ),
            Task(
                number=3,
                bug=Edit(
                    "inflection/__init__.py",
                    '    word = word.replace("-", "_")\n    return word.lower()\n',
                    "    return word.lower()\n",
                ),
                problem=(
                    "underscore() keeps dashes\n\n"
                    "`inflection.underscore('area-code')` gives `'area-code'`, but the docs say "
                    "it makes an underscored form; I expected `'area_code'`.\n"
                ),
                test_file=_INFLECTION_TESTS,
                test=(
                    "def test_underscore_replaces_dashes():\n"
                    '    assert inflection.underscore("area-code") == "area_code"\n'
                ),
                pass_to_pass=(
                    f"{_INFLECTION_TESTS}::test_camelize_with_lower_downcases_the_first_letter",
                    f"{_INFLECTION_TESTS}::test_pluralize_plurals",
                ),
                broken="its FAIL_TO_PASS test expects 'areacode', a wrong value: it fails "
                "with the gold patch too",
                wrong=('== "area_code"', '== "areacode"'),
            ),
        ),
    ),
    Project(
        name="toolz",
        version="1.2.0",
        sha256="9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490",
        encoded=False,
        tasks=(
            Task(
                number=1,
                bug=Edit(
                    "toolz/itertoolz.py",
                    "    return sum(1 for i in seq)\n",
                    "    return sum(1 for i in seq if i)\n",
                ),
                problem=(
                    "count() of an iterator is too small when items are falsy\n\n"
                    "`toolz.count(iter([0, 1, 0]))` returns 1, but "
                    "`toolz.count([0, 1, 0])` returns 3, as I expected for both.\n"
                ),
                test_file=_TOOLZ_ITER_TESTS,
                test=(
                    "def test_count_of_an_iterator_counts_falsy_items():\n"
                    "    assert count(iter([0, 1, 0, None, ''])) == 5\n"
                ),
                pass_to_pass=(
                    f"{_TOOLZ_ITER_TESTS}::test_count",
                    f"{_TOOLZ_ITER_TESTS}::test_frequencies",
                    f"{_TOOLZ_ITER_TESTS}::test_tail",
                ),
            ),
            Task(
                number=2,
                bug=Edit(
                    "toolz/dicttoolz.py",
                    "    except (KeyError, IndexError, TypeError):\n",
                    "    except (KeyError, TypeError):\n",
                ),
                problem=(
                    "get_in() raises IndexError instead of returning the default\n\n"
                    "`toolz.get_in(['a', 5], {'a': [1, 2]}, default=0)` raises `IndexError: "
                    "list index out of range`; a missing dict key returns the default.\n"
                ),
                test_file=_TOOLZ_DICT_TESTS,
                test=(
                    "def test_get_in_returns_default_past_the_end_of_a_list():\n"
                    '    assert get_in(["a", 5], {"a": [1, 2]}, default=0) == 0\n'
                ),
                pass_to_pass=(
                    f"{_TOOLZ_DICT_TESTS}::test_get_in_returns_default_for_a_missing_path",
                    f"{_TOOLZ_DICT_TESTS}::test_get_in_raises_when_no_default_is_set",
                    f"{_TOOLZ_DICT_TESTS}::TestDict::test_update_in",
                ),
            ),
        ),
    ),
)

INSTANCE_IDS = tuple(f"{OWNER}__{p.name}-{t.number}" for p in PROJECTS for t in p.tasks)


@dataclass(frozen=True)
class Dataset:
    """What `build_dataset` made, and what a correct evaluation of it must find."""

    instances_path: Path
    """JSONL, one SWE-bench instance a line."""
    repos: Path
    """`--repos`: a bare mirror `owner__name` per project."""
    instances: tuple[Instance, ...]
    gold_resolved: frozenset[str]
    """The ids whose gold patch resolves them."""
    broken: Mapping[str, str]
    """id -> why the instance is broken (its gold patch does not resolve it)."""


def build_dataset(dest: Path, cache: Path = SDIST_CACHE) -> Dataset:
    """Build the instances and their mirrors under `dest` (sdists come from `cache`, downloaded
    the first time): per project, the release, then per instance a commit bringing its bug
    (the base) and one fixing it, with the instance's test, as a real history would."""
    repos = dest / "repos"
    work = dest / "work"
    rows: list[dict[str, Any]] = []
    for project in PROJECTS:
        archive = download_sdist(cache, project)
        root = unpack_sdist(archive, work / project.name)
        _git(root, "init", "-q", "-b", "main")
        _commit(root, f"{project.name} {project.version} as released")
        rows += [_add_task(project, task, root) for task in project.tasks]
        _git(root, "clone", "-q", "--bare", str(root), str(repos / f"{OWNER}__{project.name}"))
    shutil.rmtree(work)  # only the mirrors: --repos must find no other checkout
    instances_path = dest / "instances.jsonl"
    instances_path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    broken = {
        f"{OWNER}__{p.name}-{t.number}": t.broken for p in PROJECTS for t in p.tasks if t.broken
    }
    return Dataset(
        instances_path=instances_path,
        repos=repos,
        instances=tuple(load_instances(instances_path)),
        gold_resolved=frozenset(INSTANCE_IDS) - broken.keys(),
        broken=broken,
    )


def _add_task(project: Project, task: Task, root: Path) -> dict[str, Any]:
    """Commit the task's bug (its base) and then its fix; the instance's row."""
    instance_id = f"{OWNER}__{project.name}-{task.number}"
    _edit(root, task.bug)
    base = _commit(root, f"{instance_id}: the bug")
    test = task.test if task.wrong is None else task.test.replace(*task.wrong)
    _append(root / task.test_file, test)
    test_patch = _diff(root, task.test_file)
    _git(root, "checkout", "-q", "--", task.test_file)
    _edit(root, Edit(task.bug.path, task.bug.new, task.bug.old))
    patch = _diff(root, task.bug.path)
    # The fix, as upstream merges it: the code and the (right) test in a later commit.
    _append(root / task.test_file, task.test)
    _commit(root, f"{instance_id}: the fix")
    tests: dict[str, Any] = {"FAIL_TO_PASS": [task.fail_to_pass]}
    tests["PASS_TO_PASS"] = list(task.pass_to_pass)
    if project.encoded:
        tests = {key: json.dumps(value) for key, value in tests.items()}
    return {
        "instance_id": instance_id,
        "repo": project.repo,
        "base_commit": base,
        "problem_statement": task.problem,
        "hints_text": "",
        "patch": patch,
        "test_patch": test_patch,
        **tests,
        "version": project.version,
        "test_command": TEST_COMMAND,
    }


def _edit(root: Path, edit: Edit) -> None:
    path = root / edit.path
    text = path.read_text(encoding="utf-8")
    if text.count(edit.old) != 1:
        raise RuntimeError(f"{edit.path}: expected {edit.old!r} exactly once")
    path.write_text(text.replace(edit.old, edit.new), encoding="utf-8")


def _append(path: Path, function: str) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.rstrip("\n") + "\n\n\n" + function, encoding="utf-8")


def _diff(root: Path, path: str) -> str:
    return _git(root, "diff", "--no-renames", "--full-index", "--", path)


def _commit(root: Path, message: str) -> str:
    _git(root, "add", "-A", "--force")  # all the sdist ships, even what its .gitignore lists
    _git(root, "commit", "-q", "--no-verify", "-m", message)
    return _git(root, "rev-parse", "HEAD").strip()


def _git(root: Path, *args: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    done = subprocess.run(
        ["git", *args], cwd=root, env={**env, **_GIT_ENV}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {root} failed: {done.stderr.strip()}")
    return done.stdout
