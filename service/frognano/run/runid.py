"""Run ids: `YYYYMMDD-HHMMSS-xxxxxx` (UTC), sortable by time, shared by `solve` and the App."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
