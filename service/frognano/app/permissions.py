"""Who may ask FrogNano for something: a person's role read from GitHub against the policy's."""

# Every decision about whom to serve (a label, a command, a follow-up, a retry queued behind
# someone else's run) reads the person's permission through the collaborator-permission API
# when the worker acts: a webhook says who acted, never what they may do.

from __future__ import annotations

from frognano.github.client import RepoClient
from frognano.policy.models import Permission

__all__ = ["PERMISSION_RANK", "role_at_least"]

PERMISSION_RANK = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}


async def role_at_least(client: RepoClient, login: str, least: Permission) -> tuple[bool, str]:
    """Whether `login` has at least `least` on the client's repository, and the role read."""
    role = await client.permission(login)
    return PERMISSION_RANK.get(role, 0) >= PERMISSION_RANK[least], role
