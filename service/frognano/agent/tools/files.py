"""Read, Write and Edit: one sandbox round trip each as a rule; staleness checked by hash."""

from __future__ import annotations

import errno
import shlex
from collections.abc import Callable

from frognano.agent.tools.common import (
    ToolError,
    cat_n,
    missing_file,
    resolve_path,
    split_lines,
)
from frognano.agent.tools.filecache import FileCache, sha256
from frognano.sandbox.base import Sandbox

DEFAULT_READ_LINES = 2000
READ_MAX_CHARS = 100_000
"""Read stops adding lines past this many characters (about 25,000 tokens, Claude Code's cap)
and says which offset to continue from."""
WHOLE_READ_LIMIT = 8 * 1024 * 1024
"""Files up to this size are fetched whole (and can be edited); larger ones are read as a
window of lines inside the sandbox and must be edited with Bash."""
BINARY_SNIFF = 8192
SNIPPET_CONTEXT = 4
_QUOTES = str.maketrans("\u2018\u2019\u201c\u201d", "''\"\"")
_WINDOW_BYTES = 1024 * 1024

NOT_READ = "File has not been read yet. Read it first before writing to it."
MODIFIED = (
    "File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it."
)
EMPTY_FILE = (
    "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
)
SNIPPET_HEADER = "Here's the result of running `cat -n` on a snippet of the edited file:"


# Compare-and-swap write, run inside the sandbox with the new content on stdin. `expect` is
# "any", "absent" (the file must not exist, or be empty: nothing to lose), "hash:H" (must
# exist with sha256 H) or "hash-or-absent:H". The check comes first, so a failed check writes
# nothing. The content is then written in place, as Claude Code does: links, hard links, mode
# and inode stay as they were. (A temporary file renamed over the target would also survive
# a full disk, at two more processes, ~1 ms each, on every Write and Edit; only a failing
# disk or the file size limit can cut an in-place write short, and then the error says so.)
# Only builtins apart from sha256sum and cat. The last line of output is
# "OK created|updated" or "E <reason> [detail]".
_CAS = r"""
if [ -d "$p" ]; then echo "E isdir"; exit 0; fi
if [ -e "$p" ]; then
  if [ ! -f "$p" ]; then echo "E notfile"; exit 0; fi
  case $expect in
    absent) if [ -s "$p" ]; then echo "E exists"; exit 0; fi ;;
    hash*) h=$(sha256sum < "$p" 2>&1) || { printf 'E io %s\n' "$h"; exit 0; }
      [ "${h%% *}" = "${expect#*:}" ] || { echo "E stale"; exit 0; } ;;
  esac
  state=updated
else
  case $expect in hash:*) echo "E gone"; exit 0 ;; esac
  state=created
  d=${p%/*}
  if [ -n "$d" ] && [ ! -d "$d" ]; then
    err=$(mkdir -p -- "$d" 2>&1) || { printf 'E io %s\n' "$err"; exit 0; }
  fi
fi
if err=$({ cat > "$p"; } 2>&1); then
  echo "OK $state"
else
  printf 'E io %s\n' "${err##*: }"
fi
"""

# A window of lines from a file too large to fetch whole: sha256 and line count first.
_WINDOW = r"""
export LC_ALL=C
nul=$(head -c 8192 -- "$p" | tr -d -c '\000' | wc -c) || exit 1
if [ "$nul" != 0 ]; then echo "E binary"; exit 0; fi
h=$(sha256sum < "$p") || exit 1
n=$(wc -l < "$p") || exit 1
[ "$(tail -c 1 -- "$p" | wc -l)" = 1 ] || n=$((n + 1))  # no final newline: one more line
printf 'OK %s %s %s\n' "${h%% *}" "$n" "$(stat -L -c %s -- "$p")"
sed -n "${start},${end}p;${end}q" -- "$p" | cut -b 1-8004 | head -c "$cap"
"""


def _script(body: str, **values: str | int) -> str:
    assigns = " ".join(f"{name}={shlex.quote(str(value))}" for name, value in values.items())
    return assigns + "\n" + body


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def format_lines(lines: list[str], start: int, total: int, offset: int) -> str:
    """Read's output for `lines` (already the window) starting at line `start` of `total`."""
    if total == 0:
        return EMPTY_FILE
    if start > total:
        return (
            "<system-reminder>Warning: the file exists but is shorter than the provided offset "
            f"({offset}). The file has {_plural(total, 'line')}.</system-reminder>"
        )
    shown: list[str] = []
    used = 0
    for line in cat_n(lines, start):
        if shown and used + len(line) + 1 > READ_MAX_CHARS:
            break
        shown.append(line)
        used += len(line) + 1
    end = start + len(shown) - 1
    text = "\n".join(shown)
    if end < total:
        text += f"\n\n(Showing lines {start}-{end} of {total}. Use offset={end + 1} to read more.)"
    return text


