"""Read, Write and Edit against real sandboxes: formats, exact errors, hash-based staleness."""

from __future__ import annotations

import json
from typing import Any

from frognano.agent.tools.box import ToolBox
from frognano.agent.tools.filecache import FileCache
from frognano.agent.tools.files import EMPTY_FILE, MODIFIED, NOT_READ
from frognano.agent.turns import ToolCall, ToolResult
from frognano.sandbox.local import LocalSandbox

SNIPPET = "Here's the result of running `cat -n` on a snippet of the edited file:"


async def call(box: ToolBox, name: str, **arguments: Any) -> ToolResult:
    return await box.call(ToolCall(id="call_1", name=name, arguments=json.dumps(arguments)))


def error(text: str) -> ToolResult:
    return ToolResult(f"<tool_use_error>{text}</tool_use_error>", is_error=True)


def numbered(lines: range) -> bytes:
    return "".join(f"line {n}\n" for n in lines).encode()


async def mode_of(sandbox: LocalSandbox, path: str) -> str:
    return (await sandbox.exec(f"stat -c %a {path}")).output.strip()


# --- Read ------------------------------------------------------------------------------------


async def test_read_cat_n_format(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/a.py", b"import os\n\n    x = 1\n")
    assert await call(box, "Read", file_path="/workspace/a.py") == ToolResult(
        "     1\timport os\n     2\t\n     3\t    x = 1"
    )
    await sandbox.write_file("/workspace/b.txt", b"no final newline")
    assert (await call(box, "Read", file_path="/workspace/b.txt")).content == (
        "     1\tno final newline"
    )
    await sandbox.write_file("/workspace/crlf.txt", b"one\r\ntwo\r\n")
    assert (await call(box, "Read", file_path="/workspace/crlf.txt")).content == (
        "     1\tone\n     2\ttwo"
    )
    await sandbox.write_file("/workspace/newline.txt", b"\n")
    assert (await call(box, "Read", file_path="/workspace/newline.txt")).content == "     1\t"


async def test_read_offset_and_limit(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/ten.txt", numbered(range(1, 11)))
    assert (await call(box, "Read", file_path="/workspace/ten.txt", offset=3, limit=2)).content == (
        "     3\tline 3\n     4\tline 4\n\n(Showing lines 3-4 of 10. Use offset=5 to read more.)"
    )
    zero = await call(box, "Read", file_path="/workspace/ten.txt", offset=0, limit=1)
    assert zero.content == (
        "     1\tline 1\n\n(Showing lines 1-1 of 10. Use offset=2 to read more.)"
    )
    tail = await call(box, "Read", file_path="/workspace/ten.txt", offset=9)
    assert tail.content == "     9\tline 9\n    10\tline 10"
    past = await call(box, "Read", file_path="/workspace/ten.txt", offset=11)
    assert past == ToolResult(
        "<system-reminder>Warning: the file exists but is shorter than the provided offset "
        "(11). The file has 10 lines.</system-reminder>"
    )


async def test_read_defaults_to_2000_lines_and_cuts_long_lines(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/long.txt", numbered(range(1, 2501)))
    result = await call(box, "Read", file_path="/workspace/long.txt")
    lines = result.content.split("\n")
    assert lines[0] == "     1\tline 1"
    assert lines[1999] == "  2000\tline 2000"
    assert lines[2000:] == ["", "(Showing lines 1-2000 of 2500. Use offset=2001 to read more.)"]
    await sandbox.write_file("/workspace/wide.txt", b"a" * 2500 + b"\nshort\n")
    wide = await call(box, "Read", file_path="/workspace/wide.txt")
    assert wide.content == "     1\t" + "a" * 2000 + "… [line truncated]\n     2\tshort"


async def test_read_output_budget(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/big.txt", (("x" * 999) + "\n").encode() * 300)
    result = await call(box, "Read", file_path="/workspace/big.txt")
    lines = result.content.split("\n")
    # 99 lines of 1,006 characters (+ newline) fit in 100,000 characters; the 100th does not.
    assert lines[-1] == "(Showing lines 1-99 of 300. Use offset=100 to read more.)"
    assert len(lines) == 101


async def test_read_empty_binary_and_not_utf8(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/empty", b"")
    assert await call(box, "Read", file_path="/workspace/empty") == ToolResult(EMPTY_FILE)
    assert EMPTY_FILE == (
        "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
    )
    await sandbox.write_file("/workspace/blob.bin", b"\x7fELF\x00\x01\x02")
    assert await call(box, "Read", file_path="/workspace/blob.bin") == error(
        "Cannot read /workspace/blob.bin: it looks like a binary file (it contains NUL bytes). "
        "Read only shows text files; inspect it with Bash instead (for example: "
        "file /workspace/blob.bin; xxd /workspace/blob.bin | head)."
    )
    await sandbox.write_file("/workspace/latin1.txt", "caf\xe9\n".encode("latin-1"))
    assert await call(box, "Read", file_path="/workspace/latin1.txt") == error(
        "Cannot read /workspace/latin1.txt: it is not UTF-8 text (invalid byte at offset 3). "
        "Read only shows text files; inspect it with Bash instead (for example: "
        "file /workspace/latin1.txt; xxd /workspace/latin1.txt | head)."
    )
    # A refused file still counts as read: Write may replace it.
    assert await call(box, "Write", file_path="/workspace/blob.bin", content="text\n") == (
        ToolResult("The file /workspace/blob.bin has been updated successfully.")
    )


async def test_read_missing_directory_and_special_files(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    assert await call(box, "Read", file_path="/workspace/nope.py") == error(
        "File does not exist. Note: your current working directory is /workspace."
    )
    await call(box, "Bash", command="cd /tmp")
    assert await call(box, "Read", file_path="/workspace/nope.py") == error(
        "File does not exist. Note: your current working directory is /tmp."
    )
    assert await call(box, "Read", file_path="/workspace") == error(
        "/workspace is a directory, not a file. Directories cannot be read; "
        "use Bash ls to list its contents."
    )
    await sandbox.exec("mkfifo /workspace/fifo && echo s > /workspace/locked && chmod 0 locked")
    assert await call(box, "Read", file_path="/workspace/fifo") == error(
        "Cannot read /workspace/fifo: it is not a regular file (a device, FIFO or socket)."
    )
    assert await call(box, "Read", file_path="/workspace/locked") == error(
        "Cannot read /workspace/locked: permission denied."
    )


async def test_read_large_file_reads_a_window(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    made = await sandbox.exec("seq 1 1500000 > /workspace/huge.txt && stat -c %s huge.txt")
    size = made.output.strip()
    assert int(size) > 8 * 1024 * 1024
    result = await call(box, "Read", file_path="/workspace/huge.txt", offset=1000000, limit=2)
    assert result == ToolResult(
        "1000000\t1000000\n1000001\t1000001\n\n"
        "(Showing lines 1000000-1000001 of 1500000. Use offset=1000002 to read more.)\n\n"
        f"(This file is {size} bytes, too large for Edit; change it with Bash if needed.)"
    )
    first = await call(box, "Read", file_path="/workspace/huge.txt")
    assert first.content.startswith("     1\t1\n     2\t2\n")
    assert "(Showing lines 1-2000 of 1500000. Use offset=2001 to read more.)" in first.content
    past = await call(box, "Read", file_path="/workspace/huge.txt", offset=1500001)
    assert "The file has 1500000 lines." in past.content
    assert await call(
        box, "Edit", file_path="/workspace/huge.txt", old_string="1", new_string=""
    ) == (
        error(
            "Cannot edit /workspace/huge.txt: the file is larger than 8 MiB. "
            "Change it with Bash (sed, python) instead."
        )
    )
    # It was Read, so Write may replace it whole (the check uses the hash from the window read).
    assert await call(box, "Write", file_path="/workspace/huge.txt", content="small\n") == (
        ToolResult("The file /workspace/huge.txt has been updated successfully.")
    )


# --- Write -----------------------------------------------------------------------------------


async def test_write_new_file_needs_no_read(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    result = await call(box, "Write", file_path="/workspace/pkg/sub/new.py", content="x = 'é'\n")
    assert result == ToolResult("File created successfully at: /workspace/pkg/sub/new.py")
    assert await sandbox.read_file("/workspace/pkg/sub/new.py") == "x = 'é'\n".encode()
    assert await mode_of(sandbox, "/workspace/pkg/sub/new.py") == "644"
    # Written by the tool, so known: it may be overwritten without a Read.
    again = await call(box, "Write", file_path="/workspace/pkg/sub/new.py", content="")
    assert again == ToolResult("The file /workspace/pkg/sub/new.py has been updated successfully.")
    assert await sandbox.read_file("/workspace/pkg/sub/new.py") == b""
    listing = await sandbox.exec("ls -A /workspace/pkg/sub")
    assert listing.output == "new.py\n"  # no temporary files left behind


async def test_write_existing_file_requires_read(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/run.sh", b"#!/bin/sh\necho old\n", mode=0o755)
    assert await call(box, "Write", file_path="/workspace/run.sh", content="x") == error(NOT_READ)
    assert NOT_READ == "File has not been read yet. Read it first before writing to it."
    assert await sandbox.read_file("/workspace/run.sh") == b"#!/bin/sh\necho old\n"
    await call(box, "Read", file_path="/workspace/run.sh", offset=2, limit=1)  # any window
    result = await call(
        box, "Write", file_path="/workspace/run.sh", content="#!/bin/sh\necho new\n"
    )
    assert result == ToolResult("The file /workspace/run.sh has been updated successfully.")
    assert await mode_of(sandbox, "/workspace/run.sh") == "755"
    assert (await sandbox.exec("/workspace/run.sh")).output == "new\n"


async def test_write_detects_changes_by_hash_not_mtime(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/a.txt", b"one\n")
    await call(box, "Read", file_path="/workspace/a.txt")
    await call(box, "Bash", command="touch -d '2001-01-01' a.txt")  # same content: fine
    assert not (await call(box, "Write", file_path="/workspace/a.txt", content="two\n")).is_error
    await call(box, "Bash", command="sed -i s/two/three/ a.txt")
    assert await call(box, "Write", file_path="/workspace/a.txt", content="four\n") == error(
        MODIFIED
    )
    assert MODIFIED == (
        "File has been modified since read, either by the user or by a linter. "
        "Read it again before attempting to write it."
    )
    assert await sandbox.read_file("/workspace/a.txt") == b"three\n"  # untouched
    await call(box, "Read", file_path="/workspace/a.txt")
    assert not (await call(box, "Write", file_path="/workspace/a.txt", content="four\n")).is_error
    # Deleted after the Read: writing it whole creates it again.
    await sandbox.exec("rm /workspace/a.txt")
    assert await call(box, "Write", file_path="/workspace/a.txt", content="five\n") == ToolResult(
        "File created successfully at: /workspace/a.txt"
    )


async def test_write_without_read_before_edit(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox, read_before_edit=False)
    assert not box.read_before_edit
    await sandbox.write_file("/workspace/a.txt", b"old\n", mode=0o600)
    assert await call(box, "Write", file_path="/workspace/a.txt", content="new\n") == ToolResult(
        "The file /workspace/a.txt has been updated successfully."
    )
    assert await mode_of(sandbox, "/workspace/a.txt") == "600"
    await sandbox.exec("echo changed > /workspace/a.txt")
    assert not (await call(box, "Write", file_path="/workspace/a.txt", content="x\n")).is_error
    assert await sandbox.read_file("/workspace/a.txt") == b"x\n"
    # The rule can be switched on mid-run.
    box.read_before_edit = True
    await sandbox.write_file("/workspace/b.txt", b"b\n")
    assert await call(box, "Write", file_path="/workspace/b.txt", content="c") == error(NOT_READ)


async def test_write_errors_and_symlinks(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.exec("mkdir /workspace/dir")
    assert await call(box, "Write", file_path="/workspace/dir", content="x") == error(
        "/workspace/dir is a directory; give the path of a file."
    )
    await sandbox.write_file("/workspace/target.txt", b"t\n", mode=0o640)
    await sandbox.exec("ln -s target.txt /workspace/link.txt")
    await call(box, "Read", file_path="/workspace/link.txt")
    assert not (await call(box, "Write", file_path="/workspace/link.txt", content="u\n")).is_error
    state = await sandbox.exec("readlink link.txt; cat target.txt; stat -c %a target.txt")
    assert state.output == "target.txt\nu\n640\n"  # the link is kept, its target changed
    await sandbox.exec("mkdir /workspace/ro && chmod 555 /workspace/ro")
    denied = await call(box, "Write", file_path="/workspace/ro/x.txt", content="x")
    assert denied.is_error
    assert denied.content.startswith("<tool_use_error>Cannot write /workspace/ro/x.txt: ")
    assert "Permission denied" in denied.content


# --- Edit ------------------------------------------------------------------------------------


async def test_edit_requires_read_and_shows_a_snippet(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/a.txt", numbered(range(1, 13)), mode=0o755)
    edit = {"file_path": "/workspace/a.txt", "old_string": "line 6\n", "new_string": "six\n6b\n"}
    assert await call(box, "Edit", **edit) == error(NOT_READ)
    await call(box, "Read", file_path="/workspace/a.txt", limit=1)
    assert await call(box, "Edit", **edit) == ToolResult(
        "The file /workspace/a.txt has been updated successfully.\n"
        f"{SNIPPET}\n"
        "     2\tline 2\n     3\tline 3\n     4\tline 4\n     5\tline 5\n"
        "     6\tsix\n     7\t6b\n"
        "     8\tline 7\n     9\tline 8\n    10\tline 9\n    11\tline 10"
    )
    expected = numbered(range(1, 6)) + b"six\n6b\n" + numbered(range(7, 13))
    assert await sandbox.read_file("/workspace/a.txt") == expected
    assert await mode_of(sandbox, "/workspace/a.txt") == "755"
    # Edits chain without another Read: the tools know what they wrote.
    second = await call(
        box, "Edit", file_path="/workspace/a.txt", old_string="line 1\n", new_string=""
    )
    assert second.content == (
        "The file /workspace/a.txt has been updated successfully.\n"
        f"{SNIPPET}\n"
        "     1\tline 2\n     2\tline 3\n     3\tline 4\n     4\tline 5\n     5\tsix"
    )


async def test_edit_match_errors(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/a.py", b"x = 1\nx = 1\ny = 2\n")
    await call(box, "Read", file_path="/workspace/a.py")
    path = "/workspace/a.py"
    assert await call(box, "Edit", file_path=path, old_string="z = 3", new_string="z") == error(
        "String to replace not found in file.\nString: z = 3"
    )
    assert await call(box, "Edit", file_path=path, old_string="x = 1", new_string="x = 2") == error(
        "Found 2 matches of the string to replace, but replace_all is false. To replace all "
        "occurrences, set replace_all to true. To replace only one occurrence, please provide "
        "more context to uniquely identify the instance.\nString: x = 1"
    )
    assert await call(box, "Edit", file_path=path, old_string="y", new_string="y") == error(
        "No changes to make: old_string and new_string are exactly the same."
    )
    assert await call(box, "Edit", file_path=path, old_string="", new_string="new") == error(
        "Cannot create new file - file already exists."
    )
    assert await sandbox.read_file(path) == b"x = 1\nx = 1\ny = 2\n"
    result = await call(
        box, "Edit", file_path=path, old_string="x = 1", new_string="x = 2", replace_all="true"
    )
    assert result.content == (
        "The file /workspace/a.py has been updated successfully. "
        "All 2 occurrences were replaced.\n"
        f"{SNIPPET}\n"
        "     1\tx = 2\n     2\tx = 2\n     3\ty = 2"
    )
    assert await sandbox.read_file(path) == b"x = 2\nx = 2\ny = 2\n"


async def test_edit_with_empty_old_string_creates_a_file(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    result = await call(
        box, "Edit", file_path="/workspace/new/mod.py", old_string="", new_string="A = 1\n"
    )
    assert result == ToolResult("File created successfully at: /workspace/new/mod.py")
    assert await sandbox.read_file("/workspace/new/mod.py") == b"A = 1\n"
    edited = await call(
        box, "Edit", file_path="/workspace/new/mod.py", old_string="A = 1", new_string="A = 2"
    )
    assert not edited.is_error
    # An existing empty file has nothing to lose: it may be filled like a new one.
    await sandbox.exec("touch /workspace/empty.py")
    filled = await call(box, "Edit", file_path="/workspace/empty.py", old_string="", new_string="B")
    assert filled == ToolResult("The file /workspace/empty.py has been updated successfully.")
    assert await sandbox.read_file("/workspace/empty.py") == b"B"


async def test_edit_staleness_by_hash(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/a.txt", b"alpha\nbeta\n")
    await call(box, "Read", file_path="/workspace/a.txt")
    await call(box, "Bash", command="touch -d '2001-01-01' /workspace/a.txt")
    touched = await call(
        box, "Edit", file_path="/workspace/a.txt", old_string="beta", new_string="b"
    )
    assert not touched.is_error
    await call(box, "Bash", command="sed -i 's/alpha/ALPHA/' /workspace/a.txt")
    stale = await call(
        box, "Edit", file_path="/workspace/a.txt", old_string="b\n", new_string="c\n"
    )
    assert stale == error(MODIFIED)
    assert await sandbox.read_file("/workspace/a.txt") == b"ALPHA\nb\n"
    await call(box, "Read", file_path="/workspace/a.txt")
    fresh = await call(
        box, "Edit", file_path="/workspace/a.txt", old_string="b\n", new_string="c\n"
    )
    assert not fresh.is_error
    assert await sandbox.read_file("/workspace/a.txt") == b"ALPHA\nc\n"
    # An edit written against what Bash changed is told to Read again, not "not found".
    await call(box, "Bash", command="sed -i 's/ALPHA/omega/' /workspace/a.txt")
    omega = await call(box, "Edit", file_path="/workspace/a.txt", old_string="omega", new_string="")
    assert omega == error(MODIFIED)
    await sandbox.exec("rm /workspace/a.txt")
    assert await call(
        box, "Edit", file_path="/workspace/a.txt", old_string="c", new_string="d"
    ) == (error("File does not exist. Note: your current working directory is /workspace."))


async def test_edit_when_the_cached_bytes_were_evicted(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    box._files.cache = FileCache(max_bytes=8)  # keeps hashes, never the bytes
    await sandbox.write_file("/workspace/a.txt", b"alpha\nbeta\n")
    await call(box, "Read", file_path="/workspace/a.txt")
    assert box._files.cache.get("/workspace/a.txt") is not None
    ok = await call(box, "Edit", file_path="/workspace/a.txt", old_string="beta", new_string="b")
    assert not ok.is_error
    await sandbox.exec("echo gamma >> /workspace/a.txt")
    stale = await call(box, "Edit", file_path="/workspace/a.txt", old_string="b\n", new_string="")
    assert stale == error(MODIFIED)


async def test_edit_without_read_before_edit(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox, read_before_edit=False)
    await sandbox.write_file("/workspace/a.txt", b"one\ntwo\n")
    first = await call(box, "Edit", file_path="/workspace/a.txt", old_string="one", new_string="1")
    assert not first.is_error
    # Changed behind the cache's back: the edit applies to what is there now.
    await sandbox.exec("echo three >> /workspace/a.txt")
    second = await call(box, "Edit", file_path="/workspace/a.txt", old_string="two", new_string="2")
    assert not second.is_error
    assert await sandbox.read_file("/workspace/a.txt") == b"1\n2\nthree\n"
    # Text only the file on disk has (not the cached copy) is found there.
    await sandbox.exec("echo four >> /workspace/a.txt")
    third = await call(box, "Edit", file_path="/workspace/a.txt", old_string="four", new_string="4")
    assert not third.is_error
    assert await sandbox.read_file("/workspace/a.txt") == b"1\n2\nthree\n4\n"
    assert await call(
        box, "Edit", file_path="/workspace/b.txt", old_string="x", new_string="y"
    ) == (error("File does not exist. Note: your current working directory is /workspace."))


async def test_edit_keeps_bytes_and_crlf(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    original = b"\xef\xbb\xbfkeep\tthis \r\nold line\r\nand\r\nno newline at end"
    await sandbox.write_file("/workspace/win.txt", original)
    await call(box, "Read", file_path="/workspace/win.txt")
    result = await call(
        box,
        "Edit",
        file_path="/workspace/win.txt",
        old_string="old line\nand",
        new_string="new\nok",
    )
    assert result.content.endswith(
        "     1\t\ufeffkeep\tthis \n     2\tnew\n     3\tok\n     4\tno newline at end"
    )
    assert await sandbox.read_file("/workspace/win.txt") == (
        b"\xef\xbb\xbfkeep\tthis \r\nnew\r\nok\r\nno newline at end"
    )


async def test_edit_matches_curly_quotes_like_claude_code(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/q.md", "say \u201chi\u201d and \u2018bye\u2019\n".encode())
    await call(box, "Read", file_path="/workspace/q.md")
    result = await call(box, "Edit", file_path="/workspace/q.md", old_string='"hi"', new_string="x")
    assert not result.is_error
    assert await sandbox.read_file("/workspace/q.md") == "say x and \u2018bye\u2019\n".encode()
    missing = await call(
        box, "Edit", file_path="/workspace/q.md", old_string='"bye"', new_string=""
    )
    assert missing == error('String to replace not found in file.\nString: "bye"')


async def test_edit_refuses_binary_files(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox, read_before_edit=False)
    await sandbox.write_file("/workspace/blob", b"a\x00b")
    assert await call(box, "Edit", file_path="/workspace/blob", old_string="a", new_string="c") == (
        error("Cannot edit /workspace/blob: it is not a UTF-8 text file.")
    )
    assert await sandbox.read_file("/workspace/blob") == b"a\x00b"


def test_file_cache_bounds() -> None:
    cache = FileCache(max_bytes=10, max_entries=3)
    cache.put("/a", "ha", b"12345")
    cache.put("/b", "hb", b"12345")
    assert cache.size == 10
    cache.put("/c", "hc", b"123")  # evicts the bytes of /a, the least recently used
    a = cache.get("/a")
    assert a is not None
    assert a.data is None
    assert a.digest == "ha"
    assert cache.size == 8
    cache.put("/d", "hd", None)  # a fourth entry drops the oldest, /b (/a was just used)
    assert cache.get("/b") is None
    assert cache.size == 3
    cache.put("/e", "he", b"x" * 11)  # too large to cache: hash only
    e = cache.get("/e")
    assert e is not None
    assert e.data is None
    cache.forget("/c")
    assert cache.size == 0
