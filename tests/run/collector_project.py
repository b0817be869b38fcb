"""Small pytest projects run with FrogNano's collector, loaded the way the sandbox loads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from frognano.run.collector import DEFAULT_FD, collector_dir, collector_env, new_token
from frognano.run.results import CollectorReport, check_exit_code, parse_records

# The Python (and so the pytest) the projects run under; another interpreter with its own
# pytest checks the plugin against other pytest releases, e.g. pytest 7.0 on Python 3.8.
PYTHON = os.environ.get("FNTEST_COLLECTOR_PYTHON", sys.executable)
# What the sandbox does: the test command inherits the stream on fd 87. The parent's end of
# the pipe gets whatever number the OS gives it; bash moves it to 87 before the command runs.
INI = {"pytest.ini": "[pytest]\n"}
"""An empty pytest configuration: pytest's rootdir is where it lies."""
MOVE_FD = 'exec {target}>&{source} {source}>&-; exec "$@"'


@dataclass(frozen=True)
class Run:
    """One test command's stream, exit code and output."""

    stream: bytes
    exit_code: int
    output: str
    token: str

    def report(self) -> CollectorReport:
        return check_exit_code(parse_records(self.stream, self.token), self.exit_code)

    def records(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.stream.splitlines()]

    def kinds(self) -> set[str]:
        return {problem.kind for problem in self.report().problems}


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def base_env() -> dict[str, str]:
    """This process's environment without anything of the pytest running these tests."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "FROGNANO_", "PYTHON"))
    }
    # Plugins installed beside the outer pytest (asyncio, timeout) have no place here.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def pytest_argv(*args: str) -> list[str]:
    return [PYTHON, "-m", "pytest", "-p", "no:cacheprovider", *args]


def run_command(
    root: Path,
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    select: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    fd_value: str | None = None,
    timeout: float = 60,
    cover: Sequence[str] | None = None,
) -> Run:
    """Run `argv` in `root` with the collector's variables and the stream's write end on fd
    87, reading the stream until every writer has closed it."""
    token = new_token()
    select_file = None
    if select is not None:
        select_file = root / ".frognano-select"
        select_file.write_text("".join(f"{path}\n" for path in select), encoding="utf-8")
    cover_file = None
    if cover is not None:
        cover_file = root / ".frognano-cover"
        cover_file.write_text("".join(f"{path}\n" for path in cover), encoding="utf-8")
    read_end, write_end = os.pipe()
    full_env = base_env()
    full_env.update(
        collector_env(
            plugin_dir=str(collector_dir()),
            token=token,
            root=str(root),
            select_file=None if select_file is None else str(select_file),
            cover_file=None if cover_file is None else str(cover_file),
        )
    )
    if fd_value is not None:
        full_env["FROGNANO_COLLECTOR_FD"] = fd_value
    full_env.update(env or {})
    move = MOVE_FD.format(target=DEFAULT_FD, source=write_end)
    chunks: list[bytes] = []

    def drain() -> None:
        with os.fdopen(read_end, "rb") as stream:
            chunks.append(stream.read())

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        process = subprocess.run(
            ["bash", "-c", move, "bash", *argv],
            cwd=cwd or root,
            env=full_env,
            pass_fds=(write_end,),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    finally:
        os.close(write_end)
        reader.join(timeout)
    output = process.stdout.decode("utf-8", "replace")
    return Run(stream=b"".join(chunks), exit_code=process.returncode, output=output, token=token)


def run_pytest(
    root: Path,
    *args: str,
    cwd: Path | None = None,
    select: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    fd_value: str | None = None,
    cover: Sequence[str] | None = None,
) -> Run:
    """`python -m pytest ARGS` as the test command."""
    argv = pytest_argv(*args)
    return run_command(root, argv, cwd=cwd, select=select, env=env, fd_value=fd_value, cover=cover)
