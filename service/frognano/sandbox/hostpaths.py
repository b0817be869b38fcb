"""Host folders a sandbox shows at their own paths, and text with them named by placeholders."""

# A local sandbox binds its Python environment read-only at the environment's host path (the
# absolute shebangs and the interpreter's home must resolve), so whatever runs inside can
# print it: a pytest traceback through `/srv/frognano/.venv/lib/python3.11/site-packages/...`.
# That is a detail of the worker's host, not of the repository. `hide` puts each folder's
# placeholder (`<python>`) in its place wherever such text is published; the folders are
# known exactly, so nothing else is touched. A Kubernetes pod binds nothing from the worker.

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["HostPaths", "host_paths_of"]


@dataclass(frozen=True)
class HostPaths:
    """(host folder, placeholder) pairs, the longest folder first so that a folder inside
    another is named by its own placeholder."""

    pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, named: Iterable[tuple[str | Path, str]]) -> HostPaths:
        """From (folder, placeholder) pairs: relative paths and `/` are dropped, and a folder
        named twice keeps its first placeholder."""
        found: dict[str, str] = {}
        for folder, placeholder in named:
            path = str(folder).rstrip("/")
            if path.startswith("/") and placeholder:
                found.setdefault(path, placeholder)
        return cls(tuple(sorted(found.items(), key=lambda pair: (-len(pair[0]), pair[0]))))

    @classmethod
    def from_json(cls, raw: object) -> HostPaths:
        """From `to_json`'s list as read back from a file; whatever is not a pair of strings
        is skipped (a trajectory is only a record)."""
        if not isinstance(raw, list):
            return cls()
        pairs = [
            (item[0], item[1])
            for item in raw
            if isinstance(item, list)
            and len(item) == 2
            and all(isinstance(part, str) for part in item)
        ]
        return cls.of(pairs)

    def to_json(self) -> list[list[str]]:
        return [[folder, placeholder] for folder, placeholder in self.pairs]

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str] | None:
        if not self.pairs:
            return None
        # Whole path components only: `/srv/venv` is not in `/srv/venv2`, `/srv/venv.old` or
        # `/x/srv/venv`, yet a sentence may end right after one (`in /srv/venv.`).
        folders = "|".join(re.escape(folder) for folder, _ in self.pairs)
        return re.compile(rf"(?<![\w.\-/])(?:{folders})(?![\w\-]|\.[\w\-])")

    def hide(self, text: str) -> str:
        """`text` with every host folder replaced by its placeholder."""
        pattern = self._pattern
        if pattern is None or not text:
            return text
        placeholders = dict(self.pairs)
        return pattern.sub(lambda match: placeholders[match.group(0)], text)


class _ShowsHostPaths(Protocol):
    """The part of the Sandbox protocol (base.py, which imports this module) read here."""

    @property
    def host_paths(self) -> HostPaths | None: ...


def host_paths_of(sandbox: _ShowsHostPaths) -> HostPaths:
    """The host folders `sandbox` shows at their own paths (none for a backend that says None:
    a Kubernetes pod binds nothing from this host)."""
    found = sandbox.host_paths
    return HostPaths() if found is None else found
