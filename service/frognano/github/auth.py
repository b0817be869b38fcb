"""GitHub App authentication: the App's JWT, and installation tokens narrowed per run."""

# A token is minted for ONE repository (`repository_ids`) and only the permissions a stage
# needs (the presets below), through PyGithub's requester since PyGithub cannot narrow by
# repository. Tokens are cached per (installation, repository, permissions) and re-minted
# `refresh_margin` seconds before they expire (GitHub gives them an hour). `drop` forgets an
# installation's tokens when an `installation` event says it changed. GitHub Enterprise Server
# works through the base URL (`https://HOST/api/v3`). Tokens are never logged.

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from github import Auth, GithubIntegration

from frognano.errors import ConfigError
from frognano.github.client import RepoClient
from frognano.github.errors import GitHubError
from frognano.github.retry import Transport, call
from frognano.log import get_logger
from frognano.settings import Settings

__all__ = [
    "ACKNOWLEDGE",
    "FETCH",
    "PUBLISH",
    "REVIEW_GATE",
    "GitHubApp",
    "InstallationToken",
    "Permissions",
    "TokenSource",
]

log = get_logger(__name__)

Permissions = Mapping[str, str]
TokenSource = Callable[[], Awaitable[str]]

ACKNOWLEDGE: Permissions = {"metadata": "read", "issues": "write"}
"""Authorise the labeller, react, and keep the status comment up to date."""
FETCH: Permissions = {"metadata": "read", "contents": "read"}
"""Download the base commit."""
PUBLISH: Permissions = {
    "metadata": "read",
    "contents": "write",
    "pull_requests": "write",
    "issues": "write",
    "checks": "write",
}
"""Commit, branch, draft pull request, labels, reviewers, check runs, status comment."""
REVIEW_GATE: Permissions = {"metadata": "read", "pull_requests": "read", "checks": "write"}
"""Read reviews and turn the human-review check green."""

