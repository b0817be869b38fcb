"""ClientCore: one repository's token and PyGithub requester, and the request plumbing."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any, Self

from github import Auth, Github

from frognano.github.retry import Transport, call

__all__ = ["ClientCore", "quote"]

_PER_PAGE = 100
_MAX_PAGES = 100
_NEXT_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


class _CurrentToken(Auth.Auth):
    """PyGithub auth whose token is swapped in before each request (tokens are re-minted)."""

    def __init__(self) -> None:
        self.value = ""

    @property
    def token_type(self) -> str:
        return "token"

    @property
    def token(self) -> str:
        return self.value

    @property
    def _masked_token(self) -> str:
        return "token (removed)"


def quote(value: str) -> str:
    """`value` as one URL path segment (a slash in it is escaped too)."""
    return urllib.parse.quote(value, safe="")


class ClientCore:
    """One repository, one narrowed token: the plumbing every operation of RepoClient uses.

    Every call goes through `retry.call` (a thread per PyGithub request, one retry policy).
    The token comes from a TokenSource awaited before each request, so a run longer than a
    token's hour keeps working; the token never leaves this process and is never logged.
    """

    def __init__(
        self,
        full_name: str,
        token: str | Callable[[], Awaitable[str]],
        *,
        transport: Transport | None = None,
        app_login: str | None = None,
        app_id: int | None = None,
    ) -> None:
        """`token` is a token or an async callable returning a valid one (GitHubApp's
        `token_source`). `app_login` (`slug[bot]`) identifies the app's own comments and
        commits; `app_id` its check runs. Without them, comments by any bot holding the
        marker and check runs of any app with the name are taken as the app's own."""
        if full_name.count("/") != 1 or not all(full_name.split("/")):
            raise ValueError(f"{full_name!r} is not owner/name")
        self.full_name = full_name
        self.owner = full_name.split("/", maxsplit=1)[0]
        self.transport = transport or Transport()
        self.app_login = app_login
        self.app_id = app_id
        self._token = token
        self._auth = _CurrentToken()
        if isinstance(token, str):
            self._auth.value = token
        self._github = Github(
            auth=self._auth,
            base_url=self.transport.base_url,
            timeout=self.transport.timeout,
            user_agent=self.transport.user_agent,
            retry=None,
            seconds_between_requests=self.transport.seconds_between_requests,
            seconds_between_writes=self.transport.seconds_between_writes,
            lazy=True,
        )
        self._requester = self._github.requester
        self._comment_ids: dict[tuple[int, str], int] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connections."""
        self._github.close()

    async def _refresh(self) -> None:
        if not isinstance(self._token, str):
            self._auth.value = await self._token()

    async def _request(
        self,
        verb: str,
        path: str,
        what: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        recover: Callable[[], Awaitable[Any]] | None = None,
    ) -> tuple[dict[str, Any], Any]:
        """`path` is relative to the repository (`/pulls`) or absolute (a pagination link).
        `recover` looks up the response data of a create that may have succeeded."""
        await self._refresh()
        url = path if path.startswith("http") else f"/repos/{self.full_name}{path}"
        requester = self._requester

        def send() -> tuple[dict[str, Any], Any]:
            return requester.requestJsonAndCheck(verb, url, parameters=params, input=body)

        lookup = recover

        async def recovered() -> tuple[dict[str, Any], Any] | None:
            found = await lookup() if lookup is not None else None
            return None if found is None else ({}, found)

        result: tuple[dict[str, Any], Any] = await call(
            send, what=what, transport=self.transport, recover=recovered if recover else None
        )
        return result

    async def _data(self, verb: str, path: str, what: str, **kwargs: Any) -> Any:
        return (await self._request(verb, path, what, **kwargs))[1]

    async def _paginate(
        self, path: str, what: str, *, params: dict[str, Any] | None = None, key: str | None = None
    ) -> list[Any]:
        """Every item of a list endpoint: follows `Link: rel="next"`, or page numbers while
        pages come back full when the server sends no Link header."""
        items: list[Any] = []
        url = path
        query: dict[str, Any] | None = {**(params or {}), "per_page": _PER_PAGE, "page": 1}
        for page in range(1, _MAX_PAGES + 1):
            headers, data = await self._request("GET", url, what, params=query)
            batch = (data or {}).get(key, []) if key else (data or [])
            items.extend(batch)
            found = _NEXT_LINK.search(headers.get("link", ""))
            if found:
                url, query = found.group(1), None
            elif "link" not in headers and len(batch) == _PER_PAGE:
                query = {**(params or {}), "per_page": _PER_PAGE, "page": page + 1}
            else:
                break
        return items

    def _mine(self, user: dict[str, Any] | None) -> bool:
        if not user:
            return False
        if self.app_login is not None:
            return bool(user.get("login") == self.app_login)
        return user.get("type") == "Bot"
