"""ToolBox: one run's tools over one sandbox: parse, validate, dispatch."""

from __future__ import annotations

from frognano.agent.tools.bash import BashTool
from frognano.agent.tools.common import ToolError
from frognano.agent.tools.files import FileTools
from frognano.agent.tools.glob import glob
from frognano.agent.tools.schema import TOOL_NAMES, validate
from frognano.agent.turns import ToolCall, ToolResult
from frognano.errors import SandboxError
from frognano.log import get_logger
from frognano.sandbox.base import Sandbox

__all__ = ["ToolBox"]

log = get_logger(__name__)


class ToolBox:
    """The tools of one agent run over one sandbox, with the state they keep between calls:
    Bash's working directory and what Read/Write/Edit know of each file.

    Conventions follow Claude Code's tools (harness research, sections 1 and 7). Every mistake
    of the model's comes back as `ToolResult(is_error=True)` with the text inside
    `<tool_use_error>...</tool_use_error>`; only `SandboxError` (the sandbox itself failing)
    and cancellation propagate. A Bash command that fails is not a tool error: its output ends
    with `Exit code N` (or `Command timed out after ...`) and `is_error` stays false.

    Sandbox round trips per call: Read 1 (files over 8 MiB: 2, the second reading a window of
    lines inside the sandbox); Write 1 (a compare-and-swap script); Edit 1 when the file's
    bytes are cached from an earlier Read/Write/Edit, else 2; Glob 1; Bash 1. Calls refused
    by validation or the path rules cost none.
    """

    def __init__(self, sandbox: Sandbox, *, read_before_edit: bool = True) -> None:
        self.sandbox = sandbox
        self._bash = BashTool(sandbox)
        self._files = FileTools(sandbox, read_before_edit=read_before_edit, cwd=self._get_cwd)

    def _get_cwd(self) -> str:
        return self._bash.cwd

    @property
    def cwd(self) -> str:
        """Bash's working directory: /workspace at first, then wherever the last command
        ended; also the directory Glob searches by default."""
        return self._bash.cwd

    @property
    def read_before_edit(self) -> bool:
        """Whether Write and Edit require a Read first (may be switched off mid-run)."""
        return self._files.read_before_edit

    @read_before_edit.setter
    def read_before_edit(self, value: bool) -> None:
        self._files.read_before_edit = value

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call; every mistake of the model's becomes an error result.

        Raises only SandboxError (the sandbox failed) and cancellation.
        """
        try:
            return ToolResult(await self._dispatch(call))
        except ToolError as exc:
            return ToolResult(f"<tool_use_error>{exc}</tool_use_error>", is_error=True)
        except SandboxError:
            raise
        except Exception as exc:
            # A bug here must not end the run; the model sees a failure it can route around.
            log.exception("tool.failed", tool=call.name, call_id=call.id)
            return ToolResult(
                f"<tool_use_error>Error: {call.name} failed unexpectedly "
                f"({type(exc).__name__}: {exc})</tool_use_error>",
                is_error=True,
            )

    async def _dispatch(self, call: ToolCall) -> str:
        if call.name not in TOOL_NAMES:
            raise ToolError(
                f"Error: No such tool available: {call.name}. "
                f"Available tools: {', '.join(TOOL_NAMES)}"
            )
        args = validate(call.name, call.arguments)
        if call.name == "Read":
            return await self._files.read(args["file_path"], args.get("offset"), args.get("limit"))
        if call.name == "Write":
            return await self._files.write(args["file_path"], args["content"])
        if call.name == "Edit":
            return await self._files.edit(
                args["file_path"],
                args["old_string"],
                args["new_string"],
                replace_all=args.get("replace_all", False),
            )
        if call.name == "Glob":
            return await glob(self.sandbox, args["pattern"], args.get("path"), cwd=self.cwd)
        return await self._bash.run(args["command"], args.get("timeout"))
