"""Fixtures shared by the App's tests: FrogNano's ledger on the real Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from frognano.app.ledger import Ledger
from tests.app.web.conftest import REDIS_URL


@pytest.fixture
async def ledger() -> AsyncIterator[Ledger]:
    """A ledger of its own (a fresh key prefix) on the machine's Redis, emptied afterwards."""
    redis = Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    prefix = f"fntest-ledger-{uuid.uuid4().hex[:8]}:"
    try:
        yield Ledger(redis, key_prefix=prefix)
    finally:
        keys = [key async for key in redis.scan_iter(match=f"{prefix}*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
