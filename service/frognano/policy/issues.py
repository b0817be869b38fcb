"""What is wrong with the policy files: one `PolicyIssue` per problem, all in one PolicyError."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from frognano.errors import ConfigError

__all__ = ["PolicyError", "PolicyIssue"]


@dataclass(frozen=True)
class PolicyIssue:
    """One problem at one place: `FILE:LINE: path.to.key: message`."""

    file: Path
    line: int | None
    """1-based line of the key (or list item) at fault; 1 for problems of the whole file;
    None for problems of the directory (`file` is then the directory)."""
    path: str
    """Dotted key path with 0-based list indexes (`repos[1].verify.command`); `(file)` for the
    file as a whole, `(yaml)` for syntax errors, `(directory)` for the directory."""
    message: str
    warning: bool = False
    """A warning (`FILE:LINE: warning: key: message`) leaves the files valid."""

    def __str__(self) -> str:
        where = str(self.file) if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {'warning: ' if self.warning else ''}{self.path}: {self.message}"


class PolicyError(ConfigError):
    """The policy files are invalid; `issues` lists every problem found, in file order."""

    def __init__(self, issues: Iterable[PolicyIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(map(str, self.issues)))
