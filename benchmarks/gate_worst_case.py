"""Time the gate on worst-case patches: one new file of about 1 MB per case, built to make one
of its scans work hardest; the largest patch at the default limits (20 changed Python files of
1 MB, one line added to each); and as much new Python as the scan budget admits. Usage:

    python benchmarks/gate_worst_case.py [--megabytes 1] [--files 20]

Prints one line per case: the case, its size, the seconds `run_gate` took and its findings.
"""

from __future__ import annotations

import argparse
import base64
import random
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from frognano.policy.gate.check import TreeFacts, run_gate
from frognano.policy.gate.scan import MAX_SCANNED_CHARS
from frognano.policy.models import GatePolicy

_RANDOM = random.Random(0)  # noqa: S311 - test data, not cryptography


def _alnum(count: int) -> str:
    return "".join(_RANDOM.choice(string.ascii_letters + string.digits) for _ in range(count))


def _fill(size: int, make: Callable[[int], str]) -> str:
    lines: list[str] = []
    total = 0
    number = 0
    while total < size:
        line = make(number)
        lines.append(line)
        total += len(line) + 1
        number += 1
    return "\n".join(lines) + "\n"


CASES: dict[str, Callable[[int], tuple[str, str]]] = {
    "python code": lambda size: (
        "src/big.py",
        _fill(
            size,
            lambda n: (
                f"def f{n}(a, b=os.path.join('x', 'y')):\n    return getattr(a, 'n' + str(b))[{n}]"
            ),
        ),
    ),
    "python string pieces": lambda size: (
        "src/pieces.py",
        _fill(
            size, lambda n: f"V{n} = 'ab' + 'cd' 'ef' + ''.join(['g', 'h']) + f'{n}' + 'ij'[::-1]"
        ),
    ),
    "one long base64 line": lambda size: (
        "data/blob.txt",
        "'" + base64.b64encode(_RANDOM.randbytes(size * 3 // 4)).decode() + "'\n",
    ),
    "printable hex runs": lambda size: (
        "data/hex.txt",
        _fill(size, lambda n: ("token: ghp_" + _alnum(36)).encode().hex()),
    ),
    "glued string pieces": lambda size: (
        "web/app.js",
        _fill(size, lambda n: f'const s{n} = "{_alnum(10)}" + "{_alnum(10)}" + \\'),
    ),
    "config keywords": lambda size: (
        "config/app.yaml",
        _fill(size, lambda n: f"password_{n}: '{_alnum(12)}' # api_key: secret = {_alnum(8)}"),
    ),
    "quotes and entropy": lambda size: (
        "data/q.txt",
        _fill(size, lambda n: " ".join(f'"{_alnum(24)}"' for _ in range(20))),
    ),
}


def _diff(path: str, text: str, modified: bool = False) -> bytes:
    """A new file's diff, or (`modified`) one whose last line is the only one added."""
    lines = text.removesuffix("\n").split("\n")
    if modified:
        count = len(lines)
        return (
            f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n"
            f"+++ b/{path}\n@@ -{count - 1},0 +{count} @@\n+{lines[-1]}\n"
        ).encode()
    header = (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n"
    )
    return (header + "".join(f"+{line}\n" for line in lines)).encode()


def _time(name: str, files: list[tuple[str, str]], modified: bool = False) -> None:
    # Limits high enough that only the scans, not the size checks, decide.
    gate = GatePolicy(max_files_changed=1000, max_lines_changed=10**7, max_file_bytes=10**8)
    diff = b"".join(_diff(path, text, modified) for path, text in files)
    facts = TreeFacts(
        sizes={path: len(text.encode()) for path, text in files},
        contents={path: text.encode() for path, text in files},
    )
    started = time.perf_counter()
    findings = run_gate(diff, facts, gate)
    elapsed = time.perf_counter() - started
    kinds = sorted({f"{finding.severity}:{finding.kind}" for finding in findings})
    megabytes = sum(len(text) for _, text in files) / 1e6
    print(f"{name:44} {megabytes:6.2f} MB {elapsed:7.2f} s  {', '.join(kinds)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--megabytes", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=20)
    options = parser.parse_args()
    size = int(options.megabytes * 1_000_000)
    cases = {name: make(size) for name, make in CASES.items()}
    for name, (path, text) in cases.items():
        _time(name, [(path, text)])
    path, text = cases["python code"]
    many = [(f"pkg{n}/{path}", text) for n in range(options.files)]
    _time(f"{options.files} changed Python files, 1 line added each", many, modified=True)
    fits = max(1, MAX_SCANNED_CHARS // (2 * (len(text) + text.count("\n"))))  # lines + parsing
    budget = [(f"new{n}/{path}", text) for n in range(fits)]
    _time(f"{fits} new Python files (the budget's worth)", budget)


if __name__ == "__main__":
    main()
