"""Files coding agents read as instructions or configuration: the built-in list, and the match."""

# A patch that rewrites one of these files changes no code, yet every later agent run on the
# repository (FrogNano's included, for `agent.instructions_files`) reads the change as its
# instructions: "never run the tests" planted beside a real fix outlives the fix's review.
# So they are protected like the test harness (`agent.on_instructions_change`).
#
# Matching: every entry matches below any folder (many tools read nested copies: Codex one
# AGENTS.md per folder, Claude Code the CLAUDE.md of the folders it works in) and in any
# letter case (a macOS or Windows checkout reads `.CursorRules` as `.cursorrules`). An entry
# ending in `/**` is a folder, and its own name counts too: a file or a symlink put where the
# tool looks for the folder is as much the tool's. Over-matching costs a warning on a file a
# human then adds by hand; under-matching publishes a poisoned instruction.
#
# The list is code, not policy: `agent.protected_files` can only add to it, so a policy file
# whose list replaces another (the merge rule for lists) can never shorten it.

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence

from frognano.policy.paths import path_matches_anywhere

__all__ = [
    "BUILT_IN",
    "IMPORTING",
    "MAX_IMPORT_DEPTH",
    "agent_file_reason",
    "imports",
    "link_target",
    "linked_names",
]

BUILT_IN: dict[str, str] = {
    # The cross-tool file (agents.md): Codex (one per folder, the nearest last), Cursor,
    # GitHub Copilot's coding agent, Jules, Amp, Zed, Warp, Kiro and others read it.
    "AGENTS.md": "most coding agents (Codex, Cursor, Copilot, Zed...) read it as instructions",
    # Codex reads it in place of AGENTS.md in the same folder.
    "AGENTS.override.md": "Codex reads it as instructions, in place of AGENTS.md",
    # Amp's first name for AGENTS.md; Zed still reads it.
    "AGENT.md": "Amp and Zed read it as instructions",
    # Claude Code's project memory, in every folder it works in, and the personal variant.
    "CLAUDE.md": "Claude Code reads it as instructions (its project memory)",
    "CLAUDE.local.md": "Claude Code reads it as instructions (its local project memory)",
    # Gemini CLI's context file, read hierarchically; Qwen Code (a Gemini CLI fork) names
    # its own QWEN.md; Warp's project rules; Charm Crush's context file; Amazon Q's CLI.
    "GEMINI.md": "Gemini CLI reads it as instructions (its context file)",
    "QWEN.md": "Qwen Code reads it as instructions (its context file)",
    "WARP.md": "Warp's agents read it as instructions (its project rules)",
    "CRUSH.md": "Crush reads it as instructions (its context file)",
    "AmazonQ.md": "Amazon Q Developer's CLI reads it as instructions",
    # Cursor: the legacy rules file, and .cursor/ (rules/*.mdc, mcp.json whose servers are
    # commands, environment.json whose install command its background agents run).
    ".cursorrules": "Cursor reads it as instructions (its legacy rules file)",
    ".cursor/**": "Cursor reads its rules, MCP servers and agent environment from there",
    # Windsurf: the legacy rules file and .windsurf/ (rules, workflows).
    ".windsurfrules": "Windsurf reads it as instructions (its legacy rules file)",
    ".windsurf/**": "Windsurf reads its rules and workflows from there",
    # Cline: .clinerules is a file or a folder of rules (the `/**` entry covers both), with
    # per-mode variants (.clinerules-code); Roo Code reads the same, its own .roorules(-mode)
    # and .roo/, and its custom modes (role definitions, tool permissions) from .roomodes;
    # Kilo Code is a Roo fork with .kilocode/.
    ".clinerules*/**": "Cline and Roo Code read their rules from it",
    ".roorules*": "Roo Code reads it as instructions (its rules files)",
    ".roo/**": "Roo Code reads its rules and MCP servers from there",
    ".roomodes": "Roo Code reads its custom modes (role definitions, tool permissions) from it",
    ".kilocode/**": "Kilo Code reads its rules and workflows from there",
    # GitHub Copilot: repository instructions, path-specific instructions, prompt files,
    # chat modes, custom agents, and the workflow its coding agent runs before starting.
    ".github/copilot-instructions.md": "GitHub Copilot reads it as instructions (repository-wide)",
    ".github/instructions/**": "GitHub Copilot reads path-specific instructions from there",
    ".github/prompts/**": "GitHub Copilot reads its prompt files from there",
    ".github/chatmodes/**": "GitHub Copilot reads its chat modes from there",
    ".github/agents/**": "GitHub Copilot reads its custom agents from there",
    ".github/workflows/copilot-setup-steps.{yml,yaml}": (
        "Copilot's coding agent runs these steps before it starts"
    ),
    # VS Code's MCP servers (commands it starts for its agent mode).
    ".vscode/mcp.json": "VS Code's agent mode starts the MCP servers it lists",
    # Claude Code: settings (hooks run commands, permissions), commands, agents, skills;
    # .mcp.json its project MCP servers.
    ".claude/**": "Claude Code reads its settings, hooks, commands, agents and skills there",
    ".mcp.json": "Claude Code starts the MCP servers it lists (each one a command)",
    # Gemini CLI's settings (MCP servers, tools) and commands; Gemini Code Assist's review
    # style guide; Qwen Code's settings.
    ".gemini/**": "Gemini CLI and Gemini Code Assist read their settings and guides there",
    ".qwen/**": "Qwen Code reads its settings (MCP servers, tools) from there",
    # Codex's project configuration and skills.
    ".codex/**": "Codex reads project configuration from there",
    # JetBrains Junie's guidelines.
    ".junie/**": "JetBrains Junie reads its guidelines from there",
    # Kiro: steering files (instructions), hooks (commands run on file events), specs.
    ".kiro/**": "Kiro reads its steering files, hooks and specs from there",
    # Amazon Q Developer's project rules and MCP servers.
    ".amazonq/**": "Amazon Q Developer reads its rules and MCP servers from there",
    # Continue: rules, prompts and configuration; the workspace configuration file.
    ".continue/**": "Continue reads its rules, prompts and configuration from there",
    ".continuerc.json": "Continue reads its workspace configuration from it",
    # Aider: .aider.conf.yml (files it reads into the chat, the test and lint commands it
    # runs), model settings, its ignore file and chat history; CONVENTIONS.md is the file
    # its documentation has it read as conventions.
    ".aider*": "Aider reads its configuration (files to read, test and lint commands) there",
    "CONVENTIONS.md": "Aider reads it as instructions (its conventions file)",
    # Goose's project hints.
    ".goosehints": "Goose reads it as instructions (its project hints)",
    # OpenHands: microagents (instructions) and setup.sh, run at the start of each session.
    ".openhands/**": "OpenHands reads its microagents and runs its setup script from there",
    # Augment Code's workspace guidelines and rules.
    ".augment-guidelines": "Augment Code reads it as instructions (its workspace guidelines)",
    ".augment/**": "Augment Code reads its rules from there",
    # Zed's own rules file (it also reads most of the names above).
    ".rules": "Zed reads it as instructions (its rules file)",
    # Trae's project rules; Tabnine's guidelines; OpenCode's agents, commands and config
    # (MCP servers); Crush's config; Factory's droids; Antigravity's rules and workflows;
    # Firebase Studio's AI rules (.idx/airules.md, beside the dev.nix it runs).
    ".trae/**": "Trae reads its project rules from there",
    ".tabnine/**": "Tabnine reads its guidelines from there",
    ".opencode/**": "OpenCode reads its agents and commands from there",
    "opencode.{json,jsonc}": "OpenCode reads its configuration (agents, MCP servers) from it",
    "{.,}crush.json": "Crush reads its configuration (MCP servers, context files) from it",
    ".factory/**": "Factory's droids read their definitions and commands from there",
    ".agent/**": "Antigravity reads its rules and workflows from there",
    ".idx/**": "Firebase Studio reads its AI rules and workspace setup from there",
    # What each tool may read at all: a changed ignore file shows an agent other files.
    "{.cursorignore,.cursorindexingignore,.codeiumignore,.geminiignore,.aiexclude}": (
        "a coding agent reads it to decide which files it may see"
    ),
    "{.clineignore,.rooignore,.kilocodeignore,.kiroignore}": (
        "a coding agent reads it to decide which files it may see"
    ),
    # AI reviewers read their instructions from the repository: CodeRabbit's path
    # instructions, say, decide what its review of the next pull request says.
    ".coderabbit.{yaml,yml}": "CodeRabbit's AI review reads its instructions from it",
}
"""Globs of other tools' agent files, each with who reads it (a phrase for the finding)."""