def _not_text(path: str, why: str) -> ToolError:
    return ToolError(
        f"Cannot read {path}: {why}. Read only shows text files; inspect it with Bash "
        f"instead (for example: file {shlex.quote(path)}; xxd {shlex.quote(path)} | head)."
    )


def _decode(path: str, data: bytes) -> str:
    if b"\0" in data[:BINARY_SNIFF]:
        raise _not_text(path, "it looks like a binary file (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_text(
            path, f"it is not UTF-8 text (invalid byte at offset {exc.start})"
        ) from None


class FileTools:
    """Read, Write and Edit over one sandbox, with the read-before-edit rule and its cache."""

    def __init__(self, sandbox: Sandbox, *, read_before_edit: bool, cwd: Callable[[], str]) -> None:
        self.sandbox = sandbox
        self.read_before_edit = read_before_edit
        self.cache = FileCache()
        self._cwd = cwd

    def path(self, value: str) -> str:
        return resolve_path(value, cwd=self._cwd())

    async def _fetch(self, path: str, verb: str) -> bytes:
        """The whole file (one round trip), or a ToolError saying what is wrong with it."""
        try:
            return await self.sandbox.read_file(path, max_bytes=WHOLE_READ_LIMIT)
        except FileNotFoundError:
            raise ToolError(missing_file(self._cwd())) from None
        except IsADirectoryError:
            raise ToolError(
                f"{path} is a directory, not a file. Directories cannot be read; "
                "use Bash ls to list its contents."
            ) from None
        except PermissionError:
            raise ToolError(f"Cannot {verb} {path}: permission denied.") from None
        except OSError as exc:
            if exc.errno == errno.EFBIG:
                raise
            if exc.errno == errno.EINVAL:
                raise ToolError(
                    f"Cannot {verb} {path}: it is not a regular file (a device, FIFO or socket)."
                ) from None
            raise ToolError(f"Cannot {verb} {path}: {exc.strerror or exc}") from None

    async def read(self, file_path: str, offset: int | None, limit: int | None) -> str:
        path = self.path(file_path)
        start = max(offset or 1, 1)
        count = limit if limit is not None else DEFAULT_READ_LINES
        try:
            data = await self._fetch(path, "read")
        except OSError:  # over WHOLE_READ_LIMIT
            return await self._read_window(path, start, count, offset or 0)
        digest = sha256(data)
        try:
            text = _decode(path, data)
        except ToolError:
            self.cache.put(path, digest, None)  # known, so Write may replace it
            raise
        self.cache.put(path, digest, data)
        lines = split_lines(text)
        return format_lines(lines[start - 1 : start - 1 + count], start, len(lines), offset or 0)

    async def _read_window(self, path: str, start: int, count: int, offset: int) -> str:
        end = start + max(count, 1) - 1
        script = _script(_WINDOW, p=path, start=start, end=end, cap=_WINDOW_BYTES)
        result = await self.sandbox.exec(
            script, cwd="/", timeout=300, output_limit=_WINDOW_BYTES + 64 * 1024
        )
        head, _, body = result.output.partition("\n")
        if head == "E binary":
            raise _not_text(path, "it looks like a binary file (it contains NUL bytes)")
        fields = head.split()
        if result.exit_code != 0 or len(fields) != 4 or fields[0] != "OK":
            raise ToolError(f"Cannot read {path}: {result.output.strip()[:500]}")
        _, digest, total, size = fields
        self.cache.put(path, digest, None)
        lines = split_lines(body)
        if len(body.encode("utf-8")) >= _WINDOW_BYTES and lines:
            lines.pop()  # cut at the byte cap: the last line may be partial
        text = format_lines(lines, start, int(total), offset)
        note = (
            f"\n\n(This file is {size} bytes, too large for Edit; change it with Bash if needed.)"
        )
        return text + note if lines else text

    async def _swap(self, path: str, expect: str, data: bytes) -> tuple[str, str]:
        """Write `data` if the file still matches `expect`: ("OK", "created"|"updated") or
        ("E", reason)."""
        result = await self.sandbox.exec(
            _script(_CAS, p=path, expect=expect), cwd="/", stdin=data, output_limit=64 * 1024
        )
        lines = result.output.strip().splitlines()
        last = lines[-1] if lines else ""
        status, _, detail = last.partition(" ")
        if result.exit_code != 0 or status not in ("OK", "E"):
            raise ToolError(f"Cannot write {path}: {result.output.strip()[:500]}")
        return status, detail

    def _swap_error(self, path: str, detail: str) -> ToolError:
        reason, _, message = detail.partition(" ")
        if reason == "stale":
            return ToolError(MODIFIED)
        if reason == "gone":
            self.cache.forget(path)
            return ToolError(missing_file(self._cwd()))
        if reason == "exists":
            return ToolError(NOT_READ)
        if reason == "isdir":
            return ToolError(f"{path} is a directory; give the path of a file.")
        if reason == "notfile":
            return ToolError(f"{path} is not a regular file (a device, FIFO or socket).")
        return ToolError(f"Cannot write {path}: {message or reason}")

    async def write(self, file_path: str, content: str) -> str:
        path = self.path(file_path)
        data = content.encode("utf-8")
        expect = "any"
        if self.read_before_edit:
            known = self.cache.get(path)
            expect = "absent" if known is None else f"hash-or-absent:{known.digest}"
        status, detail = await self._swap(path, expect, data)
        if status != "OK":
            raise self._swap_error(path, detail)
        self.cache.put(path, sha256(data), data)
        if detail == "created":
            return f"File created successfully at: {path}"
        return f"The file {path} has been updated successfully."

    async def edit(self, file_path: str, old: str, new: str, replace_all: bool) -> str:
        path = self.path(file_path)
        if old == new:
            raise ToolError("No changes to make: old_string and new_string are exactly the same.")
        if old == "":
            return await self._create(path, new)
        known = self.cache.get(path)
        if self.read_before_edit and known is None:
            raise ToolError(NOT_READ)
        cached = known.data if known is not None else None
        for attempt in range(2):
            fresh = attempt > 0 or cached is None
            if known is not None and cached is not None and not fresh:
                current, digest = cached, known.digest
            else:
                current = await self._fetch_for_edit(path)
                digest = sha256(current)
                if self.read_before_edit and known is not None and digest != known.digest:
                    raise ToolError(MODIFIED)
                self.cache.put(path, digest, current)
            try:
                updated, message = _replace(path, current, old, new, replace_all=replace_all)
            except ToolError:
                if fresh:
                    raise
                continue  # no match in the cached bytes: check the file before blaming the model
            status, detail = await self._swap(path, f"hash:{digest}", updated)
            if status == "OK":
                self.cache.put(path, sha256(updated), updated)
                return message
            # Without the rule a stale cache is no error of the model's: read and retry.
            if fresh or self.read_before_edit or not detail.startswith("stale"):
                raise self._swap_error(path, detail)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _create(self, path: str, content: str) -> str:
        """Edit with an empty old_string: a new file (or an empty one filled)."""
        data = content.encode("utf-8")
        status, detail = await self._swap(path, "absent", data)
        if status != "OK":
            if detail == "exists":
                raise ToolError("Cannot create new file - file already exists.")
            raise self._swap_error(path, detail)
        self.cache.put(path, sha256(data), data)
        if detail == "updated":  # it existed, empty
            return f"The file {path} has been updated successfully."
        return f"File created successfully at: {path}"

    async def _fetch_for_edit(self, path: str) -> bytes:
        try:
            return await self._fetch(path, "edit")
        except OSError:
            raise ToolError(
                f"Cannot edit {path}: the file is larger than {WHOLE_READ_LIMIT // 1024**2} MiB. "
                "Change it with Bash (sed, python) instead."
            ) from None


