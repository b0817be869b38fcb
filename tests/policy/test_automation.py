"""automation.workflow_scripts: the repository files that GitHub Actions workflows run."""

from __future__ import annotations

import pytest

from frognano.policy.gate.automation import runs, script_paths, workflow_runners, workflow_scripts


def workflow(*steps: str, defaults: str = "") -> bytes:
    body = "".join(f"      - {step}\n" for step in steps)
    return (
        f"on: pull_request\n{defaults}jobs:\n  test:\n    runs-on: ubuntu-latest\n"
        f"    steps:\n{body}"
    ).encode()


@pytest.mark.parametrize(
    ("script", "paths"),
    [
        ("./scripts/x.sh", ["scripts/x.sh"]),
        ("./scripts/x.sh --fast && echo done", ["scripts/x.sh"]),
        ("bash ci/run", ["ci/run"]),
        ("sh -e ci/run.sh arg", ["ci/run.sh"]),
        ("python tools/check.py --strict", ["tools/check.py"]),
        ("python3 -u -W error tools/check.py", ["tools/check.py"]),
        ("node ./web/build.js", ["web/build.js"]),
        ("make -f ci.mk test", ["ci.mk"]),
        ("make --file=build/ci.mk", ["build/ci.mk"]),
        ("sh -c './inner.sh; source env.sh'", ["inner.sh", "env.sh"]),
        ("bash -ec 'bash ci/a.sh'", ["ci/a.sh"]),
        (". ./env.sh", ["env.sh"]),
        ("FOO=1 sudo -E ./root.sh", ["root.sh"]),
        ("timeout 60 ./slow.sh", ["slow.sh"]),
        ("uv run scripts/gen.py", ["scripts/gen.py"]),
        ("poetry run python scripts/gen.py", ["scripts/gen.py"]),
        ("if [ -f x ]; then ./cond.sh; fi", ["cond.sh"]),
        ("cd sub && ../up.sh && ./here.sh", ["up.sh", "sub/here.sh"]),
        ("./a.sh | ./b.sh > out.txt", ["a.sh", "b.sh"]),
        ("./first.sh\n./second.sh\n", ["first.sh", "second.sh"]),
        ("./long.sh \\\n  --flag", ["long.sh"]),
        # Not repository files: commands on PATH, modules, absolute paths, variables.
        ("python -m pytest -q", []),
        ("pytest tests/", []),
        ("make test", []),
        ("/usr/bin/env bash -c 'echo hi'", []),
        ("$HOME/bin/tool", []),
        ("./${{ matrix.script }}", []),
        ("echo './not-run.sh'", []),
        ("../outside.sh", []),
    ],
)
def test_script_paths(script: str, paths: list[str]) -> None:
    assert list(script_paths(script, "")) == paths


def test_run_steps_local_actions_and_working_directories() -> None:
    files = {
        ".github/workflows/ci.yml": workflow(
            "uses: actions/checkout@v4",
            "uses: ./tools/setup",
            "run: ./scripts/test.sh",
            "{run: ./build.sh, working-directory: web}",
            defaults="defaults:\n  run:\n    working-directory: svc\n",
        ),
        ".github/workflows/release.yaml": workflow("run: python tools/release.py"),
    }

    assert workflow_runners(files) == {
        "svc/scripts/test.sh": (".github/workflows/ci.yml",),  # the workflow's default folder
        "tools/release.py": (".github/workflows/release.yaml",),
        "tools/setup/": (".github/workflows/ci.yml",),  # `uses:` is relative to the root
        "web/build.sh": (".github/workflows/ci.yml",),  # the step's own folder
    }


def test_scripts_and_local_actions_passed_in_are_followed() -> None:
    files = {
        ".github/workflows/ci.yml": workflow("uses: ./tools/setup", "run: ./scripts/test.sh"),
        "scripts/test.sh": b"#!/bin/sh\n./scripts/helper.sh\n",
        "tools/setup/action.yml": (
            b"runs:\n  using: composite\n  steps:\n    - run: ./deploy/prepare.sh\n"
            b"      shell: bash\n"
        ),
    }

    assert workflow_scripts(files) == {
        "scripts/test.sh",
        "scripts/helper.sh",
        "tools/setup/",
        "deploy/prepare.sh",
    }


def test_a_reusable_workflow_and_only_workflow_files_count() -> None:
    files = {
        ".github/workflows/ci.yml": (
            b"on: push\njobs:\n  call:\n    uses: ./.github/workflows/lib.yml\n"
        ),
        "docs/example.yml": workflow("run: ./not-a-workflow.sh"),
    }

    assert workflow_scripts(files) == {".github/workflows/lib.yml"}


@pytest.mark.parametrize(
    "data",
    [
        b"{{{ not yaml",
        b"",
        b"- a list\n",
        b"jobs: 3\n",
        b"jobs:\n  x:\n    steps: nope\n",
        b"\xff\xfe",
    ],
)
def test_invalid_or_odd_workflows_are_skipped(data: bytes) -> None:
    assert workflow_scripts({".github/workflows/bad.yml": data}) == frozenset()


def test_runs_matches_files_and_folders_in_any_case() -> None:
    entries = frozenset({"scripts/ci.sh", "tools/setup/"})

    assert runs("scripts/ci.sh", entries) == "scripts/ci.sh"
    assert runs("Scripts/CI.sh", entries) == "scripts/ci.sh"
    assert runs("tools/setup/index.js", entries) == "tools/setup/"
    assert runs("tools/setup.js", entries) is None
    assert runs("scripts/other.sh", entries) is None
