"""A throwaway git repository that makes diffs exactly as production does (`collect_patch`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from frognano.policy.gate.automation import workflow_runners
from frognano.policy.gate.check import TreeFacts

DIFF_FLAGS = ("--cached", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames")
_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}


class GitRepo:
    """Write the base, `commit_base()`, change the tree, then read `diff()` and `facts()`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.base = ""
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q")

    def git(self, *args: str) -> bytes:
        return subprocess.run(
            ["git", "-c", "core.autocrlf=false", *args],
            cwd=self.root,
            env=_ENV,
            capture_output=True,
            check=True,
        ).stdout

    def write(self, path: str | bytes, content: str | bytes = "", executable: bool = False) -> None:
        target = Path(os.fsdecode(os.path.join(os.fsencode(self.root), os.fsencode(path))))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
        if executable:
            target.chmod(0o755)

    def path(self, path: str) -> Path:
        return self.root / path

    def commit_base(self) -> str:
        self.git("add", "--all", "--force")
        self.git("commit", "-q", "--allow-empty", "-m", "base")
        self.base = self.git("rev-parse", "HEAD").decode().strip()
        return self.base

    def stage(self) -> None:
        self.git("add", "--all")

    def diff(self, *extra: str, stage: bool = True) -> bytes:
        if stage:
            self.stage()
        return self.git("diff", *DIFF_FLAGS, "--binary", *extra, self.base)

    def numstat(self) -> list[tuple[str, str, str]]:
        self.stage()
        out = self.git("diff", *DIFF_FLAGS, "--numstat", "-z", self.base)
        rows = []
        for record in out.split(b"\0"):
            if record:
                added, removed, path = record.split(b"\t", 2)
                rows.append((added.decode(), removed.decode(), os.fsdecode(path)))
        return rows

    def facts(self, stage: bool = True) -> TreeFacts:
        """What production tells the gate: sizes (lstat, as `workspace.file_sizes`) and bytes
        (a symlink's target) of the added and modified files, the paths of the base tree,
        decoded as the gate decodes paths, and what the base's workflows run."""
        if stage:
            self.stage()
        changed = self.git("diff", *DIFF_FLAGS, "--name-only", "-z", "--diff-filter=AMT", self.base)
        sizes = {}
        contents = {}
        for raw in changed.split(b"\0"):
            if raw:
                path = os.fsdecode(raw)
                full = os.path.join(os.fsencode(self.root), raw)
                if os.path.islink(full):
                    contents[path] = os.readlink(full)
                elif os.path.isfile(full):
                    contents[path] = Path(os.fsdecode(full)).read_bytes()
                if os.path.lexists(full):
                    sizes[path] = os.lstat(full).st_size
        listing = self.git("ls-tree", "-r", "-z", "--name-only", self.base)
        base = frozenset(os.fsdecode(raw) for raw in listing.split(b"\0") if raw)
        workflows = {
            path: self.git("show", f"{self.base}:{path}")
            for path in sorted(base)
            if path.startswith(".github/") or path.endswith((".sh", "action.yml"))
        }
        runners = workflow_runners(workflows)
        return TreeFacts(
            sizes=sizes,
            base_paths=base,
            contents=contents,
            automation_paths=frozenset(runners),
            automation_runners=runners,
        )


def new_files(files: dict[str, str | bytes]) -> tuple[bytes, TreeFacts]:
    """The diff git prints for a patch that only adds `files` (text ending in a newline), and
    the facts production computes for it: fast, for tables of file contents."""
    diff = b""
    contents = {}
    for path, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        lines = data.removesuffix(b"\n").split(b"\n")
        diff += (
            f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n"
            f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n"
        ).encode()
        diff += b"".join(b"+" + line + b"\n" for line in lines)
        contents[path] = data
    sizes = {path: len(data) for path, data in contents.items()}
    return diff, TreeFacts(sizes=sizes, contents=contents)
