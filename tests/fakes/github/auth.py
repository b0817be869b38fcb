"""Who is calling: App JWTs, installation and personal tokens, and what each may touch."""

from __future__ import annotations

import json
import secrets

import jwt

from tests.fakes.github.model import (
    NOT_ACCESSIBLE,
    PERMISSION_RANK,
    TOKEN_TTL,
    Repo,
    Token,
    _error,
    _Identity,
    _Request,
)
from tests.fakes.github.spec import _Operation
from tests.fakes.github.state import _State


class _Auth(_State):
    """Authenticates requests and decides what the caller may read or write."""

    def add_user_token(self, login: str) -> str:
        """A personal access token acting as `login` (a collaborator's role limits it)."""
        with self._lock:
            self._user(login)
            token = "ghp_" + secrets.token_hex(18)
            self.tokens[token] = Token(token, None, None, {}, self.now() + 10 * TOKEN_TTL, login)
            return token

    # ---- internals: auth --------------------------------------------------------------

    def _authenticate(self, headers: dict[str, str], op: _Operation) -> _Identity:
        auth = headers.get("authorization", "")
        scheme, _, credential = auth.partition(" ")
        scheme = scheme.lower()
        credential = credential.strip()
        if not auth:
            return _Identity("anonymous")
        if scheme not in ("bearer", "token") or not credential:
            raise _error(401, "Bad credentials")
        if credential.count(".") == 2 and not credential.startswith(("ghs_", "ghp_")):
            self._verify_jwt(credential)
            return _Identity("app")
        token = self.tokens.get(credential)
        if token is None or token.revoked or token.expires_at <= self.now():
            raise _error(401, "Bad credentials")
        if token.user is not None:
            return _Identity("user", token, token.user)
        return _Identity("installation", token, self.bot_login)

    def _verify_jwt(self, credential: str) -> None:
        try:
            header = jwt.get_unverified_header(credential)
            if header.get("alg") != "RS256":
                raise _error(401, "A JSON web token could not be decoded")
            # Only the signature through PyJWT: its claim checks insist on a string `iss`,
            # and GitHub accepts the App id as a number too. Claims are checked below.
            payload = jwt.PyJWS().decode(
                credential,
                self._public_key,  # type: ignore[arg-type]
                algorithms=["RS256"],
            )
            claims = json.loads(payload)
            if not isinstance(claims, dict):
                raise _error(401, "A JSON web token could not be decoded")
        except (jwt.PyJWTError, ValueError) as exc:
            raise _error(401, "A JSON web token could not be decoded") from exc
        if str(claims.get("iss")) != str(self.app_id):
            raise _error(401, f"Integration not found (iss {claims.get('iss')!r})")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int | float) or not isinstance(exp, int | float):
            raise _error(401, "'Issued at' and 'Expiration time' claims are required")
        now = self.now()
        if exp - iat > 600:
            raise _error(
                401,
                "'Expiration time' claim ('exp') is too far in the future",
            )
        if exp <= now:
            raise _error(
                401,
                "'Expiration time' claim ('exp') must be a numeric value representing the "
                "future time at which the assertion expires",
            )
        if iat > now + 60:
            raise _error(
                401,
                "'Issued at' claim ('iat') must be an Integer representing the time that the "
                "assertion was issued",
            )

    def _require_app(self, req: _Request) -> None:
        if req.identity.kind != "app":
            raise _error(
                401,
                "A JSON web token could not be decoded"
                if req.identity.kind != "anonymous"
                else "Requires authentication",
            )

    def _require_installation(self, req: _Request) -> None:
        if req.identity.kind == "user":
            raise _error(403, "You must authenticate via a GitHub App.")

    def _access(self, req: _Request, permission: str, level: str) -> Repo:
        """The request's repo if the caller may `level` ("read"/"write") `permission` on it."""
        full = f"{req.params['owner']}/{req.params['repo']}"
        repo = self._repos.get(full)
        ident = req.identity
        if repo is None:
            raise _error(404, "Not Found")
        if ident.kind == "anonymous":
            if repo.private:
                raise _error(404, "Not Found")
            if level != "read":
                raise _error(401, "Requires authentication")
            return repo
        if ident.kind == "app":
            raise _error(
                403,
                "A JSON web token cannot be used here: this endpoint needs an installation "
                "access token",
            )
        token = ident.token
        assert token is not None
        if ident.kind == "user":
            role = repo.collaborators.get(token.user or "", {}).get("permission", "none")
            if repo.private and role == "none":
                raise _error(404, "Not Found")
            if level == "write" and PERMISSION_RANK[role] < PERMISSION_RANK["triage"]:
                raise _error(403, "Must have push access to this repository.")
            if level == "write" and permission == "contents" and PERMISSION_RANK[role] < 3:
                raise _error(403, "Must have push access to this repository.")
            return repo
        if token.installation_id != repo.installation_id or (
            token.repository_ids is not None and repo.id not in token.repository_ids
        ):
            raise _error(404, "Not Found")
        perms = permission.split("|")
        granted = [token.permissions.get(p, "none") for p in perms]
        ok = (
            any(g == "write" for g in granted)
            if level == "write"
            else any(g in ("read", "write") for g in granted)
        )
        if not ok:
            raise _error(403, NOT_ACCESSIBLE)
        return repo
