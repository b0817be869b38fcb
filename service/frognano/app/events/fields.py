"""Typed reads from a webhook payload: each raises Missing naming the field it lacks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frognano.github.models import is_bot

__all__ = ["Missing", "integer", "obj", "repository", "sender", "sender_id", "string", "text"]


class Missing(Exception):
    """A field the routing needs is absent or has the wrong type."""


def repository(payload: Mapping[str, Any]) -> tuple[str, int]:
    """`repository.full_name` (checked to be `owner/name`) and `repository.id`."""
    repo = obj(payload, "repository")
    full_name = string(repo, "full_name", "repository.full_name")
    if full_name.count("/") != 1 or full_name.startswith("/") or full_name.endswith("/"):
        raise Missing(f"repository.full_name {full_name!r} is not owner/name")
    return full_name, integer(repo, "id", "repository.id")


def sender(payload: Mapping[str, Any], app_login: str | None) -> tuple[str, str | None]:
    """The sender's login and whether it is a bot: None (a person), "bot" or "self"."""
    who = obj(payload, "sender")
    login = string(who, "login", "sender.login")
    if app_login is not None and login.casefold() == app_login.casefold():
        return login, "self"
    return login, "bot" if is_bot(login, who.get("type")) else None


def sender_id(payload: Mapping[str, Any]) -> int | None:
    """`sender.id`, or None when it is missing or not an integer."""
    who = payload.get("sender")
    value = who.get("id") if isinstance(who, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def sender_login(payload: Mapping[str, Any]) -> str | None:
    """`sender.login`, or None when it is missing or not a string."""
    who = payload.get("sender")
    value = who.get("login") if isinstance(who, dict) else None
    return value if isinstance(value, str) and value else None


def obj(parent: Mapping[str, Any], key: str, name: str | None = None) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise Missing(f"the payload has no {name or key} object")
    return value


def string(parent: Mapping[str, Any], key: str, name: str) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise Missing(f"the payload has no {name} string")
    return value


def integer(parent: Mapping[str, Any], key: str, name: str) -> int:
    value = parent.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise Missing(f"the payload has no {name} integer")
    return value


def text(parent: Mapping[str, Any], key: str) -> str:
    """A text field GitHub may send as null (an issue's body): "" unless it is a string."""
    value = parent.get(key)
    return value if isinstance(value, str) else ""
