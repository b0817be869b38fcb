"""The in-pod command wrapper, run with bash as the pod runs it: limits, input length,
background jobs, the recorded process group, exit statuses.

The fake API server runs commands in local sandboxes, whose pid namespace ends with the
command and so hides what the wrapper itself must do in a pod, where exec'd processes live
on in the container; these tests run the wrapper directly (test-written commands only).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from frognano.sandbox.kubernetes.backend import _PIDS, KILL, WRAPPER
from frognano.sandbox.kubernetes.pod import PATH_FIRST

pytestmark = pytest.mark.timeout(60)


def wrapper_argv(pids: Path, command: str, *, limit: float = 20, size: int = -1) -> list[str]:
    script = WRAPPER.replace(_PIDS, str(pids))
    return ["/bin/bash", "--noprofile", "--norc", "-c", script, "frognano-exec", "abc123",
            "/", f"{limit:g}", str(size), "4096", str(1 << 20), command]  # fmt: skip


def run(pids: Path, command: str, *, limit: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        wrapper_argv(pids, command, limit=limit),
        capture_output=True,
        text=True,
        timeout=40,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_exit_statuses_pass_through(tmp_path: Path) -> None:
    assert run(tmp_path, "true").returncode == 0
    assert run(tmp_path, "exit 7").returncode == 7
    assert run(tmp_path, "kill -TERM $$").returncode == 128 + 15
    done = run(tmp_path, "echo out; echo err >&2")
    assert (done.stdout, done.stderr) == ("out\n", "err\n")


def test_background_jobs_die_when_the_command_ends(tmp_path: Path) -> None:
    flag = tmp_path / "late"
    done = run(tmp_path, f"(sleep 1; touch {flag}) & echo started", limit=30)
    # Returned at once: the background job held the output pipe, and was killed.
    assert done.returncode == 0
    assert done.stdout == "started\n"
    time.sleep(1.5)
    assert not flag.exists()


def test_the_time_limit_kills_the_whole_command(tmp_path: Path) -> None:
    flag = tmp_path / "late"
    done = run(tmp_path, f"(sleep 2; touch {flag}) & sleep 30", limit=0.5)
    assert done.returncode == 124  # GNU timeout's status: the backend reports timed_out
    time.sleep(2.5)
    assert not flag.exists()


def test_input_ends_at_its_length_without_an_end_of_file(tmp_path: Path) -> None:
    # The v4 exec protocol cannot close stdin: the command must still see an end of input.
    proc = subprocess.Popen(
        wrapper_argv(tmp_path, "wc -c", size=5),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write("hello, and more that is not part of the input")
    proc.stdin.flush()
    # stdin stays open: the output ends only because the input ended at its length.
    out = proc.stdout.read()
    assert proc.wait(timeout=20) == 0
    proc.stdin.close()
    proc.stdout.close()
    assert out.strip() == "5"


def test_the_recorded_group_is_the_commands_and_kill_ends_it(tmp_path: Path) -> None:
    # The wrapper records the group just after starting the command: the command waits for
    # that record before it prints, or the test could read the file before it is written.
    wait = f"until [ -s '{tmp_path}/abc123' ]; do sleep 0.01; done"
    proc = subprocess.Popen(
        wrapper_argv(tmp_path, f"{wait}; cut -d' ' -f5 /proc/$$/stat; sleep 30", limit=30),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    group = proc.stdout.readline().strip()
    assert (tmp_path / "abc123").read_text() == group
    killer = KILL.replace(_PIDS, str(tmp_path))
    subprocess.run(["/bin/bash", "-c", killer, "frognano-kill", "abc123"], check=True, timeout=10)
    assert proc.wait(timeout=10) == 128 + 9
    proc.stdout.close()


def test_an_environment_goes_first_on_path_for_the_command_only(tmp_path: Path) -> None:
    # A pod with an environment sets FROGNANO_PATH_FIRST=/environment/bin; what the
    # environment's build left there (here: a `setsid` that would break the process group)
    # must not stand in for the wrapper's own tools, and the variable itself does not show.
    first = tmp_path / "envbin"
    first.mkdir()
    fake = first / "setsid"
    fake.write_text(f'#!/bin/sh\ntouch {tmp_path}/hijacked\nexec "$@"\n')
    fake.chmod(0o755)
    done = subprocess.run(
        wrapper_argv(tmp_path, 'echo "$PATH"; echo "first=${FROGNANO_PATH_FIRST-unset}"'),
        capture_output=True,
        text=True,
        timeout=40,
        check=False,
        stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", PATH_FIRST: str(first)},
    )
    assert done.returncode == 0, done.stderr
    path, shown = done.stdout.splitlines()
    assert path == f"{first}:/usr/bin:/bin"
    assert shown == "first=unset"
    assert not (tmp_path / "hijacked").exists()