_CacheKey = tuple[int, int, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class InstallationToken:
    """An installation token; `token` is kept out of repr so it cannot reach a log line."""

    token: str = field(repr=False)
    expires_at: float
    """Epoch seconds."""
    installation_id: int
    repository_id: int
    permissions: dict[str, str]


class GitHubApp:
    """The App itself: JWT requests and a cache of narrowed installation tokens."""

    def __init__(
        self,
        app_id: int | str,
        private_key: str,
        *,
        transport: Transport | None = None,
        refresh_margin: float = 300.0,
    ) -> None:
        self.app_id = app_id
        self.transport = transport or Transport()
        self.refresh_margin = refresh_margin
        auth = Auth.AppAuth(app_id, private_key)
        try:
            auth.create_jwt()
        except Exception as exc:
            raise ConfigError(
                "FROGNANO_GITHUB_PRIVATE_KEY is not a usable RSA private key for the App "
                f"({type(exc).__name__}); download a new one from the App's settings page"
            ) from None
        self._integration = GithubIntegration(
            auth=auth,
            base_url=self.transport.base_url,
            timeout=self.transport.timeout,
            user_agent=self.transport.user_agent,
            retry=None,
            seconds_between_requests=self.transport.seconds_between_requests,
            seconds_between_writes=self.transport.seconds_between_writes,
        )
        self._tokens: dict[_CacheKey, InstallationToken] = {}
        self._locks: dict[_CacheKey, asyncio.Lock] = {}
        self._app_login: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings, *, transport: Transport | None = None) -> GitHubApp:
        """The App configured by `settings`, or ConfigError naming what is missing."""
        missing = []
        if settings.github_app_id is None:
            missing.append("FROGNANO_GITHUB_APP_ID")
        if settings.github_private_key is None:
            missing.append("FROGNANO_GITHUB_PRIVATE_KEY (or FROGNANO_GITHUB_PRIVATE_KEY_PATH)")
        if settings.github_app_id is None or settings.github_private_key is None:
            raise ConfigError(
                f"the GitHub App is not configured: set {' and '.join(missing)} "
                "(the App's settings page shows its id and generates private keys)"
            )
        if transport is None:
            transport = Transport(base_url=settings.github_api_url)
        return cls(
            settings.github_app_id,
            settings.github_private_key.get_secret_value(),
            transport=transport,
        )

    def close(self) -> None:
        """Close the App's HTTP connections."""
        self._integration.close()

    async def _app_request(self, verb: str, path: str, what: str, body: Any = None) -> Any:
        requester = self._integration.requester
        _headers, data = await call(
            lambda: requester.requestJsonAndCheck(verb, path, input=body),
            what=what,
            transport=self.transport,
        )
        return data

    async def app_login(self) -> str:
        """The login of the App's bot user (`<slug>[bot]`), which authors its commits and
        comments; fetched once with the JWT."""
        if self._app_login is None:
            data = await self._app_request("GET", "/app", "get the App (JWT)")
            self._app_login = f"{data['slug']}[bot]"
        return self._app_login

    async def installation_id(self, full_name: str) -> int:
        """The id of the App's installation on repository `owner/name`."""
        data = await self._app_request(
            "GET", f"/repos/{full_name}/installation", f"find the App's installation on {full_name}"
        )
        return int(data["id"])

    async def token(
        self, installation_id: int, repository_id: int, permissions: Permissions
    ) -> InstallationToken:
        """A token for one repository with exactly `permissions`, cached until it is
        `refresh_margin` seconds from expiry."""
        key: _CacheKey = (installation_id, repository_id, tuple(sorted(permissions.items())))
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(key)
            now = self.transport.wall_clock()
            if cached is not None and cached.expires_at - self.refresh_margin > now:
                return cached
            minted = await self._mint(installation_id, repository_id, permissions)
            self._tokens[key] = minted
            return minted

    async def _mint(
        self, installation_id: int, repository_id: int, permissions: Permissions
    ) -> InstallationToken:
        body = {"repository_ids": [repository_id], "permissions": dict(permissions)}
        data = await self._app_request(
            "POST",
            f"/app/installations/{installation_id}/access_tokens",
            f"mint a token for repository {repository_id} of installation {installation_id}",
            body,
        )
        repositories = data.get("repositories")
        if repositories is not None and [r.get("id") for r in repositories] != [repository_id]:
            raise GitHubError(
                f"GitHub minted a token for repositories {[r.get('id') for r in repositories]} "
                f"instead of only {repository_id}; refusing to use it"
            )
        expires_at = datetime.fromisoformat(str(data["expires_at"])).timestamp()
        granted = {str(k): str(v) for k, v in (data.get("permissions") or {}).items()}
        log.info(
            "github.token_minted",
            installation_id=installation_id,
            repository_id=repository_id,
            permissions=granted,
            expires_in_seconds=round(expires_at - self.transport.wall_clock()),
        )
        return InstallationToken(
            token=str(data["token"]),
            expires_at=expires_at,
            installation_id=installation_id,
            repository_id=repository_id,
            permissions=granted,
        )

    def token_source(
        self, installation_id: int, repository_id: int, permissions: Permissions
    ) -> TokenSource:
        """An async callable giving a valid token each time it is awaited (re-minted as needed)."""

        async def current() -> str:
            return (await self.token(installation_id, repository_id, permissions)).token

        return current

    def drop(self, installation_id: int) -> int:
        """Forget every cached token of an installation (deleted, suspended, repositories or
        permissions changed); return how many were forgotten."""
        keys = [key for key in self._tokens if key[0] == installation_id]
        for key in keys:
            del self._tokens[key]
        if keys:
            log.info(
                "github.tokens_dropped",
                installation_id=installation_id,
                count=len(keys),
            )
        return len(keys)

    async def repo_client(
        self,
        installation_id: int,
        full_name: str,
        repository_id: int,
        permissions: Permissions,
    ) -> RepoClient:
        """A RepoClient for `owner/name` whose token is narrowed to it and to `permissions`."""
        app_login = await self.app_login()
        return RepoClient(
            full_name,
            self.token_source(installation_id, repository_id, permissions),
            transport=self.transport,
            app_login=app_login,
            app_id=int(self.app_id) if str(self.app_id).isdigit() else None,
        )
