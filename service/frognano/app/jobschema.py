"""A frozen dataclass's JSON form, derived from its fields: written as is, read back checked."""

# The dataclass is the schema: its fields, in their order, with their annotations and defaults,
# are the JSON object's keys and types; nothing restates them. `Schema.write` copies each field
# (a nested dataclass as an object, a tuple as a list). `Schema.read` takes JSON's own types
# strictly: an `int` field needs an integer (not true, 7.0 or "7"), a `str` a string, a `bool`
# a boolean, a `tuple[str, ...]` a list of strings, a nested dataclass an object. What was
# queued before an upgrade, or by a newer receiver during one, still reads:
#
#   - an absent key reads as the field's default, or as None when its type allows None;
#   - null reads as None where the type allows None;
#   - a `Literal` of strings reads null, or a string it does not list, as the field's default
#     (a newer receiver's value, like a key this worker does not know);
#   - keys the dataclass does not have are ignored.
#
# Anything else raises MalformedJob naming the first wrong field, in the fields' order. A field
# of any other type is a TypeError when the schema is made (at import), not a silent guess.

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar

from frognano.errors import FrogNanoError

__all__ = ["MalformedJob", "Schema"]

T = TypeVar("T")
Read = Callable[[object, str, str], object]
"""Reads one present value: (value, where, key) -> the field's value, or raises MalformedJob."""
_REQUIRED = object()


class MalformedJob(FrogNanoError, ValueError):
    """A job argument read from Redis is not what `to_job` writes; the message says where."""


class Schema(Generic[T]):
    """The JSON form of the frozen dataclass `cls`; `where` names it in MalformedJob."""

    def __init__(self, cls: type[T], where: str) -> None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} is not a dataclass")
        self.cls = cls
        self.where = where
        hints = typing.get_type_hints(cls)
        fields = [field for field in dataclasses.fields(cls) if field.init]
        self._names = tuple(field.name for field in fields)
        self._nested = tuple(
            (field.name, encode)
            for field in fields
            if (encode := _encoder(hints[field.name])) is not None
        )
        self._reads = tuple(
            (field.name, _reader(hints[field.name], field.default), _absent(hints, field))
            for field in fields
        )

    def write(self, value: T) -> dict[str, Any]:
        """The JSON-able object: every field, in the dataclass's order."""
        data = {name: getattr(value, name) for name in self._names}
        for name, encode in self._nested:
            data[name] = encode(data[name])
        return data

    def read(self, data: object, where: str | None = None) -> T:
        """The value `write` wrote (JSON from Redis: untrusted in shape)."""
        where = self.where if where is None else where
        if not isinstance(data, dict):
            raise MalformedJob(f"{where} is not a JSON object but {type(data).__name__}")
        values = {}
        for name, read, absent in self._reads:
            if name in data:
                values[name] = read(data[name], where, name)
            elif absent is _REQUIRED:
                raise MalformedJob(f"{where} has no {name!r}")
            else:
                values[name] = absent
        return self.cls(**values)


def _wrong(where: str, key: str, expected: str, value: object) -> MalformedJob:
    return MalformedJob(f"{where}: {key!r} must be {expected}, not {type(value).__name__}")


def _optional(annotation: object) -> object | None:
    """X for `X | None`, else None."""
    if typing.get_origin(annotation) not in (types.UnionType, typing.Union):
        return None
    rest = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if len(rest) != 1:
        raise TypeError(f"no JSON form for {annotation}")
    inner: object = rest[0]
    return inner


def _absent(hints: dict[str, Any], field: dataclasses.Field[Any]) -> object:
    """What an absent key reads as (_REQUIRED: nothing, the job is malformed)."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        raise TypeError(f"{field.name}: no JSON form for a default_factory")
    return None if _optional(hints[field.name]) is not None else _REQUIRED


def _encoder(annotation: object) -> Callable[[Any], object] | None:
    """How to write a field's value, when it is not written as it is (None)."""
    inner = _optional(annotation)
    if inner is not None:
        encode = _encoder(inner)
        return None if encode is None else lambda value: None if value is None else encode(value)
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return Schema(annotation, "").write
    return list if typing.get_origin(annotation) is tuple else None


def _reader(annotation: object, default: object) -> Read:
    inner = _optional(annotation)
    if inner is not None:
        read = _reader(inner, dataclasses.MISSING)
        return lambda value, where, key: None if value is None else read(value, where, key)
    if annotation in _READS:
        return _READS[annotation]
    if typing.get_origin(annotation) is Literal:
        return _choice(typing.get_args(annotation), default)
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        schema = Schema(annotation, "")
        return lambda value, where, key: schema.read(value, f"{where}.{key}")
    raise TypeError(f"no JSON form for {annotation}")


def _integer(value: object, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(where, key, "an integer", value)
    return value


def _string(value: object, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise _wrong(where, key, "a string", value)
    return value


def _boolean(value: object, where: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise _wrong(where, key, "a boolean", value)
    return value


def _strings(value: object, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _wrong(where, key, "a list of strings", value)
    return tuple(value)


def _choice(choices: tuple[object, ...], default: object) -> Read:
    if default not in choices or not all(isinstance(choice, str) for choice in choices):
        raise TypeError(f"no JSON form for Literal{list(choices)} with default {default!r}")

    def read(value: object, where: str, key: str) -> object:
        if value is None:
            return default
        if not isinstance(value, str):
            raise _wrong(where, key, "a string", value)
        return value if value in choices else default

    return read


_READS: dict[object, Read] = {
    int: _integer,
    str: _string,
    bool: _boolean,
    tuple[str, ...]: _strings,
}
