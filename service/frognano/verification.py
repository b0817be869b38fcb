"""Verifying a patch in a fresh sandbox: baseline, protected tests restored, verdict."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from frognano.policy.gate import TreeFacts
from frognano.policy.models import EffectivePolicy
from frognano.policy.paths import path_matches
from frognano.sandbox.base import Sandbox
from frognano.sandbox.paths import WORKSPACE
from frognano.verify import Verification, decide, run_tests
from frognano.workspace import (
    apply_patch,
    base_paths,
    changed_files,
    file_sizes,
    prepare,
    read_changes,
    reset,
    restore,
)


async def verify_patch(
    sandbox: Sandbox,
    repo_dir: Path,
    exclude: Collection[str],
    policy: EffectivePolicy,
    diff: bytes,
) -> tuple[Verification, TreeFacts]:
    """Test the patch on a fresh copy of the base in `sandbox`, which the agent never touched:
    nothing it left outside the patch (caches, files in its home or /tmp) can sway the result.

    1. The base, with the policy's setup, exactly as the agent got it.
    2. Baseline: the base plus only the test files the agent added, so a new test that fails
       on the base and passes with the patch counts as evidence.
    3. Verification: base + patch, with every protected test file the agent modified or
       deleted put back to its base content: an edited test never certifies its own fix.
    """
    rules = policy.verify
    base = await prepare(sandbox, repo_dir, exclude, policy.sandbox.setup)
    in_base = await base_paths(sandbox, base)
    await apply_patch(sandbox, diff)
    changes = await changed_files(sandbox, base)
    facts = TreeFacts(
        sizes=await file_sizes(sandbox, [path for status, path in changes if status != "D"]),
        base_paths=in_base,
    )
    protected = [
        path
        for status, path in changes
        if status in ("M", "T", "D")
        and path in in_base
        and path_matches(path, rules.protected_paths)
    ]
    new_tests = {
        path
        for status, path in changes
        if status == "A" and path_matches(path, rules.protected_paths)
    }

    baseline = None
    if rules.baseline:
        await restore(sandbox, base, [path for status, path in changes if status != "A"])
        await _remove(sandbox, [p for s, p in changes if s == "A" and p not in new_tests])
        baseline = await run_tests(sandbox, rules.command, rules.timeout_seconds, policy=rules)
        await reset(sandbox)
        await apply_patch(sandbox, diff)

    await restore(sandbox, base, protected)
    # Read before the tests run: they may write into the tree.
    verified = tuple(await read_changes(sandbox, base))
    effective = tuple(change.path for change in verified)
    verification = await run_tests(sandbox, rules.command, rules.timeout_seconds, policy=rules)
    comparison, verdict = decide(rules.require, baseline, verification, effective)
    return (
        Verification(
            require=rules.require,
            verification=verification,
            baseline=baseline,
            comparison=comparison,
            restored=tuple(protected),
            effective_files=effective,
            changes=verified,
            verdict=verdict,
        ),
        facts,
    )


async def _remove(sandbox: Sandbox, paths: Sequence[str]) -> None:
    if not paths:
        return
    stdin = b"".join(path.encode("utf-8", "surrogateescape") + b"\0" for path in paths)
    await sandbox.exec(
        "xargs -0 -r rm -f --", cwd=WORKSPACE, timeout=120, stdin=stdin, split_stderr=True
    )