def _folded(patterns: Sequence[str]) -> list[tuple[str, str]]:
    """(lower-cased glob, the pattern as listed), a folder's own name added for `X/**`."""
    pairs = []
    for pattern in patterns:
        pairs.append((pattern.lower(), pattern))
        if pattern.endswith("/**"):
            pairs.append((pattern[:-3].lower(), pattern))
    return pairs


_BUILT_IN = _folded(list(BUILT_IN))


def _match(path: str, pairs: Sequence[tuple[str, str]]) -> str | None:
    lowered = path.lower()
    for glob, pattern in pairs:
        if path_matches_anywhere(lowered, [glob]) is not None:
            return pattern
    return None


def agent_file_reason(
    path: str, instructions_files: Sequence[str], protected_files: Sequence[str]
) -> str | None:
    """Why `path` is an agent file, in one phrase naming the rule, or None when it is not.

    `instructions_files` are the policy's `agent.instructions_files` (exact paths, any letter
    case); `protected_files` its `agent.protected_files` (globs, at any depth and in any case);
    the built-in list (`BUILT_IN`) always applies.
    """
    lowered = path.lower()
    if any(lowered == named.lower() for named in instructions_files):
        return (
            "FrogNano's agent reads it as instructions at the start of every run "
            "(agent.instructions_files), and other coding agents may too"
        )
    pattern = _match(path, _BUILT_IN)
    if pattern is not None:
        return f"{BUILT_IN[pattern]} (FrogNano's built-in agent files: {pattern!r})"
    pattern = _match(path, _folded(protected_files))
    if pattern is not None:
        return f"the policy names it an agent file (agent.protected_files: {pattern!r})"
    return None


