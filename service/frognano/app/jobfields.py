"""Typed reads of one JSON job argument from Redis, each failure naming the field."""

from __future__ import annotations

from frognano.errors import FrogNanoError

__all__ = ["Fields", "MalformedJob"]


class MalformedJob(FrogNanoError, ValueError):
    """A job argument read from Redis is not what `to_job` writes; the message says where."""


class Fields:
    """Typed reads from one JSON object, each failure naming the field."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, dict):
            raise MalformedJob(f"{where} is not a JSON object but {type(data).__name__}")
        self.data: dict[str, object] = data
        self.where = where

    def _get(self, key: str) -> object:
        if key not in self.data:
            raise MalformedJob(f"{self.where} has no {key!r}")
        return self.data[key]

    def _wrong(self, key: str, expected: str, value: object) -> MalformedJob:
        return MalformedJob(f"{self.where}: {key!r} must be {expected}, not {type(value).__name__}")

    def string(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise self._wrong(key, "a string", value)
        return value

    def integer(self, key: str) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(key, "an integer", value)
        return value

    def optional_integer(self, key: str) -> int | None:
        if self.data.get(key) is None:
            return None
        return self.integer(key)

    def optional_string(self, key: str) -> str | None:
        if self.data.get(key) is None:
            return None
        return self.string(key)

    def flag(self, key: str) -> bool:
        """False when absent."""
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            raise self._wrong(key, "a boolean", value)
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self._wrong(key, "a list of strings", value)
        return tuple(value)

    def nested(self, key: str) -> Fields:
        return Fields(self._get(key), f"{self.where}.{key}")
