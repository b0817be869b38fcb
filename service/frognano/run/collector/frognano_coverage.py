"""FrogNano's line measurement for its collector: only the files it names, with its own settings."""

# Runs inside the sandbox, loaded by frognano_collector from its own folder (by path, so no
# module of the repository can stand in for it), in whatever Python the repository uses
# (3.7+): the standard library, and coverage.py where the sandbox's environment has it.
# coverage.py is set up here and nowhere else: no configuration file (.coveragerc,
# [tool.coverage] and setup.cfg are never read), no plugins, no data file, no branches.

from __future__ import annotations

import contextlib
import os
import posixpath
import sys
from typing import Any

MAX_TEXT = 500


def read_paths(path: str) -> list[str]:
    """The relative paths listed one a line in `path` (FrogNano wrote it)."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    return [posixpath.normpath(line.strip().lstrip("/")) for line in lines if line.strip()]


def _import_coverage(root: str) -> Any:
    """coverage.py from the environment, never from the tree: `python -m pytest` puts the
    working folder first on sys.path, where a `coverage.py` of the repository would win."""
    tree = os.path.realpath(root)

    def in_tree(entry: str) -> bool:
        where = os.path.realpath(entry or os.getcwd())
        return where == tree or where.startswith(tree + os.sep)

    saved = sys.path[:]
    sys.path[:] = [entry for entry in saved if not in_tree(entry)]
    try:
        import coverage  # noqa: PLC0415 - only where a run asks for it
    except Exception:  # absent or broken, the run goes on unmeasured
        return None
    finally:
        sys.path[:] = saved
    return coverage


class Measure:
    """Line coverage of a few files of the tree, started as early as the collector loads."""

    def __init__(self, root: str, list_file: str) -> None:
        self.error: str | None = None
        self.core: str | None = None
        self._coverage: Any = None
        try:
            paths = read_paths(list_file)
        except (OSError, ValueError) as exc:
            self.error = ("cannot read the list of files to measure: " + str(exc))[:MAX_TEXT]
            return
        coverage = _import_coverage(root)
        if coverage is None:
            self.error = "coverage.py is not installed in the sandbox's Python environment"
            return
        include = [os.path.join(os.path.realpath(root), path) for path in paths]
        try:
            measure = coverage.Coverage(
                data_file=None, config_file=False, include=include, branch=False
            )
            # The fastest core there is: sys.monitoring from 3.12, else the C tracer.
            core = "sysmon" if sys.version_info >= (3, 12) else "ctrace"
            with contextlib.suppress(Exception):  # an older coverage.py picks its own
                measure.set_option("run:core", core)
            measure.start()
        except Exception as exc:  # the run goes on unmeasured, and says why
            self.error = ("coverage.py could not start: " + str(exc))[:MAX_TEXT]
            return
        self._coverage = measure

    def stop(self) -> dict[str, list[int]]:
        """Stop measuring; absolute path -> executed line numbers."""
        measure, self._coverage = self._coverage, None
        if measure is None:
            return {}
        try:
            measure.stop()
            data = measure.get_data()
            self.core = dict(measure.sys_info()).get("core")
            return {path: sorted(data.lines(path) or ()) for path in data.measured_files()}
        except Exception as exc:  # tests can break coverage.py; say so
            self.error = ("coverage.py failed: " + str(exc))[:MAX_TEXT]
            return {}


class Lines:
    """What the session's processes executed: this one's measure, and each xdist worker's."""

    def __init__(self, measure: Measure | None) -> None:
        self.measure = measure
        self.executed: dict[str, set[int]] = {}
        self.errors: list[str] = []
        self.core: str | None = None

    def worker_output(self) -> dict[str, Any]:
        """What an xdist worker sends its controller (execnet carries plain data only)."""
        if self.measure is None:
            return {}
        lines = self.measure.stop()
        return {"lines": lines, "core": self.measure.core, "error": self.measure.error}

    def add(self, output: object) -> None:
        """A worker's output, from `worker_output`."""
        if not isinstance(output, dict):
            return
        for path, numbers in (output.get("lines") or {}).items():
            self.executed.setdefault(str(path), set()).update(int(n) for n in numbers)
        self.core = self.core or output.get("core")
        if output.get("error"):
            self.errors.append(str(output["error"])[:MAX_TEXT])

    def record(self, relative: Any) -> dict[str, Any]:
        """The collector's `coverage` record: relative path -> executed lines."""
        self.add(self.worker_output())
        files = {relative(path): sorted(numbers) for path, numbers in sorted(self.executed.items())}
        error = "; ".join(dict.fromkeys(self.errors)) or None
        return {"files": files, "core": self.core, "error": error}
