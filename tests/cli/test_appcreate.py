"""`frognano app create`: the manifest flow end to end against the fake GitHub, over HTTP."""

from __future__ import annotations

import html.parser
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from frognano.errors import ConfigError
from frognano.github.manifest import (
    ManifestError,
    build_manifest,
    convert_code,
    new_app_url,
    web_url_for,
)
from frognano.settings import load_settings
from tests.fakes.github import FakeGitHub

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "github-app-manifest.json"
HOOK = "https://frognano.acme.test/webhooks/github"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server
        server.assert_clean()


class _Form(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.action = values["action"]
        elif tag == "input":
            self.fields[values["name"]] = values["value"]


def _start(fake: FakeGitHub, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env.update(FROGNANO_GITHUB_API_URL=fake.base_url, PYTHONUNBUFFERED="1", COLUMNS="200")
    command = [sys.executable, "-m", "frognano", "app", "create", "--manifest", str(MANIFEST)]
    return subprocess.Popen(
        [*command, "--github-url", fake.base_url, "--timeout", "60", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _page_url(proc: subprocess.Popen[str]) -> tuple[str, list[str]]:
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        if found:
            return found[0], seen
    raise AssertionError(f"no local address printed: {seen} {proc.stderr and proc.stderr.read()}")


def test_creates_the_app_and_writes_its_credentials(fake: FakeGitHub, tmp_path: Path) -> None:
    out = tmp_path / "creds"
    proc = _start(fake, "--url", HOOK, "--out", str(out), "--org", "acme")
    try:
        page_url, printed = _page_url(proc)
        with httpx.Client(timeout=10) as browser:
            page = browser.get(page_url)
            assert page.status_code == 200
            form = _Form()
            form.feed(page.text)
            assert form.action.startswith(f"{fake.base_url}/organizations/acme/settings/apps/new?")
            state = httpx.URL(form.action).params["state"]
            posted = json.loads(form.fields["manifest"])
            assert posted["hook_attributes"]["url"] == HOOK
            assert posted["redirect_url"] == page_url + "callback"
            # A redirect that does not carry this command's state is refused; it keeps waiting.
            stray = browser.get(page_url + "callback", params={"code": "x", "state": "forged"})
            assert stray.status_code == 400
            # The browser posts the form; GitHub redirects back with the code.
            github = browser.post(form.action, data={"manifest": form.fields["manifest"]})
            assert github.status_code == 302
            back = httpx.URL(github.headers["location"])
            assert back.params["state"] == state
            done = browser.get(back)
            assert done.status_code == 200
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert len(fake.requests_to("POST", r"^/app-manifests/")) == 1
    assert len(fake.created_apps) == 1
    created = fake.created_apps[0]
    template = json.loads(MANIFEST.read_text())
    assert created["org"] == "acme"
    assert created["manifest"]["default_permissions"] == template["default_permissions"]
    assert created["manifest"]["default_events"] == template["default_events"]
    assert created["manifest"]["url"] == "https://frognano.acme.test"
    key, secret, app_id = out / "private-key.pem", out / "webhook-secret", out / "app-id"
    assert key.read_bytes() == fake.app_private_key
    assert secret.read_text() == created["webhook_secret"]
    assert app_id.read_text().strip() == str(fake.app_id)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    text = "".join(printed) + stdout + stderr
    for leaked in (created["webhook_secret"], created["client_secret"], "PRIVATE KEY"):
        assert leaked not in text
    exports = dict(re.findall(r"^export (FROGNANO_\w+)=(\S+)$", text, re.MULTILINE))
    assert exports == {
        "FROGNANO_GITHUB_APP_ID": str(fake.app_id),
        "FROGNANO_GITHUB_PRIVATE_KEY_PATH": str(key),
        "FROGNANO_WEBHOOK_SECRET_FILE": str(secret),
    }


def test_the_exported_settings_load(
    fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the files hold is what the settings accept (the App id, the PEM, the secret)."""
    (tmp_path / "private-key.pem").write_bytes(fake.app_private_key)
    (tmp_path / "webhook-secret").write_text("s3cret")
    monkeypatch.setenv("FROGNANO_GITHUB_APP_ID", str(fake.app_id))
    monkeypatch.setenv("FROGNANO_GITHUB_PRIVATE_KEY_PATH", str(tmp_path / "private-key.pem"))
    monkeypatch.setenv("FROGNANO_WEBHOOK_SECRET_FILE", str(tmp_path / "webhook-secret"))
    settings = load_settings()
    assert settings.github_app_id == fake.app_id
    assert settings.webhook_secret is not None
    assert settings.webhook_secret.get_secret_value() == "s3cret"


def test_refuses_to_overwrite_existing_files(fake: FakeGitHub, tmp_path: Path) -> None:
    (tmp_path / "webhook-secret").write_text("keep me")
    proc = _start(fake, "--url", HOOK, "--out", str(tmp_path))
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "refusing to overwrite" in stderr
    assert "webhook-secret" in stderr
    assert (tmp_path / "webhook-secret").read_text() == "keep me"
    assert not (tmp_path / "private-key.pem").exists()


def test_a_manifest_still_on_the_example_host_needs_url(fake: FakeGitHub, tmp_path: Path) -> None:
    proc = _start(fake, "--out", str(tmp_path))
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "--url" in stderr


def test_a_code_converts_once(fake: FakeGitHub) -> None:
    action = new_app_url(fake.base_url, None, "st")
    manifest = build_manifest(json.loads(MANIFEST.read_text()), HOOK, "http://127.0.0.1:9/cb", None)
    github = httpx.post(action, data={"manifest": json.dumps(manifest)})
    assert github.status_code == 302
    back = httpx.URL(github.headers["location"])
    assert str(back).startswith("http://127.0.0.1:9/cb?")
    assert back.params["state"] == "st"
    created = convert_code(fake.base_url, back.params["code"])
    assert (created.app_id, created.slug) == (fake.app_id, fake.app_slug)
    assert created.pem not in repr(created)
    assert created.webhook_secret not in repr(created)
    with pytest.raises(ManifestError, match="HTTP 404"):
        convert_code(fake.base_url, back.params["code"])


def test_web_addresses() -> None:
    assert web_url_for("https://api.github.com") == "https://github.com"
    assert web_url_for("https://ghe.acme.test/api/v3") == "https://ghe.acme.test"
    assert new_app_url("https://github.com", None, "a b") == (
        "https://github.com/settings/apps/new?state=a+b"
    )
    assert new_app_url("https://ghe.acme.test/", "acme", "s").startswith(
        "https://ghe.acme.test/organizations/acme/settings/apps/new?"
    )
    with pytest.raises(ConfigError):
        new_app_url("https://github.com", "../evil", "s")
    with pytest.raises(ConfigError):
        build_manifest({"hook_attributes": {"url": HOOK}}, "ftp://x", "http://127.0.0.1/", None)


def test_a_refused_code_writes_nothing(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.fail_next("POST", r"^/app-manifests/", status=404, body={"message": "Not Found"})
    proc = _start(fake, "--url", HOOK, "--out", str(tmp_path / "creds"))
    try:
        page_url, _ = _page_url(proc)
        with httpx.Client(timeout=10) as browser:
            form = _Form()
            form.feed(browser.get(page_url).text)
            github = browser.post(form.action, data={"manifest": form.fields["manifest"]})
            done = browser.get(github.headers["location"])
            assert done.status_code == 502
            assert "HTTP 404" in done.text
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert "GitHub refused the code: HTTP 404 Not Found" in stderr
    assert not (tmp_path / "creds").exists()


def test_no_redirect_in_time_fails(fake: FakeGitHub, tmp_path: Path) -> None:
    proc = _start(fake, "--url", HOOK, "--out", str(tmp_path), "--timeout", "1")
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "no redirect from GitHub within 1 s" in stderr
    assert list(tmp_path.iterdir()) == []
