"""Bash: one sandbox round trip per command; the working directory persists between calls."""

from __future__ import annotations

import re
import secrets
import shlex

from frognano.agent.tools.common import ToolError
from frognano.log import get_logger
from frognano.sandbox.base import Sandbox
from frognano.sandbox.paths import WORKSPACE

log = get_logger(__name__)

DEFAULT_TIMEOUT_MS = 120_000
MIN_TIMEOUT_MS = 1_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
EXEC_OUTPUT_BYTES = 256 * 1024
"""Bytes kept by the sandbox (head and tail): always more than 15,000 characters each side."""
EMPTY_OUTPUT = "Your command ran successfully and did not produce any output."

_ENV = (
    "export PAGER=cat GIT_PAGER=cat MANPAGER=cat SYSTEMD_PAGER= GIT_TERMINAL_PROMPT=0 "
    "PIP_PROGRESS_BAR=off PIP_NO_INPUT=1 TQDM_DISABLE=1 PYTHONUNBUFFERED=1 "
    "DEBIAN_FRONTEND=noninteractive NO_COLOR=1 CLICOLOR=0"
)
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[@-Z\\-_]|\x1b[ -/][@-~]?"  # two-character escapes
)
_HEADTAIL = re.compile(r"\n\[\.\.\. (\d+) bytes of output omitted \.\.\.\]\n")


def clamp_timeout(timeout_ms: int | None) -> int:
    if timeout_ms is None:
        return DEFAULT_TIMEOUT_MS
    if timeout_ms <= 600:
        # Probably seconds (harness.md pitfall 8); clamped to one second all the same.
        log.info("tool.bash.small_timeout", timeout_ms=timeout_ms)
    return min(max(timeout_ms, MIN_TIMEOUT_MS), MAX_TIMEOUT_MS)


def format_duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:g}s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m" + (f" {rest:g}s" if rest else "")


def strip_codes(text: str) -> str:
    """ANSI escape codes removed; of carriage-return redraws, what a terminal ends up showing."""
    text = _ANSI.sub("", text)
    if "\r" not in text:
        return text
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(line.rsplit("\r", 1)[-1] for line in lines)


def clean_output(text: str) -> str:
    """`strip_codes`, then blank lines at the start and whitespace at the end trimmed."""
    return strip_codes(text).rstrip().lstrip("\n")


def cap_output(head: str, tail: str = "", dropped: int = 0, limit: int = MAX_OUTPUT_CHARS) -> str:
    """At most `limit` characters of `head` + `tail`, keeping the start and the end (cut at
    line boundaries when one is near); `dropped` counts what went missing between them
    upstream (the sandbox's own cap counts bytes; they are reported as characters)."""
    if not tail and not dropped:
        if len(head) <= limit:
            return head
        tail = head
        dropped = -len(head)  # the same text on both sides: count what neither keeps
    half = limit // 2
    near = min(2000, half // 2)  # how far to look for a line boundary
    if len(head) > half:
        cut = head.rfind("\n", 0, half + 1)
        keep = cut if cut >= max(half - near, 0) else half
        dropped += len(head) - keep
        head = head[:keep]
    if len(tail) > half:
        cut = tail.find("\n", len(tail) - half)
        keep = cut + 1 if 0 <= cut < len(tail) - half + near else len(tail) - half
        dropped += keep
        tail = tail[keep:]
    return f"{head}\n\n... [{dropped} characters truncated] ...\n\n{tail}"


class BashTool:
    """Runs commands through the sandbox and remembers the working directory they end in."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.cwd = WORKSPACE
        self._marker = f"__FROGNANO_CWD_{secrets.token_hex(8)}__"

    def _script(self, command: str) -> str:
        report = shlex.quote(f'printf "\\n%s%s\\n" {shlex.quote(self._marker)} "$PWD"')
        return (
            f"{_ENV}\n"
            f"cd -- {shlex.quote(self.cwd)} 2>/dev/null || cd {WORKSPACE}\n"
            f"trap {report} EXIT\n"
            f"eval {shlex.quote(command)}\n"
        )

    def _take_cwd(self, output: str) -> str:
        """The output without the cwd report, remembering the directory it names."""
        at = output.rfind(self._marker)
        if at < 0:
            return output
        rest = output[at + len(self._marker) :]
        directory, newline, after = rest.partition("\n")
        if directory.startswith("/") and newline:
            self.cwd = directory
        before = output[:at]
        return (before[:-1] if before.endswith("\n") else before) + after

    async def run(self, command: str, timeout_ms: int | None) -> str:
        if "\0" in command:
            raise ToolError("command must not contain NUL bytes")
        timeout = clamp_timeout(timeout_ms)
        result = await self.sandbox.exec(
            self._script(command),
            cwd="/",
            timeout=timeout / 1000,
            output_limit=EXEC_OUTPUT_BYTES,
        )
        output = self._take_cwd(result.output)
        match = _HEADTAIL.search(output) if result.truncated else None
        if match is None:
            text = cap_output(clean_output(output))
        else:
            # Trim only the outer ends: what lies at the cut counts as truncated text.
            head = strip_codes(output[: match.start()]).lstrip("\n")
            tail = strip_codes(output[match.end() :]).rstrip()
            text = cap_output(head, tail, int(match.group(1)))
        lines = [text] if text else []
        if result.timed_out:
            lines.append(f"Command timed out after {format_duration(timeout)}")
        elif result.exit_code:
            lines.append(f"Exit code {result.exit_code}")
        return "\n".join(lines) if lines else EMPTY_OUTPUT
