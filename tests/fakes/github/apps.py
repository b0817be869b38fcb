"""The App itself, its installations and their access tokens."""

from __future__ import annotations

import secrets
from typing import Any

from tests.fakes.github.model import (
    TOKEN_TTL,
    Repo,
    Token,
    _error,
    _node_id,
    _now_iso,
    _Request,
    _Response,
)
from tests.fakes.github.repos import _Repos


class _Apps(_Repos):
    """The App, its installations and the installation tokens they mint."""

    def create_installation_token(
        self,
        installation_id: int = 100,
        *,
        repositories: list[str] | None = None,
        permissions: dict[str, str] | None = None,
    ) -> str:
        """Mint an installation token directly (what POST .../access_tokens does)."""
        with self._lock:
            body: dict[str, Any] = {}
            if repositories is not None:
                body["repositories"] = repositories
            if permissions is not None:
                body["permissions"] = permissions
            return str(self._mint_token(installation_id, body)["token"])

    # ---- internals: tokens and JSON shapes -------------------------------------------

    def _mint_token(self, installation_id: int, body: dict[str, Any]) -> dict[str, Any]:
        inst = self._installations.get(installation_id)
        if inst is None:
            raise _error(404, "Not Found")
        repos = [self._repos[n] for n in inst["repos"]]
        ids: frozenset[int] | None = None
        if "repositories" in body or "repository_ids" in body:
            by_name = {r.name: r for r in repos}
            by_id = {r.id: r for r in repos}
            chosen: dict[int, Repo] = {}
            for name in body.get("repositories", []):
                if name not in by_name:
                    raise _error(
                        422,
                        "There is at least one repository that does not exist or is not "
                        "accessible to the parent installation.",
                    )
                chosen[by_name[name].id] = by_name[name]
            for rid in body.get("repository_ids", []):
                if rid not in by_id:
                    raise _error(
                        422,
                        "There is at least one repository that does not exist or is not "
                        "accessible to the parent installation.",
                    )
                chosen[rid] = by_id[rid]
            if len(chosen) > 500:
                raise _error(422, "Too many repositories")
            ids = frozenset(chosen)
        permissions = dict(self.app_permissions)
        if body.get("permissions"):
            permissions = {"metadata": "read"}
            for name, level in body["permissions"].items():
                have = self.app_permissions.get(name)
                if have is None or (level == "write" and have != "write"):
                    raise _error(
                        422, "The permissions requested are not granted to this installation."
                    )
                permissions[name] = level
        token = Token(
            token="ghs_" + secrets.token_urlsafe(27).replace("-", "a").replace("_", "b"),
            installation_id=installation_id,
            repository_ids=ids,
            permissions=permissions,
            expires_at=self.now() + TOKEN_TTL,
        )
        self.tokens[token.token] = token
        out: dict[str, Any] = {
            "token": token.token,
            "expires_at": _now_iso(token.expires_at),
            "permissions": permissions,
            "repository_selection": "all" if ids is None else "selected",
        }
        if ids is not None:
            out["repositories"] = [self._repo_json(r) for r in repos if r.id in ids]
        return out

    def _integration_json(self) -> dict[str, Any]:
        return {
            "id": self.app_id,
            "slug": self.app_slug,
            "node_id": _node_id("A", self.app_id),
            "client_id": f"Iv23li{self.app_id:014d}",
            "owner": self._user_json(next(iter(self._installations.values()))["account"])
            if self._installations
            else self._user_json("frognano-org"),
            "name": self.app_name,
            "description": "Drafts pull requests for labelled issues.",
            "external_url": "https://example.invalid/frognano",
            "html_url": f"https://github.com/apps/{self.app_slug}",
            "created_at": self._created,
            "updated_at": self._created,
            "permissions": dict(self.app_permissions),
            "events": [
                "issues",
                "issue_comment",
                "pull_request",
                "pull_request_review",
                "check_run",
            ],
            "installations_count": len(self._installations),
        }

    def _installation_json(self, iid: int) -> dict[str, Any]:
        inst = self._installations[iid]
        account = self._user_json(inst["account"])
        return {
            "id": iid,
            "account": account,
            "repository_selection": "selected",
            "access_tokens_url": f"{self.base_url}/app/installations/{iid}/access_tokens",
            "repositories_url": f"{self.base_url}/installation/repositories",
            "html_url": f"https://github.com/organizations/{inst['account']}/settings/installations/{iid}",
            "app_id": self.app_id,
            "app_slug": self.app_slug,
            "target_id": account["id"],
            "target_type": account["type"],
            "permissions": dict(self.app_permissions),
            "events": [
                "issues",
                "issue_comment",
                "pull_request",
                "pull_request_review",
                "check_run",
            ],
            "created_at": inst["created_at"],
            "updated_at": inst["created_at"],
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "suspended_by": None,
            "suspended_at": None,
        }

    # ---- operations: apps -------------------------------------------------------------

    def _op_apps__get_authenticated(self, req: _Request) -> _Response:
        self._require_app(req)
        return _Response(200, self._integration_json())

    def _op_apps__get_repo_installation(self, req: _Request) -> _Response:
        self._require_app(req)
        repo = self._repos.get(f"{req.params['owner']}/{req.params['repo']}")
        if repo is None:
            raise _error(404, "Not Found")
        return _Response(200, self._installation_json(repo.installation_id))

    def _op_apps__create_installation_access_token(self, req: _Request) -> _Response:
        self._require_app(req)
        iid = req.params["installation_id"]
        if not iid.isdigit():
            raise _error(404, "Not Found")
        return _Response(201, self._mint_token(int(iid), req.body or {}))

    def _op_apps__revoke_installation_access_token(self, req: _Request) -> _Response:
        if req.identity.kind != "installation" or req.identity.token is None:
            raise _error(401, "Bad credentials")
        req.identity.token.revoked = True
        return _Response(204)
