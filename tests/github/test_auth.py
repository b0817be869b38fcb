"""App authentication against the fake GitHub: JWT, narrowed installation tokens, the cache."""

from __future__ import annotations

import time

import pytest
from pydantic import SecretStr

from frognano.errors import ConfigError
from frognano.github.auth import ACKNOWLEDGE, FETCH, PUBLISH, GitHubApp
from frognano.github.client import RepoClient
from frognano.github.errors import GitHubForbidden, GitHubNotFound, GitHubRequestError
from frognano.github.retry import Transport
from frognano.settings import Settings
from tests.fakes.app_env import *  # noqa: F403 (the fixtures)
from tests.fakes.app_env import (
    REPO,
    MakeClient,
    Sleeps,
    make_transport,
)
from tests.fakes.github import FakeGitHub


def test_missing_app_settings_name_the_variables() -> None:
    settings = Settings(github_app_id=None, github_private_key=None)
    with pytest.raises(ConfigError) as info:
        GitHubApp.from_settings(settings)
    assert "FROGNANO_GITHUB_APP_ID" in str(info.value)
    assert "FROGNANO_GITHUB_PRIVATE_KEY_PATH" in str(info.value)
    with pytest.raises(ConfigError, match="FROGNANO_GITHUB_PRIVATE_KEY "):
        GitHubApp.from_settings(Settings(github_app_id=7, github_private_key=None))


def test_an_unusable_private_key_is_a_config_error() -> None:
    bad = "-----BEGIN RSA PRIVATE KEY-----\nnot a key\n-----END RSA PRIVATE KEY-----\n"
    with pytest.raises(ConfigError, match="FROGNANO_GITHUB_PRIVATE_KEY is not a usable"):
        GitHubApp(7, bad)


async def test_from_settings_uses_the_api_url_and_the_jwt_is_accepted(fake: FakeGitHub) -> None:
    settings = Settings(
        github_app_id=fake.app_id,
        github_private_key=SecretStr(fake.app_private_key.decode()),
        github_api_url=fake.base_url,
    )
    github_app = GitHubApp.from_settings(settings)
    try:
        assert await github_app.app_login() == "frognano[bot]"
        assert await github_app.installation_id(REPO) == fake.repo(REPO).installation_id
    finally:
        github_app.close()
    jwt_requests = fake.requests_to("GET", r"^/app$")
    assert jwt_requests[0].headers["authorization"].startswith("Bearer ")
    assert jwt_requests[0].status == 200


async def test_token_is_narrowed_to_one_repository_and_the_stage_permissions(
    fake: FakeGitHub, app: GitHubApp, make_client: MakeClient, transport: Transport
) -> None:
    fake.add_repo("octo/other", files={"x.txt": b"x\n"})  # same installation
    repo = fake.repo(REPO)
    token = await app.token(repo.installation_id, repo.id, FETCH)
    minted = fake.requests_to("POST", r"/access_tokens$")[-1]
    assert minted.json == {"repository_ids": [repo.id], "permissions": dict(FETCH)}
    assert "ghs_" in token.token
    assert token.token not in repr(token)

    async with RepoClient(REPO, token.token, transport=transport) as own:
        assert (await own.default_branch())[0] == "main"
    async with RepoClient("octo/other", token.token, transport=transport) as other:
        with pytest.raises(GitHubNotFound, match="installed on the repository"):
            await other.default_branch()

    reader = await make_client(REPO, FETCH)
    fake.add_issue(REPO, 1, "Bug", "It breaks")
    with pytest.raises(GitHubForbidden, match="Resource not accessible by integration"):
        await reader.upsert_status_comment(1, "<!-- m -->", "hello")


async def test_cached_token_is_reused_then_reminted_before_expiry_and_dropped(
    fake: FakeGitHub, sleeps: Sleeps
) -> None:
    offset = [0.0]
    transport = make_transport(fake, sleeps, wall_clock=lambda: time.time() + offset[0])
    github_app = GitHubApp(fake.app_id, fake.app_private_key.decode(), transport=transport)
    repo = fake.repo(REPO)
    try:
        first = await github_app.token(repo.installation_id, repo.id, ACKNOWLEDGE)
        again = await github_app.token(repo.installation_id, repo.id, ACKNOWLEDGE)
        assert again is first
        assert len(fake.requests_to("POST", r"/access_tokens$")) == 1

        other = await github_app.token(repo.installation_id, repo.id, PUBLISH)
        assert other.token != first.token
        assert len(fake.requests_to("POST", r"/access_tokens$")) == 2

        offset[0] = 3600 - 299  # inside the 5-minute margin
        renewed = await github_app.token(repo.installation_id, repo.id, ACKNOWLEDGE)
        assert renewed.token != first.token
        assert len(fake.requests_to("POST", r"/access_tokens$")) == 3
        offset[0] = 0.0  # the fake mints on its own clock: the new token has its full hour

        # A client built on the token source follows the renewal.
        source = github_app.token_source(repo.installation_id, repo.id, ACKNOWLEDGE)
        assert await source() == renewed.token

        assert github_app.drop(repo.installation_id) == 2
        assert github_app.drop(repo.installation_id) == 0
        assert (await source()) not in (first.token, renewed.token)
        assert len(fake.requests_to("POST", r"/access_tokens$")) == 4
    finally:
        github_app.close()


async def test_a_repository_outside_the_installation_is_refused(
    fake: FakeGitHub, app: GitHubApp
) -> None:
    stranger = fake.add_repo("elsewhere/repo", files={"a": b"a"}, installation_id=200)
    with pytest.raises(GitHubRequestError, match="not accessible to the parent installation"):
        await app.token(100, stranger.id, FETCH)
