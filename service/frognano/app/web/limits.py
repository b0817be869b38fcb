"""The receiver's limits: header deadlines, keep-alive, concurrency, a body's size and time."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import h11
from fastapi import Request
from uvicorn.protocols.http.h11_impl import H11Protocol

from frognano.log import get_logger

log = get_logger(__name__)


@dataclass(frozen=True)
class ServerLimits:
    """What a client may hold at the server: see the FROGNANO_WEBHOOK_* settings of the same
    names (the body deadline is the app's own, from the settings create_app reads)."""

    header_timeout: float = 10.0
    """Seconds from a connection's start (or its previous response) to a request's last
    header line; uvicorn itself waits for ever."""
    keep_alive: float = 5.0
    """Seconds an idle keep-alive connection stays open."""
    max_connections: int = 200
    """Connections and requests at once; beyond them uvicorn answers 503."""
    max_header_bytes: int = 16 * 1024
    """Largest request line and headers together; beyond them h11 answers 431 or 400."""


def deadline_protocol(seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing connections whose request headers take too long."""

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                client = self.client
                log.warning(
                    "webhook.headers_too_slow",
                    client=None if client is None else f"{client[0]}:{client[1]}",
                    seconds=seconds,
                )
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            # IDLE: still waiting for a whole request line and headers.
            if self._deadline is not None and self.conn.their_state is not h11.IDLE:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm()  # the next request on this keep-alive connection

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderDeadline


# -- reading a webhook body within a size limit and a deadline, whatever the client does --------


class BodyTooLarge(Exception):
    """The body is larger than the limit (declared or as it streamed in)."""


class BodyTooSlow(Exception):
    """The body did not arrive in full within the deadline."""


async def read_body(request: Request, limit: int, deadline: float) -> bytes:
    """The raw body; BodyTooLarge as soon as it is known to exceed `limit` bytes, BodyTooSlow
    when it has not arrived in `deadline` seconds (a client trickling bytes would otherwise
    hold a connection and a task for ever); ValueError for an unreadable Content-Length."""
    declared = request.headers.get("content-length")
    if declared is not None:
        size = int(declared)  # ValueError: the server would not have got here, but be strict
        if size < 0:
            raise ValueError("negative Content-Length")
        if size > limit:
            raise BodyTooLarge
    chunks: list[bytes] = []
    received = 0
    try:
        async with asyncio.timeout(deadline):
            async for chunk in request.stream():
                received += len(chunk)
                if received > limit:
                    raise BodyTooLarge
                chunks.append(chunk)
    except TimeoutError:
        raise BodyTooSlow from None
    return b"".join(chunks)
