"""Which tests a collector session keeps: its selection file, read when FrogNano says go."""

# Loaded by path by frognano_collector, in the sandbox's Python (3.7+): standard library only.
#
# A run that FrogNano starts before it knows what to select (a hunk check, started while
# verification runs) names a FIFO as well: the session opens it at once, imports pytest's
# plugins and the repository's conftest.py files as any run does, and blocks before
# collecting until FrogNano has written the selection file and then a line to the FIFO.

from __future__ import annotations

import os
import posixpath


class Selection:
    """The selected tests (file paths and node ids from the repository root), and the files
    and folders they are in; None when the run selects nothing out (it runs everything)."""

    def __init__(self, path: str | None, wait: str | None) -> None:
        self.path = path
        self.tests: frozenset[str] | None = None
        self.reach: frozenset[str] | None = None
        self.error: str | None = None
        self.fd: int | None = None
        if wait is not None:
            try:
                # Read and write: opening never blocks, and the read below waits for data
                # instead of seeing an end of file. Not inherited by what the tests start.
                self.fd = os.open(wait, os.O_RDWR | os.O_CLOEXEC)
            except OSError as exc:
                self._fail("cannot open the selection's signal: " + str(exc))
                return
        else:
            self._read()

    def wait(self) -> None:
        """Block until FrogNano has written the selection (no-op for a run that knew it)."""
        if self.fd is None:
            return
        try:
            os.read(self.fd, 64)
        except OSError as exc:
            self._fail("cannot read the selection's signal: " + str(exc))
            return
        finally:
            os.close(self.fd)
            self.fd = None
        self._read()

    def _read(self) -> None:
        if self.path is None:
            return
        try:
            with open(self.path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except (OSError, ValueError) as exc:
            # Running nothing rather than everything: the host reports the error.
            self._fail("cannot read the selection file: " + str(exc))
            return
        paths = (posixpath.normpath(line.strip().lstrip("/")) for line in lines if line.strip())
        self.tests = frozenset(paths)
        self.reach = reach(self.tests)

    def _fail(self, message: str) -> None:
        self.tests, self.reach, self.error = frozenset(), frozenset(), message[:500]


def reach(select: frozenset[str]) -> frozenset[str]:
    """The files the selected tests are in (a node id's path part) and every folder above."""
    reached = set()
    for entry in select:
        path = entry.split("::", 1)[0]
        while path and path not in reached:
            reached.add(path)
            path = posixpath.dirname(path)
    return frozenset(reached)
