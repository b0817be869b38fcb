"""The App manifest flow: GitHub's new-App page (web) and the code's conversion (API)."""

from __future__ import annotations

import json
import re
import secrets
import urllib.parse
from typing import Any

from tests.fakes.github.apps import _Apps
from tests.fakes.github.model import _error, _Request, _Response

# The web pages the manifest form posts to (github.com, or a GHES host's root).
NEW_APP_PAGE = re.compile(r"^(?:/organizations/(?P<org>[A-Za-z0-9-]+))?/settings/apps/new$")
CODE_TTL = 3600.0  # GitHub: the code expires after one hour


class _Manifests(_Apps):
    """A signed-in user who clicks "Create GitHub App" at once, and the conversion."""

    def _new_app_page(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        raw_body: bytes,
    ) -> _Response:
        """POST of the manifest form: 302 to the manifest's redirect_url with a one-time
        code and the form's `state` (GitHub shows a confirmation page first; this user
        confirms at once). Anything else is 404/422 like GitHub's pages, as text."""
        match = NEW_APP_PAGE.match(path)
        assert match is not None
        if method != "POST":
            return _Response(404, raw=b"Not Found", headers={"Content-Type": "text/plain"})
        if not headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return _Response(422, raw=b"not a form post", headers={"Content-Type": "text/plain"})
        form = urllib.parse.parse_qs(raw_body.decode("utf-8"))
        try:
            manifest = json.loads(form["manifest"][-1])
            redirect = manifest["redirect_url"]
            hook = manifest["hook_attributes"]["url"]
        except (KeyError, IndexError, ValueError, TypeError):
            return _Response(
                422, raw=b"Invalid GitHub App configuration", headers={"Content-Type": "text/plain"}
            )
        if not isinstance(redirect, str) or not isinstance(hook, str):
            return _Response(
                422, raw=b"Invalid GitHub App configuration", headers={"Content-Type": "text/plain"}
            )
        code = secrets.token_hex(10)
        self.manifest_codes[code] = (
            {"manifest": manifest, "org": match["org"]},
            self.now() + CODE_TTL,
        )
        params = {"code": code}
        if "state" in query:
            params["state"] = query["state"][-1]
        location = redirect + ("&" if "?" in redirect else "?") + urllib.parse.urlencode(params)
        return _Response(302, headers={"Location": location, "Content-Type": "text/html"}, raw=b"")

    def _op_apps__create_from_manifest(self, req: _Request) -> _Response:
        entry = self.manifest_codes.pop(req.params["code"], None)
        if entry is None or entry[1] <= self.now():
            raise _error(404, "Not Found")
        created, _ = entry
        self.created_apps.append(created)
        manifest: dict[str, Any] = created["manifest"]
        self.app_name = str(manifest.get("name", self.app_name))
        self.app_permissions = dict(manifest.get("default_permissions", self.app_permissions))
        body = self._integration_json()
        body.update(
            {
                "client_secret": secrets.token_hex(20),
                "webhook_secret": secrets.token_hex(20),
                "pem": self.app_private_key.decode(),
            }
        )
        created["webhook_secret"] = body["webhook_secret"]
        created["client_secret"] = body["client_secret"]
        return _Response(201, body)
