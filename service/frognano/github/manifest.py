"""GitHub's App manifest flow: the manifest, the form that posts it, the code's conversion."""

from __future__ import annotations

import html
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from frognano.errors import ConfigError, FrogNanoError

__all__ = [
    "CreatedApp",
    "ManifestError",
    "build_manifest",
    "convert_code",
    "form_page",
    "new_app_url",
    "web_url_for",
]

EXAMPLE_HOST = "frognano.example.com"
_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_TIMEOUT = 30.0


class ManifestError(FrogNanoError):
    """GitHub refused the manifest's code, or answered something that is not an App."""


@dataclass(frozen=True)
class CreatedApp:
    """What the conversion returns that FrogNano keeps (repr hides the two secrets)."""

    app_id: int
    slug: str
    html_url: str
    pem: str
    webhook_secret: str

    def __repr__(self) -> str:
        return f"CreatedApp(app_id={self.app_id}, slug={self.slug!r}, html_url={self.html_url!r})"


def web_url_for(api_url: str) -> str:
    """GitHub's web address for an API address: github.com, or a GHES host without /api/v3."""
    api = api_url.rstrip("/")
    if api == "https://api.github.com":
        return "https://github.com"
    return api.removesuffix("/api/v3")


def new_app_url(web_url: str, org: str | None, state: str) -> str:
    """Where the form posts: the user's or the organization's new-App page, with `state`."""
    base = web_url.rstrip("/")
    if org is not None:
        if not _ORG.fullmatch(org):
            raise ConfigError(f"--org {org!r} is not a GitHub organization name")
        base += f"/organizations/{org}"
    return f"{base}/settings/apps/new?" + urllib.parse.urlencode({"state": state})


def build_manifest(
    template: dict[str, Any], webhook_url: str | None, redirect_url: str, name: str | None
) -> dict[str, Any]:
    """The manifest to post: the template with the webhook, homepage and redirect set."""
    manifest: dict[str, Any] = json.loads(json.dumps(template))
    hook = manifest.setdefault("hook_attributes", {})
    if webhook_url is not None:
        parts = urllib.parse.urlsplit(webhook_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--url {webhook_url!r} is not an http:// or https:// URL")
        hook["url"] = webhook_url
        if EXAMPLE_HOST in str(manifest.get("url", "")):
            manifest["url"] = f"{parts.scheme}://{parts.netloc}"
    if EXAMPLE_HOST in str(hook.get("url", "")):
        raise ConfigError(
            f"the manifest's webhook URL is still {EXAMPLE_HOST}: pass --url "
            "https://YOUR-HOST/webhooks/github (the address GitHub reaches `frognano serve` at)"
        )
    if EXAMPLE_HOST in str(manifest.get("url", "")):
        manifest["url"] = hook["url"]
    manifest["redirect_url"] = redirect_url
    if name is not None:
        manifest["name"] = name
    return manifest


def form_page(action: str, manifest: dict[str, Any]) -> str:
    """An HTML page whose one button posts the manifest to GitHub."""
    value = html.escape(json.dumps(manifest), quote=True)
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'><title>Create the FrogNano App"
        "</title></head><body>\n<h1>Create the FrogNano GitHub App</h1>\n"
        f"<p>Creates <b>{html.escape(str(manifest.get('name', '')))}</b> with the webhook "
        f"<code>{html.escape(str(manifest['hook_attributes']['url']))}</code>.</p>\n"
        f'<form action="{html.escape(action, quote=True)}" method="post">\n'
        f'<input type="hidden" name="manifest" value="{value}">\n'
        '<button type="submit">Create the App on GitHub</button>\n</form>\n</body></html>\n'
    )


def convert_code(api_url: str, code: str) -> CreatedApp:
    """POST /app-manifests/{code}/conversions (no authentication): the new App's
    credentials. Raises ManifestError when GitHub refuses or answers without them."""
    url = f"{api_url.rstrip('/')}/app-manifests/{urllib.parse.quote(code, safe='')}/conversions"
    if not url.startswith(("https://", "http://")):  # the settings check it too
        raise ManifestError(f"the API address {api_url!r} is not an http(s) URL")
    request = urllib.request.Request(  # noqa: S310 - an http(s) URL, checked above
        url,
        data=b"",
        method="POST",
        headers={
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "frognano-app-create",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:  # noqa: S310 - see above
            body = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise ManifestError(
            f"GitHub refused the code: HTTP {exc.code} {_message(exc.read())}"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ManifestError(f"the conversion at {url} failed: {exc}") from None
    try:
        return CreatedApp(
            app_id=int(body["id"]),
            slug=str(body["slug"]),
            html_url=str(body["html_url"]),
            pem=_text(body["pem"]),
            webhook_secret=_text(body["webhook_secret"]),
        )
    except (KeyError, TypeError, ValueError):
        raise ManifestError("GitHub's answer has no App id, slug, key or webhook secret") from None


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("empty")
    return value


def _message(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("message", ""))[:200]
    except (ValueError, AttributeError):
        return ""