def _replace(path: str, data: bytes, old: str, new: str, *, replace_all: bool) -> tuple[bytes, str]:
    """The new bytes and Edit's success message, or a ToolError for a bad match."""
    try:
        text = _decode(path, data)
    except ToolError:
        raise ToolError(f"Cannot edit {path}: it is not a UTF-8 text file.") from None
    shown = old
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old:
        # A CRLF file: match the model's LF text against CRLF lines, and keep CRLF.
        crlf_old = old.replace("\r\n", "\n").replace("\n", "\r\n")
        count = text.count(crlf_old)
        if count:
            old, new = crlf_old, new.replace("\r\n", "\n").replace("\n", "\r\n")
    if count == 0 and not (text.isascii() and old.isascii()):
        # Claude Code's findActualString: curly quotes match straight ones (same length, so
        # the position found in the normalised text is the position in the file).
        at = text.translate(_QUOTES).find(old.translate(_QUOTES))
        if at >= 0:
            old = text[at : at + len(old)]
            count = text.count(old)
    if count == 0:
        raise ToolError(f"String to replace not found in file.\nString: {shown}")
    if count > 1 and not replace_all:
        raise ToolError(
            f"Found {count} matches of the string to replace, but replace_all is false. "
            "To replace all occurrences, set replace_all to true. To replace only one "
            "occurrence, please provide more context to uniquely identify the instance.\n"
            f"String: {shown}"
        )
    position = text.index(old)
    result = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    first = result.count("\n", 0, position)
    last = first + new.count("\n", 0, len(new) - 1)  # a final newline adds no line
    lines = split_lines(result)
    low = max(first - SNIPPET_CONTEXT, 0)
    snippet = cat_n(lines[low : last + SNIPPET_CONTEXT + 1], low + 1)
    head = f"The file {path} has been updated successfully."
    if replace_all and count > 1:
        head += f" All {count} occurrences were replaced."
    return result.encode("utf-8"), "\n".join([head, SNIPPET_HEADER, *snippet])
