"""Untrusted text on a terminal: control characters shown by every command, never sent."""

# A terminal obeys what it is sent: `ESC ] 0 ; … BEL` retitles the window, `ESC [ 2 J` clears
# it, the C1 byte 0x9b starts a sequence like `ESC [` on many terminals, `ESC ] 8 ;;` makes a
# hyperlink, U+202E reorders what follows. The model's text, tool output, test ids, paths and a
# model server's answers are written by others, so each command that prints them must show
# these characters (`\x1b`) instead of sending them. Rich's markup is an attack too: printed
# through a console with markup on, `[link=URL]` becomes a terminal hyperlink.

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from frognano.agent.loop_types import Progress
from frognano.agent.trajectory import TrajectoryWriter
from frognano.cli.progress import LiveProgress
from tests.cli.test_solve import FIX, environment, issue, repo, solve_argv  # noqa: F401
from tests.fakes.model_server import ScriptedModelServer, Turn

HOSTILE = (
    "title\x1b]0;pwned\x07 clear\x1b[2J c1\x9b31m bidi\u202eevil\u2066 bell\x07 bs\x08 "
    "cr\roverwritten del\x7f nul\x00 osc8\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ "
    "[link=https://evil.example]click[/link] [bold red]loud[/]"
)
# Raw control bytes in UTF-8 output: C0 but tab and newline, DEL, C1 (U+0080-U+009F as
# UTF-8), the bidirectional controls, and the line and paragraph separators.
RAW = re.compile(
    rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\x8e\x8f\xaa-\xae]"
    rb"|\xe2\x81[\xa6-\xa9]|\xe2\x80[\xa8\xa9]|\xd8\x9c"
)
INJECTED = (b"\x1b]0;pwned", b"\x1b[2J", b"\xc2\x9b31m", "\u202e".encode(), b"\x1b]8;")


def raw_controls(data: bytes) -> list[bytes]:
    return sorted(set(RAW.findall(data)))


def hostile_trajectory(path: Path) -> Path:
    with TrajectoryWriter(path) as writer:
        served = {"id": HOSTILE, "root": HOSTILE}
        writer.write(
            "run_info",
            note=HOSTILE,
            run_id=HOSTILE,
            repo=HOSTILE,
            policy=HOSTILE,
            model={
                "kind": "server",
                "name": HOSTILE,
                "served": served,
                "model_info": {"model_path": HOSTILE, "architectures": [HOSTILE]},
            },
            sampling={"temperature": HOSTILE},
            sandbox={"backend": HOSTILE},
        )
        writer.write("run_start", run_id=HOSTILE, model=HOSTILE, task=HOSTILE)
        edit = {"file_path": HOSTILE, "old_string": HOSTILE, "new_string": HOSTILE + "\n+x"}
        writer.write(
            "assistant",
            step=1,
            finish_reason=HOSTILE,
            reasoning=HOSTILE,
            content=HOSTILE,
            usage={"prompt_tokens": HOSTILE},
            model=HOSTILE,
            tool_calls=[
                {"name": HOSTILE, "arguments": json.dumps({"x": HOSTILE})},
                {"name": "Bash", "arguments": HOSTILE},
                {"name": "Edit", "arguments": json.dumps(edit)},
            ],
        )
        writer.write("assistant", step=2, model="other")  # two names: each step names its own
        writer.write("tool", step=1, name=HOSTILE, result=HOSTILE, is_error=True)
        writer.write("compaction", step=2, summary=HOSTILE)
        writer.write("run_end", stop_reason=HOSTILE, steps=HOSTILE, detail=HOSTILE,
                     summary=HOSTILE)  # fmt: skip
    # The run folder's report and patch are shown too; they carry what the run wrote.
    report = {"outcome": {"patch_ready": False, "reason": HOSTILE},
              "patch": {"files": [HOSTILE], "insertions": 1, "deletions": 0},
              "gate": {"passed": False, "findings": [HOSTILE]}}  # fmt: skip
    (path.parent / "report.json").write_text(json.dumps(report), encoding="utf-8")
    (path.parent / "patch.diff").write_text(f"+++ b/{HOSTILE}\n+{HOSTILE}\n", encoding="utf-8")
    return path


def frognano(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "frognano", *args],
        capture_output=True, timeout=120, check=False, env=env,
    )  # fmt: skip


