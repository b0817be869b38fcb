"""Log lines during `solve`'s live progress on a terminal: printed whole, above the status."""

from __future__ import annotations

import os
import pty
import re
import select
import sys

import pytest

SCRIPT = r"""
import logging, threading, time
from frognano.cli.common import console
from frognano.cli.progress import LiveProgress
from frognano.log import configure_logging, get_logger

configure_logging("console", "INFO")
log = get_logger("frognano.test")
with LiveProgress(console(stderr=True), 10) as live:
    live.stage("stage one")
    time.sleep(0.2)
    log.info("event.from_main", value=1)
    worker = threading.Thread(target=lambda: log.info("event.from_thread", value=2))
    worker.start()
    worker.join()
    time.sleep(0.2)
    logging.getLogger("httpx").warning("event from the standard library")
    time.sleep(0.2)
"""
ERASE_LINE = "\x1b[2K"


def _run_on_a_terminal(code: str) -> str:
    pid, fd = pty.fork()
    if pid == 0:  # the child: a process whose stderr is a terminal, as a user's would be
        os.environ.update(COLUMNS="200", TERM="xterm")
        os.execv(sys.executable, [sys.executable, "-c", code])  # noqa: S606 - fixed argv
    out = b""
    while select.select([fd], [], [], 20)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child exited and closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out.decode(errors="replace")


@pytest.mark.skipif(sys.platform != "linux", reason="a pseudo-terminal as on Linux")
def test_log_lines_do_not_break_into_the_status_line() -> None:
    shown = _run_on_a_terminal(SCRIPT)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)  # colours off, cursor moves kept
    for event in ("event.from_main", "event.from_thread", "event from the standard library"):
        [line] = [line for line in plain.split("\r\n") if event in line]
        # The status line was erased first, and the log line is whole: nothing of the
        # status ("stage one", its spinner) before or after it on the same line.
        before, _, after = line.rpartition(ERASE_LINE)[2].partition(event)
        assert line.count(ERASE_LINE) >= 1, repr(line)
        assert "stage one" not in before + after, repr(line)
        assert before.rstrip().endswith("]"), repr(line)
