"""The gate over what FrogNano computed itself: the applied files, the base, the plan."""

from __future__ import annotations

from collections.abc import Sequence

from frognano.policy.automation import workflow_runners
from frognano.policy.gate import Finding, TreeFacts, run_gate
from frognano.policy.models import EffectivePolicy
from frognano.run.apply import AppliedFile
from frognano.run.plan import Plan
from frognano.run.trees import HostTree

AUTOMATION_SUFFIXES = (".yml", ".yaml", ".sh", ".bash")
MAX_AUTOMATION_BYTES = 1024 * 1024


def automation_files(base: HostTree) -> dict[str, bytes]:
    """The base's workflows, and the actions and scripts they may name (followed in turn)."""
    files = {}
    for path, entry in base.entries.items():
        wanted = path.startswith(".github/") or path.endswith(AUTOMATION_SUFFIXES)
        if wanted and entry.kind == "file" and entry.size <= MAX_AUTOMATION_BYTES:
            files[path] = base.read(path)
    return files


def tree_facts(applied: Sequence[AppliedFile], base: HostTree) -> TreeFacts:
    """Sizes and bytes of the new files, and what the base's automation runs."""
    contents = {c.path: c.content for c in applied if c.content is not None}
    runners = workflow_runners(automation_files(base))
    return TreeFacts(
        sizes={path: len(data) for path, data in contents.items()},
        base_paths=base.paths,
        contents=contents,
        automation_paths=frozenset(runners),
        automation_runners=runners,
    )


def plan_findings(plan: Plan, policy: EffectivePolicy) -> list[Finding]:
    """One finding per file verification put back to the base: a block under
    `on_protected_change: block`, else a warning saying the file is left out."""
    block = policy.verify.on_protected_change == "block"
    findings = []
    for restored in plan.restored:
        shown = restored.path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        if block:
            reason = (
                f"the patch changes {shown}, which verification may not take from the agent: "
                f"{restored.why}; change the code instead, or edit the policy"
            )
        else:
            reason = (
                f"{shown} was put back to its base state for verification and is left out of "
                f"the pull request, because {restored.why}"
            )
        findings.append(
            Finding("block" if block else "warn", "protected_change", reason, restored.path)
        )
    return findings


def check_patch(
    diff: bytes,
    applied: Sequence[AppliedFile],
    base: HostTree,
    plan: Plan,
    policy: EffectivePolicy,
) -> list[Finding]:
    """Every gate finding of the patch, the restored files' included, sorted by path."""
    findings = run_gate(diff, tree_facts(applied, base), policy.gate)
    findings += plan_findings(plan, policy)
    unique = list(dict.fromkeys(findings))
    unique.sort(key=lambda finding: (finding.path or "", finding.kind))
    return unique