def test_trajectory_show_shows_control_characters_instead_of_sending_them(tmp_path: Path) -> None:
    path = hostile_trajectory(tmp_path / "trajectory.jsonl")
    for extra in ((), ("--full",)):
        done = frognano("trajectory", "show", str(path), *extra)
        assert done.returncode == 0, done.stderr
        assert raw_controls(done.stdout) == []
        assert raw_controls(done.stderr) == []
        shown = done.stdout.decode()
        assert r"title\x1b]0;pwned\x07" in shown  # visible, not silently dropped
        assert r"c1\x9b31m bidi\u202eevil" in shown
        assert "[link=https://evil.example]click[/link]" in shown  # printed, not interpreted


def test_the_html_trajectory_escapes_and_shows_control_characters(tmp_path: Path) -> None:
    path = hostile_trajectory(tmp_path / "trajectory.jsonl")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"event": "tool", "step": 3, "name": "<img src=x>",
                                 "result": "<img src=https://evil.example/p.png>"
                                           "</pre><script>alert(1)</script>"}) + "\n")  # fmt: skip
    page_path = tmp_path / "page.html"
    done = frognano("trajectory", "show", str(path), "--format", "html", "--out", str(page_path))
    assert done.returncode == 0, done.stderr
    page = page_path.read_bytes()
    assert raw_controls(page) == []
    assert raw_controls(done.stderr) == []
    text = page.decode()
    assert "<img" not in text
    assert "<script" not in text
    assert "&lt;img src=https://evil.example/p.png&gt;&lt;/pre&gt;&lt;script&gt;" in text
    assert r"title\x1b]0;pwned\x07" in text


def test_the_live_progress_line_shows_a_hostile_tool_name_inertly() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=400)
    progress = LiveProgress(console, 150)
    progress.stage(HOSTILE)
    progress.update(Progress(step=1, max_steps=150, phase=HOSTILE, prompt_tokens=1, elapsed=0))
    shown = progress._status.renderable  # what the status line would draw next
    console.print(shown)
    out = buffer.getvalue().encode()
    for sequence in INJECTED:
        assert sequence not in out
    assert b"click" in out  # the text is there,
    assert b"[link=https://evil.example]" in out  # and its markup was not read as markup


# -- frognano solve: a run whose model writes the attacks -------------------------------------

# A workflow file whose name carries the sequences: the gate blocks it, and its reason (naming
# the path) is what `solve` prints on stderr; the summary carries them into the report.
WORKFLOW = (
    ".github/workflows/x\x1b]0;pwned\x07\x1b[2J\x9b31m\u202e[link=https:evil.example]y[/link].yml"
)
HOSTILE_RUN = [
    Turn(reasoning=HOSTILE, calls=[("Write", {"file_path": f"/workspace/{WORKFLOW}",
                                              "content": "on: push\n"})]),
    *FIX[2:4],
    Turn(reasoning=HOSTILE, content=f"mean([]) now raises ValueError. {HOSTILE}"),
]  # fmt: skip


def test_solve_prints_no_control_sequence_from_the_run(
    repo: Path,  # noqa: F811 - the fixtures
    issue: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    for colour in (False, True):
        out = tmp_path / f"out-{colour}"
        with ScriptedModelServer(HOSTILE_RUN) as server:
            env = environment(server, tmp_path)
            if colour:  # Rich then draws for a terminal: the live line, colours, hyperlinks
                env["FORCE_COLOR"] = "1"
            else:
                env.pop("FORCE_COLOR", None)
            done = subprocess.run(
                solve_argv(repo, issue, out), env=env, capture_output=True, timeout=120,
                check=False,
            )  # fmt: skip
        assert done.returncode == 1, done.stderr.decode(errors="replace")
        assert b"the gate blocked the patch" in done.stderr
        assert rb"x\x1b]0;pwned\x07" in done.stderr.replace(b"\n", b"")  # shown
        for stream in (done.stdout, done.stderr):
            for sequence in INJECTED:
                assert sequence not in stream, (colour, sequence)
            if not colour:
                assert raw_controls(stream) == []
        shown = frognano("trajectory", "show", str(out / "trajectory.jsonl"))
        assert raw_controls(shown.stdout) == []
        assert os.path.isfile(out / "report.md")


# -- frognano model check: a server's own words ------------------------------------------------


def test_model_check_shows_a_hostile_servers_words_inertly() -> None:
    answers = [
        Turn(status=500, body=json.dumps({"message": HOSTILE}).encode()),
        Turn(content=HOSTILE, reasoning=HOSTILE),
    ]
    for answer in answers:
        with ScriptedModelServer([answer]) as server:
            env = {**os.environ, "FROGNANO_MODEL_BASE_URL": server.base_url}
            done = frognano("model", "check", env=env)
        assert done.returncode == 1
        for stream in (done.stdout, done.stderr):
            assert raw_controls(stream) == [], stream
        assert rb"\x1b]0;pwned" in done.stdout.replace(b"\n", b"") + done.stderr
