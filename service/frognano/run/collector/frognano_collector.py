"""FrogNano's pytest plugin: per-test outcomes as JSON lines on an inherited file descriptor."""

# This module runs inside the sandbox, in whatever Python the tested repository uses (3.7+)
# and with pytest 7.0 to 9.x: it imports only the standard library and pytest, and avoids
# newer syntax and library calls at run time. Unlike FrogNano's service code it acts when
# imported: pytest imports it from PYTEST_PLUGINS before anything of the repository runs,
# which is the one moment its settings can be taken out of the environment.
#
# What it can vouch for: it runs in the test process, beside the code under test, which can
# reach all it has (the fd, the token in this module, pytest's reports, and the environment
# of the shell that started pytest, in /proc). The token and the host's checks turn naive
# tampering into problems: records written to the fd or printed, a process ended early, an
# exit status or exit code that contradicts the results. A consistent forgery by code that
# finds the token cannot be told from a real run, so the verdict's integrity also rests on
# what the patch may change (tests, conftest.py files, plugins), not on this stream alone.

from __future__ import annotations

import importlib.util
import json
import math
import os
import posixpath
import sys
from collections.abc import Callable, Generator
from typing import Any

import pytest

RECORD_VERSION = 1
MODULE = "frognano_collector"
ENV_FD = "FROGNANO_COLLECTOR_FD"
ENV_TOKEN = "FROGNANO_COLLECTOR_TOKEN"  # noqa: S105 - a variable's name, not its value
ENV_ROOT = "FROGNANO_COLLECTOR_ROOT"
ENV_SELECT = "FROGNANO_COLLECTOR_SELECT"
ENV_COVER = "FROGNANO_COLLECTOR_COVER"
ENV_WAIT = "FROGNANO_COLLECTOR_WAIT"
MAX_TEXT = 500
_HERE = os.path.dirname(os.path.abspath(__file__))


class _Settings:
    """What the environment said, taken once at import."""

    def __init__(
        self,
        fd: int | None,
        token: str,
        root: str | None,
        select_file: str | None,
        *,
        cover_file: str | None = None,
        wait_file: str | None = None,
    ) -> None:
        self.fd = fd
        self.token = token
        self.root = root
        self.select_file = select_file
        self.cover_file = cover_file
        self.wait_file = wait_file


def _usable_fd(text: str | None) -> int | None:
    try:
        fd = int(text or "")
        os.fstat(fd)
        # Subprocesses of tests must not get the stream: only this process writes to it.
        os.set_inheritable(fd, False)
    except (ValueError, OSError):
        return None
    return fd


def _without_collector(value: str, separator: str, drop: Callable[[str], bool]) -> str | None:
    kept = [part for part in value.split(separator) if not drop(part.strip())]
    return separator.join(kept) if any(part.strip() for part in kept) else None


