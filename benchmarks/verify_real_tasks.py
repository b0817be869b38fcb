"""The real projects `verify_real.py` verifies patches on, and how each task is built.

Nothing here is committed third-party code: each project's sdist is downloaded with pip at
run time (its version and SHA-256 pinned), unpacked into a temporary folder, made a git
checkout, and given one small injected bug as its base commit. The three patches are
`git diff --binary --full-index --no-renames` text against that base, as an agent's would be.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.sdists import Pinned, download_sdist, unpack_sdist

PYTEST = "python -m pytest -q -p no:cacheprovider"

TEST_REQUIREMENTS = (
    # Every distribution the suites import, pinned (a `pip freeze` of the environment), so
    # that the sandbox, which is offline, has them all. attrs is installed for its own
    # suite's packaging tests (metadata); its code under test comes from the tree (src/).
    "attrs==26.1.0",
    "cloudpickle==3.1.3",
    "coverage==7.17.5",
    "freezegun==1.5.5",
    "hypothesis==6.170.17",
    "iniconfig==2.3.1",
    "packaging==26.4",
    "pluggy==1.7.0",
    "py-cpuinfo2==10.1.1",
    "Pygments==2.21.0",
    "Pympler==1.1",
    "pytest==9.2.0",
    "pytest-benchmark==5.3.1",
    "pytest-cov==7.1.0",
    "python-dateutil==4.0.0",
    "sortedcontainers==2.4.0",
    "tzdata==2026.6",
)


@dataclass(frozen=True)
class Edit:
    """Replace `old` (which must occur exactly once) by `new` in `path`."""

    path: str
    old: str
    new: str

    def reverted(self) -> Edit:
        return Edit(self.path, self.new, self.old)


@dataclass(frozen=True)
class Project:
    name: str
    """The PyPI name, as `--projects` takes it."""
    version: str
    sha256: str
    """Of the sdist, as pip downloads it."""
    command: str
    """The policy's `verify.command`."""
    bug: Edit
    """Made to the released code and committed as the base: some test must fail."""
    wrong: tuple[Edit, ...]
    """Applied to the base: a patch that breaks a passing test (and may fix the bug)."""
    wrong_kind: str
    null_path: str
    """The source file the null patch adds a comment to."""


PROJECTS: tuple[Project, ...] = (
    Project(
        name="inflection",
        version="0.5.1",
        sha256="1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
        command=PYTEST,
        bug=Edit(
            "inflection/__init__.py",
            "    if number % 100 in (11, 12, 13):\n",
            "    if number % 100 in (11, 12):\n",
        ),
        wrong=(
            Edit(
                "inflection/__init__.py",
                "    return word.replace('_', '-')\n",
                "    return word.replace('_', '+')\n",
            ),
        ),
        wrong_kind="breaks dasherize, bug left",
        null_path="inflection/__init__.py",
    ),
    Project(
        name="parse",
        version="1.22.4",
        sha256="706d458feed5a81b02768d3156e8070baf6cee7d150a3a3c0cd43101a875c3b5",
        command=PYTEST,
        bug=Edit(
            "parse/__init__.py",
            "    return float(string[:-1]) / 100.0\n",
            "    return float(string[:-1]) / 10.0\n",
        ),
        wrong=(
            Edit(
                "parse/__init__.py",
                "    return float(string[:-1]) / 10.0\n",
                "    return float(string[:-1]) / 100.0\n",
            ),
            Edit(
                "parse/__init__.py",
                'return "<%s %s %s>" % (',
                'return "<%s %s, %s>" % (',
            ),
        ),
        wrong_kind="fixes it, breaks FixedTzOffset's repr",
        null_path="parse/__init__.py",
    ),
    Project(
        name="toolz",
        version="1.2.0",
        sha256="9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490",
        command=PYTEST,
        bug=Edit(
            "toolz/itertoolz.py",
            "    return itertools.islice(seq, n, None)\n",
            "    return itertools.islice(seq, n + 1, None)\n",
        ),
        wrong=(
            Edit(
                "toolz/itertoolz.py",
                "    return itertools.islice(seq, 0, None, n)\n",
                "    return itertools.islice(seq, 1, None, n)\n",
            ),
        ),
        wrong_kind="breaks take_nth, bug left",
        null_path="toolz/itertoolz.py",
    ),
    Project(
        name="humanize",
        version="4.17.0",
        sha256="1d6a36c453dbfbb3f0b34601d2e0b4ce5d48d780305cd45714843f0068fde6ac",
        # pytest-benchmark's loops run for a fixed time, not a fixed amount of work: once each.
        command=f"PYTHONPATH=src:$PYTHONPATH {PYTEST} --benchmark-disable",
        bug=Edit(
            "src/humanize/filesize.py",
            "    if abs_bytes < base:\n",
            "    if abs_bytes <= base:\n",
        ),
        wrong=(
            Edit(
                "src/humanize/filesize.py",
                "    if abs_bytes <= base:\n",
                "    if abs_bytes < base:\n",
            ),
            Edit(
                "src/humanize/number.py",
                "    digit = 0 if value % 100 in (11, 12, 13) else value % 10\n",
                "    digit = 0 if value % 100 in (11, 12) else value % 10\n",
            ),
        ),
        wrong_kind="fixes it, breaks ordinal",
        null_path="src/humanize/filesize.py",
    ),
    Project(
        name="boltons",
        version="26.2.0",
        sha256="d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c",
        command=PYTEST,
        bug=Edit(
            "boltons/mathutils.py",
            "    i = bisect.bisect_left(options, x)\n    if i == len(options):\n",
            "    i = bisect.bisect_right(options, x)\n    if i == len(options):\n",
        ),
        wrong=(
            Edit(
                "boltons/mathutils.py",
                "    i = bisect.bisect_right(options, x)\n    if not i:\n",
                "    i = bisect.bisect_left(options, x)\n    if not i:\n",
            ),
        ),
        wrong_kind="breaks floor, bug left",
        null_path="boltons/mathutils.py",
    ),
    Project(
        name="attrs",
        version="26.1.0",
        sha256="d03ceb89cb322a8fd706d4fb91940737b6642aa36998fe130a9bc96c985eff32",
        command=f"PYTHONPATH=src:$PYTHONPATH {PYTEST}",
        bug=Edit(
            "src/attr/validators.py",
            '    return _NumberValidator(val, ">=", operator.ge)\n',
            '    return _NumberValidator(val, ">=", operator.gt)\n',
        ),
        wrong=(
            Edit(
                "src/attr/validators.py",
                '    return _NumberValidator(val, ">=", operator.gt)\n',
                '    return _NumberValidator(val, ">=", operator.ge)\n',
            ),
            Edit(
                "src/attr/validators.py",
                "        if len(value) > self.max_length:\n",
                "        if len(value) >= self.max_length:\n",
            ),
        ),
        wrong_kind="fixes it, breaks max_len",
        null_path="src/attr/validators.py",
    ),
)
NULL_COMMENT = "# Reviewed: nothing to change here.\n"


