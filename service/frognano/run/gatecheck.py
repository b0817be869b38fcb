"""The gate over what FrogNano computed itself: the applied files, the base, the plan."""

from __future__ import annotations

from collections.abc import Sequence

from frognano.policy.gate.automation import workflow_runners
from frognano.policy.gate.check import Finding, TreeFacts, run_gate
from frognano.policy.gate.findings import display
from frognano.policy.models import EffectivePolicy, OnInstructionsChange
from frognano.run.apply import AppliedFile
from frognano.run.plan import Plan, Protected
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
    `on_protected_change: block` (`agent.on_instructions_change: block` for an agent file),
    else a warning saying the file is left out; and a warning per agent file the policy lets
    the patch change."""
    block = policy.verify.on_protected_change == "block"
    findings = []
    for restored in plan.restored:
        shown = display(restored.path)
        if restored.rule == "agent_file":
            findings.append(_agent_file_finding(restored, policy.agent.on_instructions_change))
            continue
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
    findings += [_agent_file_finding(kept, "allow") for kept in plan.allowed_agent_files]
    return findings


def _agent_file_finding(found: Protected, action: OnInstructionsChange) -> Finding:
    """The finding about one agent file the patch changes, under `action`."""
    shown, setting = display(found.path), f"agent.on_instructions_change: {action}"
    if action == "block":
        reason = (
            f"the patch changes {shown}, which only a person may change ({setting}), because "
            f"{found.why}: a change to it would steer every later agent run; change the code "
            "instead, or edit the policy"
        )
    elif action == "allow":
        reason = (
            f"the patch changes {shown}, and the policy lets it ({setting}), but {found.why}: "
            "review the change as instructions to every later agent run, not as code"
        )
    else:
        reason = (
            f"{shown} was put back to its base state for verification and is left out of the "
            f"pull request ({setting}), because {found.why}: a change to it would steer every "
            "later agent run"
        )
    return Finding("block" if action == "block" else "warn", "agent_file", reason, found.path)


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
