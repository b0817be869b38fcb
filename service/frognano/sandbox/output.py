"""Bounded capture of command output that keeps the head and the tail."""

from __future__ import annotations

from collections import deque


class HeadTail:
    """Keeps the first and last `limit // 2` bytes written; counts what falls in between.

    A runaway command can print gigabytes; the start (what ran) and the end (how it failed)
    are what a reader needs, so the middle is dropped while the pipe keeps being drained.
    """

    def __init__(self, limit: int) -> None:
        if limit < 2:
            raise ValueError("output limit must be at least 2 bytes")
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.dropped = 0

    def write(self, data: bytes) -> None:
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail_size > self._tail_limit:
            excess = self._tail_size - self._tail_limit
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_size -= len(first)
                self.dropped += len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_size -= excess
                self.dropped += excess

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def getvalue(self) -> bytes:
        """Head, a one-line marker saying how much was dropped (if any), then tail."""
        tail = b"".join(self._tail)
        if not self.dropped:
            return bytes(self._head) + tail
        marker = f"\n[... {self.dropped} bytes of output omitted ...]\n".encode()
        return bytes(self._head) + marker + tail