@dataclass
class Task:
    """One project as a base checkout with its bug, and the three patches against it."""

    project: Project
    root: Path
    patches: dict[str, bytes]
    """"gold", "null", "wrong" -> git diff text."""


def _run(argv: list[str], cwd: Path | None = None) -> bytes:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    if done.returncode != 0:
        shown = " ".join(argv)
        raise RuntimeError(f"`{shown}` failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return done.stdout


def fetch_sdist(project: Pinned, cache: Path) -> Path:
    """The project's sdist in `cache/sdists`, downloaded with pip once and hash-checked."""
    return download_sdist(cache / "sdists", project)


def ensure_env(cache: Path, python: str | None = None) -> Path:
    """A virtual environment with every suite's test dependencies, made once per set of
    requirements and interpreter (`python`, default this one), and reused."""
    base_python = python or str(getattr(sys, "_base_executable", sys.executable))
    version = sys.version if python is None else _run([python, "--version"]).decode()
    key = hashlib.sha256("\n".join((version, *TEST_REQUIREMENTS)).encode()).hexdigest()[:12]
    env = cache / f"env-{key}"
    done = env / ".frognano-complete"
    if done.exists():
        return env
    shutil.rmtree(env, ignore_errors=True)
    _run([base_python, "-m", "venv", str(env)])
    _run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", *TEST_REQUIREMENTS])
    done.touch()
    return env


def _apply(root: Path, edits: tuple[Edit, ...]) -> None:
    for edit in edits:
        path = root / edit.path
        text = path.read_text(encoding="utf-8")
        if text.count(edit.old) != 1:
            raise RuntimeError(f"{edit.path}: expected {edit.old!r} exactly once")
        path.write_text(text.replace(edit.old, edit.new), encoding="utf-8")


def _git(root: Path, *args: str) -> bytes:
    config = ["user.name=bench", "user.email=bench@frognano.invalid", "commit.gpgsign=false",
              "core.autocrlf=false"]  # fmt: skip
    options = [word for item in config for word in ("-c", item)]
    return _run(["git", *options, *args], cwd=root)


def _diff(root: Path) -> bytes:
    diff = _git(root, "diff", "--binary", "--full-index", "--no-renames")
    _git(root, "checkout", "--", ".")
    return diff


def make_task(project: Project, sdist: Path, workdir: Path) -> Task:
    """Unpack, commit the release with the bug injected as the base, make the patches."""
    root = unpack_sdist(sdist, workdir)
    _git(root, "init", "-q")
    _apply(root, (project.bug,))
    _git(root, "add", "-A", "--force")  # all the sdist ships, even what its .gitignore lists
    _git(root, "commit", "-q", "-m", f"{project.name} {project.version} with a bug")
    _apply(root, (project.bug.reverted(),))
    gold = _diff(root)
    null_path = root / project.null_path
    null_path.write_bytes(null_path.read_bytes() + NULL_COMMENT.encode())
    null = _diff(root)
    _apply(root, project.wrong)
    wrong = _diff(root)
    return Task(project, root, {"gold": gold, "null": null, "wrong": wrong})
