"""A person's push onto a branch of the fake GitHub, as `git push` would make it."""

from __future__ import annotations

import httpx

from tests.fakes.github import FakeGitHub


def app_email(fake: FakeGitHub) -> str:
    """The App's own commit e-mail address, which anyone may give a commit as its author."""
    bot = fake.bot_login
    return f"{fake._user(bot)['id']}+{bot}@users.noreply.github.com"


async def push(
    fake: FakeGitHub,
    repo: str,
    branch: str,
    on: str,
    *,
    user: str,
    author_email: str | None = None,
    path: str = "tweak.txt",
    content: str = "tweak\n",
) -> str:
    """`user` commits `path` on top of commit `on` and moves `branch` there (a fast-forward).
    `author_email`: the author the commit names (None: `user`'s own, as GitHub sets it).
    Returns the new commit's sha."""
    token = fake.add_user_token(user)
    headers = {"Authorization": f"token {token}"}
    async with httpx.AsyncClient(base_url=fake.base_url, headers=headers) as http:
        entry = {"path": path, "mode": "100644", "type": "blob", "content": content}
        tree = await http.post(f"/repos/{repo}/git/trees", json={"base_tree": on, "tree": [entry]})
        assert tree.status_code == 201, tree.text
        commit: dict[str, object] = {
            "message": "tweak",
            "tree": tree.json()["sha"],
            "parents": [on],
        }
        if author_email is not None:
            commit["author"] = {"name": user, "email": author_email}
        made = await http.post(f"/repos/{repo}/git/commits", json=commit)
        assert made.status_code == 201, made.text
        sha = str(made.json()["sha"])
        moved = await http.patch(f"/repos/{repo}/git/refs/heads/{branch}", json={"sha": sha})
        assert moved.status_code == 200, moved.text
    return sha
