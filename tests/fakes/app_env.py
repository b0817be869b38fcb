"""Fixtures for tests of frognano.github against the fake GitHub server over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest

from frognano.github.auth import PUBLISH, GitHubApp, Permissions
from frognano.github.client import RepoClient
from frognano.github.retry import RetryPolicy, Transport
from tests.fakes.github import FakeGitHub

__all__ = ["app", "client", "fake", "make_client", "sleeps", "transport"]

REPO = "octo/hello"
FILES = {"README.md": b"# hello\n", "src/app.py": b"print('hello')\n", "old.txt": b"old\n"}


class Sleeps:
    """The injected sleep: records each wait instead of sleeping; `then` runs after each."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.then: Callable[[], None] | None = None

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        if self.then is not None:
            self.then()


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo(REPO, files=FILES)
        yield server
        # A malformed request body fails the test that sent it.
        assert server.validation_errors == []
        server.assert_clean()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def make_transport(fake: FakeGitHub, sleeps: Sleeps, **overrides: object) -> Transport:
    options: dict[str, object] = {
        "base_url": fake.base_url,
        "seconds_between_requests": 0,
        "seconds_between_writes": 0,
        "timeout": 5,
        "retry": RetryPolicy(attempts=4, initial_delay=0.5, budget_seconds=300),
        "sleep": sleeps,
    }
    options.update(overrides)
    return Transport(**options)  # type: ignore[arg-type]


@pytest.fixture
def transport(fake: FakeGitHub, sleeps: Sleeps) -> Transport:
    return make_transport(fake, sleeps)


@pytest.fixture
def app(fake: FakeGitHub, transport: Transport) -> Iterator[GitHubApp]:
    github_app = GitHubApp(fake.app_id, fake.app_private_key.decode(), transport=transport)
    yield github_app
    github_app.close()


MakeClient = Callable[..., Awaitable[RepoClient]]


@pytest.fixture
async def make_client(fake: FakeGitHub, app: GitHubApp) -> AsyncIterator[MakeClient]:
    """New RepoClients (a new one stands for a worker restarted after a crash)."""
    made: list[RepoClient] = []

    async def make(full_name: str = REPO, permissions: Permissions = PUBLISH) -> RepoClient:
        repo = fake.repo(full_name)
        client = await app.repo_client(repo.installation_id, full_name, repo.id, permissions)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
async def client(make_client: MakeClient) -> RepoClient:
    return await make_client()
