"""Host folders a sandbox shows, named by placeholders in text that gets published."""

from __future__ import annotations

import sys
from pathlib import Path

from frognano.sandbox.base import Sandbox
from frognano.sandbox.hostpaths import HostPaths, host_paths_of
from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.pyenv import PythonEnv, resolve_python_env

PATHS = HostPaths.of(
    [("/srv/venv", "<python>"), ("/opt/py3.11/", "<python-base>"), ("/srv/venv/inner", "<in>")]
)


def test_whole_folders_only_the_innermost_first() -> None:
    assert PATHS.pairs == (
        ("/srv/venv/inner", "<in>"),
        ("/opt/py3.11", "<python-base>"),
        ("/srv/venv", "<python>"),
    )
    text = (
        'File "/srv/venv/lib/site.py", line 1 (/opt/py3.11/bin/python3 -m x)\n'
        "/srv/venv /srv/venv/inner/a /srv/venv2/x /x/srv/venv /srv/venv.old '/srv/venv':\n"
        "see /srv/venv."
    )
    assert PATHS.hide(text) == (
        'File "<python>/lib/site.py", line 1 (<python-base>/bin/python3 -m x)\n'
        "<python> <in>/a /srv/venv2/x /x/srv/venv /srv/venv.old '<python>':\n"
        "see <python>."
    )
    assert HostPaths().hide(text) == text
    assert PATHS.hide("") == ""


def test_what_is_not_an_absolute_folder_is_dropped_and_the_first_name_kept() -> None:
    paths = HostPaths.of([("/", "<root>"), ("rel/dir", "<rel>"), ("/a", "<a>"), ("/a/", "<b>")])
    assert paths.pairs == (("/a", "<a>"),)
    assert HostPaths.from_json(paths.to_json()) == paths
    assert HostPaths.from_json([["/a", "<a>"], ["/b"], [1, "<c>"], "x"]) == paths
    assert HostPaths.from_json({"/a": "<a>"}) == HostPaths()


def test_the_python_environment_names_itself_and_what_else_it_mounts(tmp_path: Path) -> None:
    real = tmp_path / "real-venv"
    real.mkdir()
    link = tmp_path / "venv"
    link.symlink_to(real)
    env = PythonEnv(link, link / "bin", (link, tmp_path / "base", tmp_path / "other"), True, "x")
    assert dict((folder, name) for folder, name in env.host_paths().pairs) == {
        str(link): "<python>",
        str(real): "<python>",
        str(tmp_path / "base"): "<python-base>",
        str(tmp_path / "other"): "<python-base-2>",
    }
    own = resolve_python_env(None).host_paths()
    assert own.hide(f"{sys.prefix}/lib").startswith("<python>")
    for mount in resolve_python_env(None).mounts:
        assert str(mount) not in own.hide(str(mount))


def test_a_sandbox_that_names_no_folder_has_none() -> None:
    # The Sandbox protocol's `host_paths` is None for a backend that shows no host folder
    # (a Kubernetes pod); a sandbox without the attribute no longer meets the protocol.
    class Pod:
        host_paths = None

    assert host_paths_of(Pod()) == HostPaths()


async def test_a_local_sandbox_names_its_python_through_the_protocol(
    default_sandbox: LocalSandbox,
) -> None:
    seen: Sandbox = default_sandbox
    assert seen.mechanism in {"bwrap", "unshare"}
    assert seen.python_env is not None
    assert seen.host_paths == seen.python_env.host_paths() == host_paths_of(seen)


def test_the_system_folders_keep_their_names() -> None:
    """A Python installed under /usr (a container image's /usr/local) is the same on every
    host: `/usr/bin/env` in a traceback stays as it is."""
    env = PythonEnv(Path("/usr/local"), Path("/usr/local/bin"), (Path("/usr/local"),), False, "x")
    assert env.host_paths() == HostPaths()
    assert (
        env.host_paths().hide("/usr/local/lib/python3.11/x.py") == "/usr/local/lib/python3.11/x.py"
    )
