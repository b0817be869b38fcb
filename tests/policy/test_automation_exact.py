"""The files workflows run, exactly: each shell form, interpreter option and workflow key."""

from __future__ import annotations

import pytest

from frognano.policy.gate.automation import runs, script_paths, workflow_runners, workflow_scripts
from tests.policy.test_automation import workflow

CI = ".github/workflows/ci.yml"


@pytest.mark.parametrize(
    ("script", "paths"),
    [
        # separators, redirections, assignments, comments
        ("./a.sh; ./b.sh", ["a.sh", "b.sh"]),
        ("./a.sh & ./b.sh", ["a.sh", "b.sh"]),
        ("./a.sh || ./b.sh", ["a.sh", "b.sh"]),
        ("./a.sh |& ./b.sh", ["a.sh", "b.sh"]),
        ("(./a.sh)", ["a.sh"]),
        ("case x in a) ./a.sh;; esac", ["a.sh"]),
        ("./a.sh > ./log.sh", ["a.sh"]),
        ("./a.sh 2>> ./log.sh", ["a.sh"]),
        ("./a.sh < ./in.sh", ["a.sh"]),
        ("./a.sh &> ./log.sh", ["a.sh"]),
        ("FOO=bar BAZ='x y' ./a.sh", ["a.sh"]),
        ("./a.sh # ./b.sh", ["a.sh"]),
        ("# ./a.sh", []),
        ("./a.sh 'unbalanced", ["a.sh"]),
        ('./a.sh "x\n./b.sh"', ["a.sh", "b.sh"]),
        ("\n\n./a.sh\n", ["a.sh"]),
        # wrappers and runners
        ("sudo ./a.sh", ["a.sh"]),
        ("env -i ./a.sh", ["a.sh"]),
        ("nice -n 10 ./a.sh", ["a.sh"]),
        ("timeout 5m ./a.sh", ["a.sh"]),
        ("timeout 1.5 ./a.sh", ["a.sh"]),
        ("exec ./a.sh", ["a.sh"]),
        ("! ./a.sh", ["a.sh"]),
        ("while ./a.sh; do ./b.sh; done", ["a.sh", "b.sh"]),
        ("-x ./a.sh", ["a.sh"]),
        ("npx ./a.js", ["a.js"]),
        ("pnpm exec ./a.sh", ["a.sh"]),
        ("uv run python x.py", ["x.py"]),
        ("npm run build", []),
        ("uv sync", []),
        ("uv", []),
        ("sudo", []),
        ("yarn ./a.sh", []),
        # sourcing
        ("source env.sh", ["env.sh"]),
        ("source", []),
        (". ci/env.sh", ["ci/env.sh"]),
        # commands with a slash, shells and interpreters
        ("bin/tool arg", ["bin/tool"]),
        ("venv/bin/python x.py", ["venv/bin/python", "x.py"]),
        ("tools/bash ci.sh", ["tools/bash", "ci.sh"]),
        ("tools/runner ci.sh", ["tools/runner"]),
        ("sh x", ["x"]),
        ("dash x", ["x"]),
        ("ksh x", ["x"]),
        ("zsh x", ["x"]),
        ("csh x", ["x"]),
        ("tcsh x", ["x"]),
        ("fish x", ["x"]),
        ("bashx x", []),
        ("python3.11 x.py", ["x.py"]),
        ("pypy3 x.py", ["x.py"]),
        ("nodejs x.js", ["x.js"]),
        ("deno run x.ts", ["x.ts"]),
        ("bun run x.ts", ["x.ts"]),
        ("node run x.js", ["run"]),
        ("ruby x.rb", ["x.rb"]),
        ("perl x.pl", ["x.pl"]),
        ("php x.php", ["x.php"]),
        ("pwsh x.ps1", ["x.ps1"]),
        ("powershell x.ps1", ["x.ps1"]),
        ("Rscript x.R", ["x.R"]),
        ("lua x.lua", ["x.lua"]),
        ("tclsh x.tcl", ["x.tcl"]),
        ("tsx x.ts", ["x.ts"]),
        ("ts-node x.ts", ["x.ts"]),
        ("groovy x.groovy", ["x.groovy"]),
        ("pythonx x.py", []),
        ("echo x.sh", []),
        # interpreter options
        ("bash -c './a.sh'", ["a.sh"]),
        ("bash -xc './a.sh'", ["a.sh"]),
        ("bash -c", []),
        ("bash -c './a.sh' ./b.sh", ["a.sh"]),
        ("python -c 'import x' y.py", []),
        ("python -xc y.py", ["y.py"]),
        ("bash -o pipefail x.sh", ["x.sh"]),
        ("bash -O extglob x.sh", ["x.sh"]),
        ("bash -W error x.sh", ["error"]),
        ("python -W error x.py", ["x.py"]),
        ("python -W error -u -v x.py", ["x.py"]),
        ("python -X dev x.py", ["x.py"]),
        ("python -Q new x.py", ["x.py"]),
        ("python -o x.py", ["x.py"]),
        ("python -m tool x.py", []),
        ("node -e 'x' y.js", []),
        ("node --eval 'x' y.js", []),
        ("ruby -r x y.rb", []),
        ("node --require x y.js", []),
        ("bash -e x.sh", ["x.sh"]),
        ("bash -r x.sh", ["x.sh"]),
        ("bash -m x.sh", ["x.sh"]),
        ("python", []),
        ("python -u", []),
        # make
        ("make -f ci.mk", ["ci.mk"]),
        ("make --file ci.mk", ["ci.mk"]),
        ("make --makefile ci.mk", ["ci.mk"]),
        ("make --file=x.mk", ["x.mk"]),
        ("make --makefile=x.mk", ["x.mk"]),
        ("make -fci.mk", ["ci.mk"]),
        ("make -fx", ["x"]),
        ("make --file=a=b.mk", ["a=b.mk"]),
        ("gmake -f g.mk all", ["g.mk"]),
        ("make -f", []),
        ("make -f ci.mk -f more.mk", ["ci.mk", "more.mk"]),
        ("make -j4 test", []),
        ("make all -f", []),
        # paths and folders
        ("cd sub; ./a.sh", ["sub/a.sh"]),
        ("cd sub extra; ./a.sh", ["a.sh"]),
        ("cd /tmp && ./a.sh", ["a.sh"]),
        ("cd sub && cd .. && ./a.sh", ["a.sh"]),
        ("cd sub && cd inner && ../a.sh", ["sub/a.sh"]),
        ("cd $DIR && ./a.sh", ["a.sh"]),
        ("./a*.sh", []),
        ("./a?.sh", []),
        ("./[ab].sh", []),
        ("./{a,b}.sh", []),
        ("~/a.sh", []),
        ("`which x`/a.sh", []),
        ("/abs/a.sh", []),
        ("bash .", []),
        ("bash ..", []),
        ("bash ./x/../../a.sh", []),
        ("./${{ inputs.x }}.sh", []),
        ("./a.sh ${{\n inputs.x }} ./b.sh", ["a.sh"]),
    ],
)
def test_a_script_runs_exactly_these_paths(script: str, paths: list[str]) -> None:
    assert list(script_paths(script, "")) == paths