def _set_or_remove(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _take_environment() -> _Settings | None:
    """Read the settings and remove every trace of them, so that neither a pytest started by a
    test (in process or as a subprocess) loads the collector again, nor test code reads them."""
    env = os.environ
    names = (ENV_FD, ENV_TOKEN, ENV_ROOT, ENV_SELECT, ENV_COVER, ENV_WAIT)
    if not any(name in env for name in names):
        return None  # imported by accident: do nothing at all
    fd_text = env.pop(ENV_FD, None)
    token = env.pop(ENV_TOKEN, "")
    root = env.pop(ENV_ROOT, None) or None
    select_file = env.pop(ENV_SELECT, None) or None
    cover_file = env.pop(ENV_COVER, None) or None
    wait_file = env.pop(ENV_WAIT, None) or None
    if "PYTEST_PLUGINS" in env:
        plugins = env["PYTEST_PLUGINS"]
        _set_or_remove("PYTEST_PLUGINS", _without_collector(plugins, ",", MODULE.__eq__))
    if "PYTHONPATH" in env:
        here = os.path.realpath(_HERE)

        def is_here(entry: str) -> bool:
            return bool(entry) and os.path.realpath(entry) == here

        _set_or_remove("PYTHONPATH", _without_collector(env["PYTHONPATH"], os.pathsep, is_here))
    return _Settings(
        _usable_fd(fd_text), token, root, select_file, cover_file=cover_file, wait_file=wait_file
    )


def _load(name: str) -> Any:
    """A module of this folder, by path: no module of the repository can stand in for it."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, name + ".py"))
    if spec is None or spec.loader is None:
        raise ImportError("FrogNano's " + name + ".py is missing beside its collector")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _measure(settings: _Settings | None) -> Any:
    """frognano_coverage's `Lines` for this process, measuring from now (before any
    conftest.py is imported) where the run asked for it; None otherwise."""
    if settings is None or settings.cover_file is None:
        return None
    measure = _load("frognano_coverage")
    return measure.Lines(measure.Measure(settings.root or os.getcwd(), settings.cover_file))


class _Writer:
    """Whole JSON lines to the fd, each written out before the next is made."""

    def __init__(self, fd: int | None, token: str) -> None:
        self.fd = fd
        self.token = token
        self.seq = 0

    def write(self, kind: str, fields: dict[str, Any]) -> None:
        if self.fd is None:
            return
        record = {"v": RECORD_VERSION, "kind": kind, "token": self.token}
        record.update(pid=os.getpid(), seq=self.seq)
        record.update(fields)
        self.seq += 1
        line = json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str)
        data = memoryview((line + "\n").encode("ascii"))
        while data:
            try:
                written = os.write(self.fd, data)
            except OSError:
                self.fd = None  # the reader is gone; the host sees a session that never ended
                return
            data = data[written:]


class _Collector:
    """The plugin object of the one pytest session this process reports."""

    def __init__(self, config: pytest.Config, settings: _Settings) -> None:
        self.config = config
        self.settings = settings
        self.worker = hasattr(config, "workerinput")
        # An xdist worker never writes: its controller receives every report and writes them.
        self.writer = _Writer(None if self.worker else settings.fd, settings.token)
        self.controller = False
        self.root = os.path.realpath(settings.root or str(config.rootpath))
        prefix = os.path.relpath(os.path.realpath(str(config.rootpath)), self.root)
        self.prefix = "" if prefix == "." else prefix.replace(os.sep, "/")
        # Opened now; read at session start, which a run started early waits for.
        self.selection = _SELECTION.Selection(settings.select_file, settings.wait_file)
        self.collected_written = False
        self.items: dict[str, dict[str, Any]] = {}
        self.worker_env: dict[str, str | None] = {}
        self.relative_cache: dict[str, str] = {}

    def relative(self, path: str) -> str:
        """`path` relative to the repository root, with forward slashes."""
        cached = self.relative_cache.get(path)
        if cached is None:
            cached = os.path.relpath(os.path.realpath(path), self.root).replace(os.sep, "/")
            self.relative_cache[path] = cached
        return cached

    def norm(self, nodeid: str) -> str:
        """A node id relative to the repository root instead of pytest's rootdir."""
        path, separator, rest = nodeid.partition("::")
        if self.prefix:
            path = posixpath.join(self.prefix, path) if path else self.prefix
        if path:
            path = posixpath.normpath(path)
        return path + separator + rest

    @property
    def select(self) -> frozenset[str] | None:
        tests: frozenset[str] | None = self.selection.tests
        return tests

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionstart(self) -> Generator[None, object, None]:
        self.controller = self.config.pluginmanager.has_plugin("dsession")
        # Before xdist starts its workers, which read the selection file as they collect.
        self.selection.wait()
        self.writer.write(
            "session_start",
            {
                "pytest": pytest.__version__,
                "python": sys.version.split()[0],
                "rootdir": str(self.config.rootpath),
                "root": self.root,
                "xdist": "controller" if self.controller else None,
                "select": None if self.select is None else len(self.select),
                "select_error": self.selection.error,
            },
        )
        yield
        # xdist started its workers inside this hook; they have what they need now.
        for name, value in self.worker_env.items():
            _set_or_remove(name, value)
        self.worker_env = {}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self) -> None:
        """Workers do the selection, so they load the collector too, through their environment
        (they inherit it when they start); no fd or token: workers write nothing."""
        select, cover = self.settings.select_file, self.settings.cover_file
        if select is None and cover is None:
            return
        plugins = os.environ.get("PYTEST_PLUGINS")
        wanted = {
            "PYTEST_PLUGINS": MODULE if not plugins else plugins + "," + MODULE,
            ENV_ROOT: self.root,
            **({ENV_SELECT: select} if select else {}),
            **({ENV_COVER: cover} if cover else {}),
        }
        for name, value in wanted.items():
            self.worker_env[name] = os.environ.get(name)
            os.environ[name] = value

    def pytest_ignore_collect(self, collection_path: Any) -> bool | None:
        """With a selection, skip every file and folder no selected test is in: a check of
        three tests should not import the whole suite. The selection still decides."""
        reach = self.selection.reach
        if reach is None:
            return None
        relative = self.relative(str(collection_path))
        if relative == "." or relative.startswith("../") or relative in reach:
            return None
        return True

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            message = _OUTCOME.collect_message(report)
            self.writer.write("collect_error", {"id": self.norm(report.nodeid), "message": message})

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.select is None:
            return
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            # A file path selects its tests; a node id selects that test alone.
            chosen = (
                self.relative(str(item.path)) in self.select
                or self.norm(item.nodeid) in self.select
            )
            (kept if chosen else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self.controller:
            self._write_collected([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, ids: list[str]) -> None:
        # Every worker collects the same ids (xdist fails the run otherwise): write them once.
        self._write_collected(list(ids))

    def _write_collected(self, ids: list[str]) -> None:
        if not self.collected_written:
            self.collected_written = True
            self.writer.write("collected", {"ids": [self.norm(nodeid) for nodeid in ids]})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        when = (
            report.when if report.when in _OUTCOME.PHASES else "call"
        )  # xdist's crash reports: "???"
        phases = self.items.setdefault(report.nodeid, {})
        if when == "setup" and phases:
            phases.clear()  # the item runs again (a rerun plugin): its last run counts
        phase = phases.setdefault(when, _OUTCOME.Phase())
        # Subtests report several times per phase, before the test's own report: one failure
        # fails the phase; otherwise the last report, the test's own, says what happened.
        if phase.outcome != "failed":
            phase.outcome = str(report.outcome)
            if report.failed:
                phase.crash = _OUTCOME.crash(report)
        phase.wasxfail = hasattr(report, "wasxfail")
        duration = getattr(report, "duration", 0.0)
        if isinstance(duration, (int, float)) and math.isfinite(duration):
            phase.duration = max(phase.duration, float(duration))

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self._write_test(nodeid, self.items.pop(nodeid, {}))

    def _write_test(self, nodeid: str, phases: dict[str, Any]) -> None:
        outcome, crash = _OUTCOME.outcome_of(phases)
        record = {
            "id": self.norm(nodeid),
            "outcome": outcome,
            "duration": round(sum(phase.duration for phase in phases.values()), 6),
            "phases": {name: phase.outcome for name, phase in phases.items()},
            "crash": crash or None,
        }
        self.writer.write("test", record)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: object) -> None:
        # Items that reported but never finished: an interrupted test, a crashed xdist worker.
        for nodeid, phases in list(self.items.items()):
            self._write_test(nodeid, phases)
        self.items.clear()
        conftests = sorted(
            self.relative(path)
            for path in (getattr(plugin, "__file__", None) for plugin in self._plugins())
            if isinstance(path, str) and os.path.basename(path) == "conftest.py"
        )
        if _LINES is not None:
            if self.worker:
                self.config.workeroutput["frognano_coverage"] = _LINES.worker_output()  # type: ignore[attr-defined]
            else:
                self.writer.write("coverage", _LINES.record(self.relative))
        # ExitCode is an IntEnum; pytest.exit(returncode=...) can make it any int.
        status = int(exitstatus) if isinstance(exitstatus, int) else -1
        self.writer.write(
            "session_finish",
            {
                "exitstatus": status,
                "testscollected": session.testscollected,
                "testsfailed": session.testsfailed,
                "conftests": conftests,
            },
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        if _LINES is not None:
            _LINES.add(getattr(node, "workeroutput", {}).get("frognano_coverage"))

    def _plugins(self) -> list[object]:
        return list(self.config.pluginmanager.get_plugins())


_OUTCOME = _load("frognano_outcome")
_SELECTION = _load("frognano_selection")
_SETTINGS = _take_environment()
_LINES = _measure(_SETTINGS)
_claimed = False


def pytest_configure(config: pytest.Config) -> None:
    """Report the first session of this process only: a pytest that test code starts in
    process and names this module again must not add records of its own."""
    global _claimed  # noqa: PLW0603 - one collector per process, by design
    if _SETTINGS is None or _claimed:
        return
    _claimed = True
    config.pluginmanager.register(_Collector(config, _SETTINGS), "frognano-collector-session")
