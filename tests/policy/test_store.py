"""Hot reload: a valid change takes effect whole, an invalid one changes nothing but errors."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from frognano.policy.loader import PolicyError
from frognano.policy.store import PolicyStore

BASE = "version: 1\ndefaults:\n  agent: {max_steps: 40}\n"


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def policy_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "policies"
    directory.mkdir()
    (directory / "10-base.yaml").write_text(BASE)
    return directory


def metric(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def reloads(registry: CollectorRegistry, result: str) -> float | None:
    return metric(registry, "frognano_policy_reloads_total", result=result)


def test_first_load_sets_generation_and_metrics(
    policy_dir: Path, registry: CollectorRegistry
) -> None:
    store = PolicyStore(policy_dir, registry=registry)
    assert store.generation == 1
    assert store.errors == []
    assert store.current.for_repo("a/b").agent.max_steps == 40
    assert metric(registry, "frognano_policy_generation") == 1
    assert metric(registry, "frognano_policy_errors") == 0
    assert reloads(registry, "ok") == 0
    assert reloads(registry, "invalid") == 0


def test_an_invalid_first_load_raises_and_registers_nothing(
    policy_dir: Path, registry: CollectorRegistry
) -> None:
    (policy_dir / "10-base.yaml").write_text("version: 1\nbogus: 1\n")
    with pytest.raises(PolicyError, match="bogus"):
        PolicyStore(policy_dir, registry=registry)
    assert metric(registry, "frognano_policy_generation") is None
    # The metric names are still free: a store made after the fix registers them.
    (policy_dir / "10-base.yaml").write_text(BASE)
    assert PolicyStore(policy_dir, registry=registry).generation == 1


def test_a_valid_change_takes_effect(policy_dir: Path, registry: CollectorRegistry) -> None:
    store = PolicyStore(policy_dir, registry=registry)
    first = store.current
    (policy_dir / "10-base.yaml").write_text(
        "version: 1\ndefaults:\n  agent: {max_steps: 41}\n  verify: {command: make}\n"
    )
    assert store.reload() is True
    assert store.current is not first
    assert store.current.for_repo("a/b").agent.max_steps == 41
    assert store.current.for_repo("a/b").verify.command == "make"
    assert store.generation == 2
    assert store.errors == []
    assert metric(registry, "frognano_policy_generation") == 2
    assert reloads(registry, "ok") == 1
    assert first.for_repo("a/b").agent.max_steps == 40  # holders of the old set keep it


def test_an_invalid_change_keeps_the_last_good_set(
    policy_dir: Path, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    store = PolicyStore(policy_dir, registry=registry)
    good = store.current
    # One file fine, one broken: nothing of either may apply.
    (policy_dir / "10-base.yaml").write_text("version: 1\ndefaults:\n  agent: {max_steps: 99}\n")
    (policy_dir / "20-bad.yaml").write_text(
        "version: 1\ndefaults:\n  agent:\n    max_steps: 0\n    temprature: 1\n"
    )
    with caplog.at_level(logging.ERROR, logger="frognano.policy.store"):
        assert store.reload() is False
    assert store.current is good
    assert store.current.for_repo("a/b").agent.max_steps == 40
    assert store.generation == 1
    assert [(issue.file.name, issue.line, issue.path) for issue in store.errors] == [
        ("20-bad.yaml", 4, "defaults.agent.max_steps"),
        ("20-bad.yaml", 5, "defaults.agent.temprature"),
    ]
    assert metric(registry, "frognano_policy_errors") == 2
    assert metric(registry, "frognano_policy_generation") == 1
    assert reloads(registry, "invalid") == 1
    assert reloads(registry, "ok") == 0
    assert "policy.invalid" in caplog.text
    assert f"{policy_dir / '20-bad.yaml'}:4: defaults.agent.max_steps" in caplog.text

    # Fixing it clears the errors and applies both files.
    (policy_dir / "20-bad.yaml").write_text("version: 1\ndefaults:\n  verify: {baseline: false}\n")
    assert store.reload() is True
    assert store.errors == []
    assert metric(registry, "frognano_policy_errors") == 0
    assert store.current.for_repo("a/b").agent.max_steps == 99
    assert store.current.for_repo("a/b").verify.baseline is False
    assert store.generation == 2


def test_a_file_added_then_deleted(policy_dir: Path, registry: CollectorRegistry) -> None:
    store = PolicyStore(policy_dir, registry=registry)
    (policy_dir / "20-team.yaml").write_text(
        "version: 1\nrepos:\n  - {match: acme/*, enabled: false}\n"
    )
    assert store.reload() is True
    assert store.current.for_repo("acme/api").enabled is False
    assert [path.name for path in store.current.files] == ["10-base.yaml", "20-team.yaml"]
    (policy_dir / "20-team.yaml").unlink()
    assert store.reload() is True
    assert store.current.for_repo("acme/api").enabled is True
    assert store.generation == 3


def test_deleting_every_file_keeps_the_last_good_set(
    policy_dir: Path, registry: CollectorRegistry
) -> None:
    store = PolicyStore(policy_dir, registry=registry)
    (policy_dir / "10-base.yaml").unlink()
    assert store.reload() is False
    assert store.current.for_repo("a/b").agent.max_steps == 40
    (issue,) = store.errors
    assert (issue.file, issue.line, issue.path) == (policy_dir, None, "(directory)")
    assert "FROGNANO_POLICY_DIR" in issue.message
    assert metric(registry, "frognano_policy_errors") == 1


def test_changed_sees_edits_additions_and_removals(
    policy_dir: Path, registry: CollectorRegistry
) -> None:
    store = PolicyStore(policy_dir, registry=registry)
    assert store.changed() is False
    (policy_dir / "notes.txt").write_text("not a policy")
    assert store.changed() is False
    (policy_dir / "10-base.yaml").write_text(BASE + "repos: []\n")
    assert store.changed() is True
    store.reload()
    assert store.changed() is False
    (policy_dir / "20-new.yml").write_text("version: 1\n")  # reported as an error, so watched
    assert store.changed() is True
    store.reload()
    (policy_dir / "20-new.yml").unlink()
    assert store.changed() is True


def replace(path: Path, text: str) -> None:
    """Write `text` atomically, as editors and ConfigMap updates do, so that no poll can see
    the file half-written (hidden names are neither read nor watched)."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