@pytest.mark.parametrize(
    ("workdir", "script", "paths"),
    [
        ("sub", "./a.sh", ["sub/a.sh"]),
        ("sub/", "./a.sh", ["sub/a.sh"]),
        ("sub", "../a.sh", ["a.sh"]),
        ("sub", "../../a.sh", []),
        ("sub", ".", []),
        ("/abs", "./a.sh", []),
        ("$DIR", "./a.sh", ["a.sh"]),
        ("a*b", "./a.sh", ["a.sh"]),
        ("\0", "./a.sh", ["a.sh"]),
        ("sub", "cd ..; ./a.sh", ["a.sh"]),
        ("sub", "make -fci.mk --file=x.mk -f y.mk", ["sub/ci.mk", "sub/x.mk", "sub/y.mk"]),
        ("sub", "python x.py", ["sub/x.py"]),
        ("sub", "source x.sh", ["sub/x.sh"]),
        ("sub", "cd ../..; ./a.sh", ["a.sh"]),
    ],
)
def test_paths_are_relative_to_the_working_directory(
    workdir: str, script: str, paths: list[str]
) -> None:
    assert list(script_paths(script, workdir)) == paths


def test_a_step_shell_is_scanned_and_a_python_shell_hides_its_run() -> None:
    files = {
        CI: workflow(
            "run: x\n        shell: bash ./ci/wrap.sh {0}",
            "run: ./not-shell.sh\n        shell: python",
            "run: ./py3.sh\n        shell: python3 -u {0}",
            "run: ./plain.sh\n        shell: bash",
        )
    }
    assert workflow_runners(files) == {"ci/wrap.sh": (CI,), "plain.sh": (CI,)}


