"""The agent files: FrogNano's built-in list, the policy's own, and names given by symlinks."""

from __future__ import annotations

import pytest

from frognano.policy.gate.agentfiles import (
    BUILT_IN,
    agent_file_reason,
    imports,
    link_target,
    linked_names,
)
from frognano.policy.paths import check_glob

# The files the issue names, each as a path a tool reads.
NAMED = [
    "AGENTS.md", "AGENTS.override.md", "AGENT.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md",
    ".cursorrules", ".cursor/rules/style.mdc", ".windsurfrules", ".windsurf/rules/a.md",
    ".clinerules", ".clinerules/01-style.md", ".roorules", ".roo/rules/a.md",
    ".github/copilot-instructions.md", ".github/instructions/py.instructions.md",
    ".github/prompts/fix.prompt.md", ".github/chatmodes/plan.chatmode.md",
    ".github/agents/reviewer.agent.md", ".claude/settings.json", ".gemini/settings.json",
    ".codex/config.toml", ".junie/guidelines.md", ".kiro/steering/tech.md",
    ".amazonq/rules/a.md", ".continue/rules/a.md", ".continuerc.json", ".aider.conf.yml",
    "CONVENTIONS.md", ".goosehints", ".openhands/setup.sh", ".augment-guidelines", ".rules",
    ".mcp.json",
]  # fmt: skip


def reason(path: str, named: list[str] | None = None, extra: list[str] | None = None) -> str:
    found = agent_file_reason(path, named or [], extra or [])
    assert found is not None, path
    return found


@pytest.mark.parametrize("path", NAMED)
def test_every_named_file_is_an_agent_file_at_any_depth_and_in_any_case(path: str) -> None:
    for variant in (path, f"pkg/sub/{path}", path.upper(), path.swapcase()):
        assert "FrogNano's built-in agent files" in reason(variant)


def test_every_entry_is_a_valid_glob_and_says_who_reads_it() -> None:
    for pattern, who in BUILT_IN.items():
        assert check_glob(pattern) is None, pattern
        assert who, pattern
        assert not who.endswith("."), pattern  # a phrase: the finding goes on after it


@pytest.mark.parametrize(
    "path",
    ["calc.py", "README.md", "docs/AGENTS.md.orig", "MYAGENTS.md", ".github/workflows/ci.yml",
     "src/cursor/rules.py", "claude.py"],
)  # fmt: skip
def test_other_files_are_not(path: str) -> None:
    assert agent_file_reason(path, ["AGENTS.md"], []) is None


def test_the_policys_files_name_their_key() -> None:
    said = reason("Docs/ai.MD", ["docs/AI.md"])
    assert said.startswith("FrogNano's agent reads it as instructions at the start of every run")
    assert "(agent.instructions_files)" in said
    assert agent_file_reason("other/docs/AI.md", ["docs/AI.md"], []) is None  # an exact path
    assert reason("deep/ops/PROMPT.txt", extra=["ops/*.txt"]) == (
        "the policy names it an agent file (agent.protected_files: 'ops/*.txt')"
    )
    assert reason("prompts", extra=["prompts/**"]).endswith("'prompts/**')")


def test_link_targets_inside_the_tree() -> None:
    assert link_target("AGENTS.md", b"docs/guide.md") == "docs/guide.md"
    assert link_target("a/CLAUDE.md", b"../AGENTS.md") == "AGENTS.md"
    assert link_target("a/b", b"./c/../d") == "a/d"
    for outside in (b"../x", b"/etc/passwd", b"..", b"a/../../x", b"."):
        assert link_target("CLAUDE.md", outside) is None, outside


def test_linked_names_follow_folders_and_chains() -> None:
    links = {".cursor": "config/cursor", "AGENTS.md": "CLAUDE.md", "CLAUDE.md": "docs/g.md"}
    assert linked_names("config/cursor/rules/x.mdc", links) == [".cursor/rules/x.mdc"]
    assert linked_names("docs/g.md", links) == ["CLAUDE.md", "AGENTS.md"]
    assert linked_names("config/cursorish.md", links) == []
    loop = {"a": "b", "b": "a"}
    assert linked_names("a", loop) == ["b"]


def test_imports_are_words_starting_with_at_relative_to_the_file() -> None:
    text = (
        b"See @AGENTS.md and @docs/style.md, (@../shared/rules.md)\n"
        b"Mail me@example.com; my notes are in @~/notes.md; use @pytest.fixture.\n"
        b"Outside: @../../x.md and @/etc/passwd\n"
    )
    assert imports("pkg/CLAUDE.md", text) == [
        "pkg/AGENTS.md",
        "pkg/docs/style.md",
        "shared/rules.md",
        "pkg/pytest.fixture",  # no such file: the caller keeps only files of the base
    ]
