"""Reading a webhook body within a size limit and a deadline, whatever the client does."""

from __future__ import annotations

import asyncio

from fastapi import Request


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
