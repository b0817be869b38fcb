"""The digests a run records of its inputs, which a replay must match."""

from __future__ import annotations

import asyncio
from pathlib import Path

from frognano.policy.models import EffectivePolicy
from frognano.run.digests import policy_digest, run_digests, task_digest


def test_the_task_digest_keeps_title_and_body_apart() -> None:
    assert task_digest("a", "b") == task_digest("a", "b")
    assert task_digest("a", "b") != task_digest("a b", "")
    assert task_digest("a", "b") != task_digest("a", "b ")


def test_the_policy_digest_follows_the_effective_settings() -> None:
    default = EffectivePolicy()
    assert policy_digest(default) == policy_digest(EffectivePolicy())
    stricter = default.model_copy(
        update={"agent": default.agent.model_copy(update={"max_steps": 3})}
    )
    assert policy_digest(stricter) != policy_digest(default)


def test_the_base_tree_digest_is_the_uploaded_trees(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "big.bin").write_bytes(b"\0" * 10)

    def base() -> str:
        found, tree = asyncio.run(
            run_digests("t", "b", EffectivePolicy(), tmp_path, ["ignored"], None)
        )
        assert tree.paths == {"a.py"}
        return found.base_tree_sha256

    before = base()
    (tmp_path / "ignored" / "big.bin").write_bytes(b"\1" * 10)  # left out of the upload
    assert base() == before
    (tmp_path / "a.py").write_text("x = 2\n")
    assert base() != before
