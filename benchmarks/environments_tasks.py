"""The real projects `environments.py` builds environments for, and the index it uses.

Nothing here is committed third-party code: each project's sdist is downloaded with pip at
run time (version and SHA-256 pinned, `verify_real_tasks.fetch_sdist`), unpacked and made a
git checkout with one commit. Its dependencies come through proxpi, started here in front of
the real PyPI, as an admin would run the one index FrogNano's environment phase installs
through.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.packageindex import _PROXPI_SERVE, _start, _wait_answering
from tests.sdists import unpack_sdist

PYTEST = "python -m pytest -q -p no:cacheprovider"
PYPI = "https://pypi.org/simple/"
COMMENT = "# Reviewed by the environments benchmark: nothing to change here.\n"


@dataclass(frozen=True)
class Project:
    name: str
    """The PyPI name, as `--projects` takes it."""
    version: str
    sha256: str
    """Of the sdist, as pip downloads it."""
    command: str
    """The policy's `verify.command`."""
    install: tuple[str, ...] | None
    """The policy's `environment.install`; None: FrogNano detects it."""
    edit_path: str
    """The source file the scripted agent reads and adds a comment to..."""
    anchor: str
    """...after this line, which occurs in it exactly once."""


PROJECTS: tuple[Project, ...] = (
    # Detected: its uv.lock, installed exactly (the `tests` and `dev` groups' hypothesis,
    # pympler, cloudpickle, pytest-xdist[psutil], ruff... at the locked versions, hashed).
    Project(
        name="attrs",
        version="26.1.0",
        sha256="d03ceb89cb322a8fd706d4fb91940737b6642aa36998fe130a9bc96c985eff32",
        command=PYTEST,
        install=None,
        edit_path="src/attr/validators.py",
        anchor='    return _NumberValidator(val, ">=", operator.ge)\n',
    ),
    # Detected: the `tests` group (pytest-asyncio, pytest-randomly, time-machine...) and
    # `dev`, which adds mypy, rich and twisted.
    Project(
        name="structlog",
        version="26.1.0",
        sha256="f63a716cbd1b1291cf7661de7794b455acfa4c43c5bcf1630e6ad5ddc1adb3b7",
        command=PYTEST,
        install=None,
        edit_path="src/structlog/processors.py",
        anchor="from __future__ import annotations\n",
    ),
    # Given, to go through the policy's `environment.install`: the `tests` group and the
    # `dev` group's tools (pre-commit, mypy, tox), as a contributor's checkout has them.
    # Named one by one: the base interpreter's pip (23.2) has no `--group`.
    Project(
        name="marshmallow",
        version="4.4.0",
        sha256="9e6ffa8511012ca89732324c1c253efd7b4d35632dcbdf80aa793fe01804af3e",
        command=PYTEST,
        install=(
            "python -m pip install -e . pytest simplejson pre-commit mypy types-simplejson tox",
        ),
        edit_path="src/marshmallow/fields.py",
        anchor="from __future__ import annotations\n",
    ),
    # Given: detection would install the `test` group (virtue, jsonpath-ng) but no pytest,
    # which verification needs; the format checkers' extra makes more tests run.
    Project(
        name="jsonschema",
        version="4.26.0",
        sha256="0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326",
        command=f"{PYTEST} jsonschema/tests",
        install=("python -m pip install -e '.[format-nongpl]' pytest virtue jsonpath-ng",),
        edit_path="jsonschema/validators.py",
        anchor="from __future__ import annotations\n",
    ),
)


def _run(argv: list[str], cwd: Path) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    if done.returncode != 0:
        shown = " ".join(argv)
        raise RuntimeError(f"`{shown}` failed ({done.returncode}): {done.stderr.decode()[-2000:]}")


def make_checkout(sdist: Path, workdir: Path) -> Path:
    """The sdist unpacked into `workdir` and committed as a git checkout's one commit."""
    root = unpack_sdist(sdist, workdir)
    config = ["user.name=bench", "user.email=bench@frognano.invalid", "commit.gpgsign=false"]
    git = ["git", *[word for item in config for word in ("-c", item)]]
    _run([*git, "init", "-q"], root)
    _run([*git, "add", "-A", "--force"], root)  # all the sdist ships, even what git ignores
    _run([*git, "commit", "-q", "-m", "release"], root)
    return root


def write_policy(project: Project, folder: Path) -> Path:
    """A policy folder for the project: its test command and install, and `no_regressions`,
    so the scripted comment-only patch is ready when the suite passes as before."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["version: 1", "defaults:", "  verify:", f"    command: {project.command!r}",
             "    require: no_regressions"]  # fmt: skip
    if project.install is not None:
        lines += ["  environment:", "    install:"]
        lines += [f"      - {command!r}" for command in project.install]
    (folder / "00-bench.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@contextmanager
def serve_pypi_proxy(workdir: Path, cache: Path, host: str = "127.0.0.1") -> Iterator[str]:
    """proxpi in front of the real PyPI, its files cached in `cache`; yields the index URL."""
    proxpi_python = Path(__file__).resolve().parents[1] / ".ci" / "index-venv" / "bin" / "python"
    if not proxpi_python.exists():
        sys.exit(f"no proxpi at {proxpi_python}: make it as .ci/run does")
    logs = workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PROXPI_")}
    env.update(
        PROXPI_INDEX_URL=PYPI,
        PROXPI_CACHE_DIR=str(cache),
        PROXPI_CACHE_SIZE=str(20 << 30),
        # Wait for each file instead of redirecting pip to files.pythonhosted.org, which the
        # build sandbox may not reach (only the index's host and port are approved).
        PROXPI_DOWNLOAD_TIMEOUT="300",
        NO_PROXY=host,
        no_proxy=host,
    )
    with ExitStack() as stack:
        port = _start(stack, [str(proxpi_python), "-c", _PROXPI_SERVE, host], env, logs, "proxpi")
        url = f"http://{host}:{port}/index/"
        # A project's page, never the root: proxpi would fetch PyPI's list of every project.
        _wait_answering(url + "pip/", logs / "proxpi.log")
        yield url
