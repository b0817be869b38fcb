"""The shared state of the fake: the App's identity, repositories, installations, users."""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from http.server import ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.github.model import (
    DEFAULT_APP_PERMISSIONS,
    MAX_BODY,
    Recorded,
    Repo,
    Token,
    ValidationFailure,
    _error,
    _Fault,
    _node_id,
    _now_iso,
    _Request,
    _Response,
    _validation_failed,
)
from tests.fakes.github.spec import load_spec


class _State:
    """Everything the fake holds, and the helpers every operation group uses."""

    def __init__(
        self,
        *,
        app_id: int = 1,
        app_slug: str = "frognano",
        private_key_pem: bytes | None = None,
        app_permissions: dict[str, str] | None = None,
        validate_responses: bool = True,
    ) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self.app_name = app_slug.capitalize()
        self.bot_login = f"{app_slug}[bot]"
        self.app_permissions = dict(app_permissions or DEFAULT_APP_PERMISSIONS)
        if private_key_pem is None:
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            private_key_pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        self.app_private_key: bytes = private_key_pem
        # Skipping the RSA consistency check saves ~70 ms per server; a bad key still fails
        # when PyJWT verifies a signature with it.
        private = serialization.load_pem_private_key(
            private_key_pem, password=None, unsafe_skip_rsa_key_validation=True
        )
        self._public_key = private.public_key()
        self.latency: float = 0.0
        self.validate_responses = validate_responses
        self.requests: list[Recorded] = []
        self.validation_errors: list[ValidationFailure] = []
        self.response_errors: list[ValidationFailure] = []
        self.server_errors: list[str] = []  # tracebacks of bugs in the fake itself (500s)
        self.tokens: dict[str, Token] = {}
        self.clock_offset: float = 0.0
        self._spec = load_spec()
        self._lock = threading.RLock()
        self._faults: list[_Fault] = []
        self._repos: dict[str, Repo] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self._emails: dict[str, str] = {}
        self._installations: dict[int, dict[str, Any]] = {}
        self._comments: dict[int, tuple[str, int]] = {}  # comment id -> (repo, issue)
        self._download_tokens: dict[str, tuple[str, str]] = {}
        self._tarball_faults: dict[tuple[str, str], bytes] = {}  # (repo, sha) -> bytes served
        # manifest flow: code -> (what was posted, expiry); each App created from one
        self.manifest_codes: dict[str, tuple[dict[str, Any], float]] = {}
        self.created_apps: list[dict[str, Any]] = []
        self._ids = 1000
        self._created = _now_iso(time.time())
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()
        self.base_url: str = ""
        self._user(self.bot_login, kind="Bot")

    # ---- clock and lookups ----------------------------------------------------------

    def now(self) -> float:
        return time.time() + self.clock_offset

    def advance_time(self, seconds: float) -> None:
        """Move the fake's clock (token and JWT expiry) forward."""
        self.clock_offset += seconds

    def repo(self, full_name: str) -> Repo:
        with self._lock:
            return self._repos[full_name]

    # ---- internals: ids, users ------------------------------------------------------

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def _user(self, login: str, kind: str = "User") -> dict[str, Any]:
        if login not in self._users:
            uid = self._next_id()
            self._users[login] = {"id": uid, "type": kind}
            self._emails[f"{uid}+{login}@users.noreply.github.com"] = login
            self._emails[f"{login}@users.noreply.github.com"] = login
        return self._users[login]

    def _user_json(self, login: str) -> dict[str, Any]:
        info = self._user(login)
        api, web = f"{self.base_url}/users/{login}", f"https://github.com/{login}"
        return {
            "login": login,
            "id": info["id"],
            "node_id": _node_id("U", info["id"]),
            "avatar_url": f"https://avatars.githubusercontent.com/u/{info['id']}?v=4",
            "gravatar_id": "",
            "url": api,
            "html_url": web,
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": info["type"],
            "user_view_type": "public",
            "site_admin": False,
        }

    def _actor(self, req: _Request) -> str:
        ident = req.identity
        if ident.kind == "installation":
            return self.bot_login
        if ident.kind == "user" and ident.login:
            return ident.login
        raise _error(401, "Requires authentication")

    # ---- internals: answers ---------------------------------------------------------

    def _paginate(self, req: _Request, items: list[Any]) -> _Response:
        try:
            per_page = int(req.query.get("per_page", ["30"])[-1])
            page = int(req.query.get("page", ["1"])[-1])
        except ValueError:
            per_page, page = 30, 1
        per_page = max(1, min(per_page, 100))
        page = max(page, 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(items) // per_page))
        headers = {}
        if page < last:

            def link(n: int) -> str:
                q = {k: v[-1] for k, v in req.query.items()}
                q["page"] = str(n)
                return f"{self.base_url}{req.path}?{urllib.parse.urlencode(q)}"

            headers["Link"] = f'<{link(page + 1)}>; rel="next", <{link(last)}>; rel="last"'
        return _Response(200, chunk, headers)

    def _check_body_size(self, resource: str, body: str | None) -> None:
        if body is not None and len(body) > MAX_BODY:
            raise _validation_failed(
                resource, "body", "custom", f"body is too long (maximum is {MAX_BODY} characters)"
            )
