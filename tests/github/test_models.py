"""Who counts as a bot: one rule for the webhook triggers and the review gate."""

from __future__ import annotations

import pytest

from frognano.github.models import is_bot


@pytest.mark.parametrize(
    ("login", "user_type"),
    [
        ("dependabot[bot]", "Bot"),
        ("copilot", "Bot"),  # a Bot type needs no suffix
        ("renovate[bot]", "User"),  # the suffix is enough whatever the type
        # Logins are case-insensitive on GitHub; the triggers once missed these, the review
        # gate did not.
        ("Renovate[BOT]", "User"),
        ("helper[Bot]", None),
    ],
)
def test_bots(login: str, user_type: str | None) -> None:
    assert is_bot(login, user_type)


@pytest.mark.parametrize(
    ("login", "user_type"),
    [
        ("alice", "User"),
        ("octo-org", "Organization"),
        ("alice", None),
        ("robot", "User"),  # ends in "bot", not "[bot]"
        ("bot[bot]x", "User"),
        ("[bot]alice", "User"),
        ("alice", "bot"),  # `type` is an enum GitHub always spells Bot; only logins are folded
    ],
)
def test_people(login: str, user_type: str | None) -> None:
    assert not is_bot(login, user_type)
