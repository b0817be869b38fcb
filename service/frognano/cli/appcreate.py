"""`frognano app create`: GitHub's App manifest flow, served locally, credentials to files."""

from __future__ import annotations

import hmac
import html
import json
import os
import secrets
import shlex
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Annotated, Any

import typer

from frognano.cli.common import console, fail, root_settings, say
from frognano.cli.style import typer_app
from frognano.errors import ConfigError
from frognano.github.manifest import (
    CreatedApp,
    ManifestError,
    build_manifest,
    convert_code,
    form_page,
    new_app_url,
    web_url_for,
)

app_app = typer_app(help="Create the GitHub App.", no_args_is_help=True)

APP_ID_FILE = "app-id"
KEY_FILE = "private-key.pem"
SECRET_FILE = "webhook-secret"  # noqa: S105 - a file name, not a secret


@dataclass
class _Flow:
    """What the local server serves and what it learned."""

    page: str
    state: str
    api_url: str
    out: Path
    created: CreatedApp | None = None
    error: str | None = None
    done: bool = False
    paths: dict[str, Path] = field(default_factory=dict)


@app_app.command("create")
def create_command(  # noqa: PLR0917 - typer maps each parameter to an option
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option("--url", help="The webhook URL: https://YOUR-HOST/webhooks/github."),
    ] = None,
    org: Annotated[
        str | None, typer.Option("--org", help="Create the App in this organization.")
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", help="Folder for app-id, private-key.pem, webhook-secret.")
    ] = Path("frognano-app"),
    github_url: Annotated[
        str | None,
        typer.Option(
            "--github-url",
            help="GitHub's web address (default: from FROGNANO_GITHUB_API_URL; "
            "https://HOST for GitHub Enterprise Server).",
        ),
    ] = None,
    manifest_file: Annotated[
        Path, typer.Option("--manifest", help="The App manifest to start from.")
    ] = Path("deploy/github-app-manifest.json"),
    name: Annotated[str | None, typer.Option("--name", help="The App's name.")] = None,
    port: Annotated[
        int, typer.Option("--port", help="Local port (0: a free one).", min=0, max=65535)
    ] = 0,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for GitHub's redirect.", min=1)
    ] = 900.0,
) -> None:
    """Create the GitHub App from its manifest: serve a page on 127.0.0.1 that posts the
    manifest to GitHub, take the code GitHub redirects back with, exchange it for the App's
    id, private key and webhook secret, and write those to files (never printed)."""
    settings = root_settings(ctx)
    api_url = settings.github_api_url
    paths = {name: (out / name).absolute() for name in (APP_ID_FILE, KEY_FILE, SECRET_FILE)}
    try:
        template = _read_manifest(manifest_file)
        _refuse_existing(paths)
        server = HTTPServer(("127.0.0.1", port), _Handler)
        redirect = f"http://127.0.0.1:{server.server_address[1]}/callback"
        manifest = build_manifest(template, url, redirect, name)
        state = secrets.token_urlsafe(24)
        action = new_app_url(github_url or web_url_for(api_url), org, state)
    except ConfigError as exc:
        fail(str(exc), 2)
    except OSError as exc:
        fail(f"cannot listen on 127.0.0.1:{port}: {exc}", 2)
    flow = _Flow(form_page(action, manifest), state, api_url, out, paths=paths)
    server.flow = flow  # type: ignore[attr-defined]
    server.timeout = 0.5
    say(console(), f"Open http://127.0.0.1:{server.server_address[1]}/ in a browser signed in")
    say(console(), "to GitHub and create the App there; waiting for GitHub's redirect.")
    deadline = time.monotonic() + timeout
    try:
        while not flow.done and time.monotonic() < deadline:
            server.handle_request()
    finally:
        server.server_close()
    if flow.error is not None:
        fail(flow.error, 1)
    if flow.created is None:
        fail(f"no redirect from GitHub within {timeout:g} s", 1)
    _report(flow.created, paths)


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the manifest {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"the manifest {path} is not a JSON object")
    return data


def _refuse_existing(paths: dict[str, Path]) -> None:
    taken = [str(p) for p in paths.values() if p.exists() or p.is_symlink()]
    if taken:
        raise ConfigError(f"refusing to overwrite {', '.join(taken)}")


def _write(path: Path, text: str, mode: int) -> None:
    """Creates `path` with `mode`; never replaces a file (O_EXCL)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)


def _save(flow: _Flow, created: CreatedApp) -> None:
    flow.out.mkdir(mode=0o700, parents=True, exist_ok=True)
    _write(flow.paths[APP_ID_FILE], f"{created.app_id}\n", 0o644)
    pem = created.pem if created.pem.endswith("\n") else created.pem + "\n"
    _write(flow.paths[KEY_FILE], pem, 0o600)
    _write(flow.paths[SECRET_FILE], created.webhook_secret, 0o600)


def _report(created: CreatedApp, paths: dict[str, Path]) -> None:
    out = console()
    say(out, f"Created the App {created.slug} (id {created.app_id}): {created.html_url}")
    say(out, f"Its id, private key and webhook secret are in {paths[KEY_FILE].parent}.")
    say(out, f"Install it on your repositories: {created.html_url}/installations/new")
    say(out, "Settings for `frognano serve` and `frognano worker`:")
    say(out, f"export FROGNANO_GITHUB_APP_ID={created.app_id}")
    say(out, f"export FROGNANO_GITHUB_PRIVATE_KEY_PATH={shlex.quote(str(paths[KEY_FILE]))}")
    say(out, f"export FROGNANO_WEBHOOK_SECRET_FILE={shlex.quote(str(paths[SECRET_FILE]))}")


class _Handler(BaseHTTPRequestHandler):
    server_version = "frognano"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        flow: _Flow = self.server.flow  # type: ignore[attr-defined]
        parts = urllib.parse.urlsplit(self.path)
        if parts.path == "/":
            self._answer(200, flow.page)
            return
        if parts.path != "/callback":
            self._answer(404, "Not found.")
            return
        query = urllib.parse.parse_qs(parts.query)
        state = query.get("state", [""])[-1]
        code = query.get("code", [""])[-1]
        if not code or not hmac.compare_digest(state.encode(), flow.state.encode()):
            self._answer(400, "This is not the redirect of the App this command started.")
            return
        try:
            created = convert_code(flow.api_url, code)
            _save(flow, created)
        except ManifestError as exc:
            flow.error = str(exc)
        except OSError as exc:
            flow.error = f"cannot write the App's credentials: {exc}"
        else:
            flow.created = created
        flow.done = True
        if flow.error is not None:
            self._answer(502, f"The App could not be set up: {flow.error}")
        else:
            self._answer(
                200, "The App is created; its credentials are saved. Back to the terminal."
            )

    def _answer(self, status: int, text: str) -> None:
        body = text.encode() if text.startswith("<!doctype") else _html(text).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)


def _html(text: str) -> str:
    return f"<!doctype html>\n<html><body><p>{html.escape(text)}</p></body></html>\n"