def test_working_directories_of_job_step_and_workflow() -> None:
    files = {
        CI: (
            b"on: push\ndefaults:\n  run:\n    working-directory: top\njobs:\n"
            b"  a:\n    defaults:\n      run:\n        working-directory: job\n"
            b"    steps:\n      - run: ./in-job.sh\n"
            b"      - {run: ./in-step.sh, working-directory: step}\n"
            b"      - {run: ./odd.sh, working-directory: 3}\n"
            b"  b:\n    steps:\n      - run: ./in-top.sh\n"
            b"  c:\n    defaults:\n      run: 3\n    steps:\n      - run: ./c.sh\n"
            b"  d:\n    defaults: 3\n    steps:\n      - run: ./d.sh\n"
            b"  e:\n    defaults:\n      run:\n        working-directory: 3\n"
            b"    steps:\n      - run: ./e.sh\n"
        )
    }
    assert workflow_scripts(files) == {
        "job/in-job.sh",
        "step/in-step.sh",
        "job/odd.sh",
        "top/in-top.sh",
        "top/c.sh",
        "top/d.sh",
        "top/e.sh",
    }


@pytest.mark.parametrize(
    ("uses", "paths"),
    [
        ("./tools/x", {"tools/x/"}),
        ("./tools/x@v1", {"tools/x/"}),
        ("./tools/x/", {"tools/x/"}),
        ("./", {"action.yml", "action.yaml"}),
        ("./.github/workflows/lib.yml@main", {".github/workflows/lib.yml"}),
        ("./.github/workflows/lib.yaml", {".github/workflows/lib.yaml"}),
        ("./../x", set()),
        ("./$X", set()),
        ("actions/checkout@v4", set()),
        ("docker://alpine", set()),
        ("tools/x", set()),
    ],
)
def test_a_step_uses_a_local_action_or_workflow(uses: str, paths: set[str]) -> None:
    assert workflow_scripts({CI: workflow(f"uses: {uses}")}) == paths


def test_a_job_uses_a_reusable_workflow_or_a_local_folder() -> None:
    files = {CI: b"on: push\njobs:\n  a:\n    uses: ./tools/reusable\n  b:\n    uses: 3\n  c: 3\n"}
    assert workflow_runners(files) == {"tools/reusable/": (CI,)}


def test_local_actions_and_scripts_are_followed_with_their_runners() -> None:
    release = ".github/workflows/release.yaml"
    files = {
        CI: workflow("uses: ./act", "run: ./ci/run"),
        release: workflow("uses: ./other", "run: ./notes.txt"),
        "act/action.yaml": (
            b"runs:\n  using: composite\n  steps:\n    - {run: ./inner.sh, shell: bash}\n"
        ),
        "other/action.yml": b"runs:\n  using: node20\n  main: index.js\n",
        "ci/run": b"#!/bin/sh\nsh ci/helper.sh\n",
        "ci/helper.sh": b"bash ci/deep.sh\n",
        "notes.txt": b"./never.sh\n",
        "docs/action.yml": b"runs:\n  steps:\n    - run: ./docs-only.sh\n",
    }
    assert workflow_runners(files) == {
        "act/": (CI,),
        "ci/deep.sh": (CI,),
        "ci/helper.sh": (CI,),
        "ci/run": (CI,),
        "inner.sh": (CI,),
        "notes.txt": (release,),
        "other/": (release,),
    }


def test_a_script_run_by_two_workflows_names_both_sorted() -> None:
    files = {
        ".github/workflows/b.yml": workflow("run: ./x.sh"),
        ".github/workflows/a.yaml": workflow("run: bash x.sh"),
        ".github/workflows/sub/c.yml": workflow("run: ./y.sh"),
        ".github/workflows/c.txt": workflow("run: ./z.sh"),
    }
    assert workflow_runners(files) == {
        "x.sh": (".github/workflows/a.yaml", ".github/workflows/b.yml")
    }


def test_a_workflow_without_jobs_or_with_odd_steps_runs_nothing() -> None:
    files = {
        ".github/workflows/a.yml": b"on: push\n",
        ".github/workflows/b.yml": b"jobs:\n  a:\n    steps:\n      - 3\n      - run: 3\n",
        ".github/workflows/c.yml": b"runs: 3\n",
        ".github/workflows/d.yml": b"jobs: [1]\n",
        ".github/workflows/e.yml": b"&a [*a]\n",
    }
    assert workflow_runners(files) == {}


def test_runs_takes_the_first_entry_in_order_and_accepts_a_mapping() -> None:
    runners = {"a/b/": ("w",), "a/": ("v",), "A/c.sh": ("u",)}
    assert runs("a/b/c.sh", runners) == "a/"
    assert runs("a/c.sh", runners) == "A/c.sh"
    assert runs("a/", runners) == "a/"
    assert runs("A", runners) is None
    assert runs("b/a/", runners) is None