def link_target(link: str, target: bytes) -> str | None:
    """The repository path the symlink `link` (its target bytes as stored) points to, or None
    when it points outside the tree (such a link never reaches a sandbox)."""
    text = target.decode("utf-8", "surrogateescape")
    if text.startswith("/"):
        return None
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link), text))
    if resolved in (".", "..") or resolved.startswith("../"):
        return None
    return resolved


_MAX_HOPS = 8
"""Links followed from one path back to the names that lead to it (a chain of links)."""


def linked_names(path: str, links: Mapping[str, str]) -> list[str]:
    """The other names `path` has through the base's symlinks (`links`: link -> the path it
    resolves to, from `link_target`): `AGENTS.md` for `docs/guide.md` when the base has
    `AGENTS.md -> docs/guide.md`, and `.cursor/rules/x.mdc` for `config/cursor/rules/x.mdc`
    when it has `.cursor -> config/cursor`. Chains are followed up to eight links deep."""
    found: list[str] = []
    frontier = [path]
    for _ in range(_MAX_HOPS):
        reached = []
        for name in frontier:
            for link, target in links.items():
                if name == target or name.startswith(target + "/"):
                    alias = link + name[len(target) :]
                    if alias != path and alias not in found:
                        found.append(alias)
                        reached.append(alias)
        if not reached:
            break
        frontier = reached
    return found


# Claude Code (CLAUDE.md) and Gemini CLI with its Qwen Code fork (GEMINI.md, QWEN.md) replace
# `@path` in their memory files with that file's text, recursively (Claude Code five deep):
# a file such a file imports is read as instructions as much as the file itself.
IMPORTING = frozenset({"claude.md", "claude.local.md", "gemini.md", "qwen.md"})
"""Memory files whose `@path` imports the tools expand, by lower-cased name."""
MAX_IMPORT_DEPTH = 5

# `@` at the start of a word only: `user@example.com` imports nothing.
_IMPORT = re.compile(r"(?<![^\s(])@([^\s`'\"()<>\[\]{}]+)")


def imports(path: str, text: bytes) -> list[str]:
    """The repository paths the memory file `path` imports with `@path` (relative to its
    folder), those that stay in the tree; whether each exists is for the caller to see (a
    word like `@pytest.fixture` names no file)."""
    found: list[str] = []
    for match in _IMPORT.finditer(text.decode("utf-8", "replace")):
        name = match.group(1).rstrip(".,;:!?")
        if not name or name.startswith("~"):  # the user's home, not the repository
            continue
        resolved = link_target(path, name.encode("utf-8", "surrogateescape"))
        if resolved is not None and resolved not in found:
            found.append(resolved)
    return found
