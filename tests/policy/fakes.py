"""Realistic fake credentials, made at run time so that no scanner finds one in this tree."""

from __future__ import annotations

import base64
import random
import string

_RANDOM = random.Random(20260601)  # noqa: S311 - test data, not cryptography
_ALNUM = string.ascii_letters + string.digits


def fake(prefix: str, length: int, alphabet: str = _ALNUM) -> str:
    """`prefix` and `length` characters drawn from `alphabet` (seeded: the same every run)."""
    return prefix + "".join(_RANDOM.choice(alphabet) for _ in range(length))


GITHUB_TOKEN = fake("ghp" + "_", 36)
AWS_KEY = fake("AK" + "IA", 16, string.ascii_uppercase + string.digits)
STRIPE_KEY = fake("sk" + "_live_", 24)
HEX_SECRET = fake("", 40, "0123456789abcdef")
PASSWORD = fake("", 14)
API_KEY = fake("", 40)
BLOB = base64.b64encode(_RANDOM.randbytes(48)).decode()
"""Base64 of random bytes: high entropy, but nothing inside."""