async def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_watch_reloads_on_change_until_cancelled(
    policy_dir: Path, registry: CollectorRegistry
) -> None:
    store = PolicyStore(policy_dir, interval=0.02, registry=registry)
    task = asyncio.create_task(store.watch())
    try:
        replace(policy_dir / "10-base.yaml", "version: 1\ndefaults:\n  agent: {top_k: 5}\n")
        await wait_until(lambda: store.generation == 2)
        assert store.current.for_repo("a/b").agent.top_k == 5
        replace(policy_dir / "10-base.yaml", "version: 1\ndefaults: {agent: {top_k: -9}}\n")
        await wait_until(lambda: bool(store.errors))
        await asyncio.sleep(0.1)  # several more polls: nothing changed, so no more attempts
        assert reloads(registry, "invalid") == 1
        assert reloads(registry, "ok") == 1
        assert store.generation == 2
    finally:
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_the_store_warns_at_load_about_a_file_name_without_nn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "default.yaml").write_text("version: 1\n")
    (tmp_path / "50-strict.yaml").write_text("version: 1\ndefaults:\n  agent: {max_steps: 40}\n")
    with caplog.at_level(logging.WARNING, logger="frognano.policy.store"):
        store = PolicyStore(tmp_path, registry=CollectorRegistry())
        assert caplog.text.count("policy.file_names") == 1
        assert f"{tmp_path / 'default.yaml'}:1: warning: (file): the name does not" in caplog.text
        assert "it applies after 50-strict.yaml" in caplog.text
        (tmp_path / "default.yaml").rename(tmp_path / "00-default.yaml")
        assert store.reload() is True
        assert caplog.text.count("policy.file_names") == 1  # the renamed set is quiet
