"""What the file tools know of each file: its hash (for the read-before-edit rule) and bytes."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

CACHE_BYTES = 32 * 1024 * 1024
CACHE_ENTRIES = 4096


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Known:
    """A file the tools have read or written: its hash, and its bytes while they are cached."""

    digest: str
    data: bytes | None


class FileCache:
    """What the tools know of each file, least recently used first; bytes bounded in total."""

    def __init__(self, max_bytes: int = CACHE_BYTES, max_entries: int = CACHE_ENTRIES) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.size = 0
        self._entries: OrderedDict[str, Known] = OrderedDict()

    def get(self, path: str) -> Known | None:
        known = self._entries.get(path)
        if known is not None:
            self._entries.move_to_end(path)
        return known

    def put(self, path: str, digest: str, data: bytes | None) -> None:
        self.forget(path)
        if data is not None and len(data) > self.max_bytes:
            data = None
        self._entries[path] = Known(digest, data)
        self.size += len(data) if data is not None else 0
        for old_path, old in self._entries.items():
            if self.size <= self.max_bytes:
                break
            if old.data is not None and old_path != path:
                self.size -= len(old.data)
                old.data = None  # the hash stays: the file is still known, just not cached
        while len(self._entries) > self.max_entries:
            _, dropped = self._entries.popitem(last=False)
            self.size -= len(dropped.data) if dropped.data is not None else 0

    def forget(self, path: str) -> None:
        known = self._entries.pop(path, None)
        if known is not None and known.data is not None:
            self.size -= len(known.data)
