"""A real package index for tests: wheels built or downloaded at test time, a static PEP 503
index of them served over HTTP (the upstream), and proxpi, a caching PyPI proxy, in front of
it, as an admin would run the one index FrogNano's environment phase installs through.

The `package_index` fixture (tests/conftest.py) runs `serve_package_index` for the session.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

# Set by .ci/run: the Python of an environment with proxpi (it brings Flask, so not ours).
PROXPI_ENV_VAR = "FNTEST_PROXPI"
PROXPI_VERSION = "1.3.1"  # the version .ci/run pins

# pytest and everything it needs on Python 3.11, each pinned: what repositories under test get.
PYTEST_WHEELS = ("pytest==8.3.5", "pluggy==1.5.0", "iniconfig==2.0.0", "packaging==24.2")

# Downloaded wheels, kept across runs: PyPI is asked once per requirement list.
WHEEL_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "frognano-tests" / "wheels"
)

START_TIMEOUT = 30.0  # seconds for a server to report its port and answer
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time zip stores: same bytes on every build
_PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+")
_ANSI_STYLE = re.compile(r"\x1b\[[0-9;]*m")
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy

# proxpi's Flask app in werkzeug's threaded server on a port the OS picks (no race for a free
# port); the first line of stdout says which. werkzeug logs each request to stderr.
_PROXPI_SERVE = """
import sys
from werkzeug.serving import make_server
from proxpi.server import app
server = make_server(sys.argv[1], 0, app, threaded=True)
print("port", server.port, flush=True)
server.serve_forever()
"""


def normalize(name: str) -> str:
    """A project name as PEP 503 normalizes it (the index's folder names)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _escape(name: str) -> str:
    """A project name as it appears in a wheel's file name (binary distribution format)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def build_wheel(
    dest: Path,
    name: str,
    version: str,
    *,
    modules: Mapping[str, str],
    requires: Sequence[str] = (),
    requires_python: str | None = None,
    console_scripts: Mapping[str, str] | None = None,
) -> Path:
    """Write a pure-Python wheel `dest/NAME-VERSION-py3-none-any.whl` and return its path.

    `modules` maps paths inside the wheel (`pkg/__init__.py`, `mod.py`) to their source;
    `requires` become Requires-Dist lines and `console_scripts` maps a command to
    `module:function`. The same arguments always give the same bytes.
    """
    for path in modules:
        parts = path.split("/")
        if path.startswith("/") or ".." in parts or parts[0].endswith(".dist-info"):
            raise ValueError(f"module path {path!r} must be relative and inside the wheel")
    stem = f"{_escape(name)}-{version}"
    info = f"{stem}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python is not None:
        metadata.append(f"Requires-Python: {requires_python}")
    metadata += [f"Requires-Dist: {requirement}" for requirement in requires]
    files = {path: source.encode() for path, source in sorted(modules.items())}
    files[f"{info}/METADATA"] = "".join(f"{line}\n" for line in metadata).encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: frognano-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    top_level = sorted({path.split("/")[0].removesuffix(".py") for path in modules})
    files[f"{info}/top_level.txt"] = "".join(f"{top}\n" for top in top_level).encode()
    if console_scripts:
        lines = [f"{command} = {target}" for command, target in sorted(console_scripts.items())]
        files[f"{info}/entry_points.txt"] = "[console_scripts]\n{}\n".format(
            "\n".join(lines)
        ).encode()
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{info}/RECORD"] = f"{record}{info}/RECORD,,\n".encode()

    dest.mkdir(parents=True, exist_ok=True)
    wheel_path = dest / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel_path, "w") as wheel:
        for path, data in files.items():  # dist-info last, RECORD last of all, as pip writes
            entry = zipfile.ZipInfo(path, date_time=_ZIP_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
    return wheel_path


def wheel_metadata(wheel: Path) -> dict[str, str]:
    """The core metadata fields of `wheel` (Name, Version, Requires-Python...), one value each."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.count("/") == 1]
        found = [n for n in names if n.endswith(".dist-info/METADATA")]
        if len(found) != 1:
            raise ValueError(f"{wheel.name} has {len(found)} .dist-info/METADATA files, not 1")
        text = archive.read(found[0]).decode()
    return dict(HeaderParser().parsestr(text).items())


def pip_environment(*, no_cache: bool = True) -> dict[str, str]:
    """The environment for a pip (or Python) run under test: none of this machine's pip
    configuration (config files and PIP_* variables may name local wheel folders and extra
    indexes, which would let pip bypass the index under test) and no PYTHONPATH."""
    env = {
        key: value
        for key, value in os.environ.items()
        # PIP_CERT only says whom to trust for TLS; it names no packages.
        if (not key.startswith("PIP_") or key == "PIP_CERT") and key != "PYTHONPATH"
    }
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    if no_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    return env


def download_wheels(dest: Path, requirements: Sequence[str]) -> list[Path]:
    """Real wheels of `requirements` and their dependencies from PyPI, in a folder of `dest`
    (`WHEEL_CACHE` in tests) named by the requirement list and reused by later runs.

    Every requirement is `NAME==VERSION`, and a dependency that the list does not pin is an
    error, so the same list always gives the same wheels.
    """
    for requirement in requirements:
        if not _PIN.fullmatch(requirement):
            raise ValueError(f"{requirement!r} is not pinned as NAME==VERSION")
    pinned = {normalize(requirement.partition("==")[0]) for requirement in requirements}
    # Which wheel PyPI offers depends on the interpreter and platform as well as the list.
    key = json.dumps([sorted(requirements), sys.implementation.cache_tag, sysconfig.get_platform()])
    folder = dest / hashlib.sha256(key.encode()).hexdigest()[:16]

    def fill(partial: Path) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
             "--index-url", "https://pypi.org/simple", "--dest", str(partial),
             *requirements],
            env=pip_environment(no_cache=False), capture_output=True, text=True,
            timeout=600, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"pip download {' '.join(requirements)}:\n{done.stderr}")
        unpinned = sorted(
            {normalize(wheel_metadata(w)["Name"]) for w in partial.glob("*.whl")} - pinned
        )
        if unpinned:
            raise ValueError(f"dependencies not pinned in the list: {', '.join(unpinned)}")

    filled_once(folder, fill)
    return sorted(folder.glob("*.whl"))


def filled_once(folder: Path, fill: Callable[[Path], None]) -> None:
    """Make `folder` with `fill` (given an empty folder beside it) unless it exists: complete
    or absent, since a killed run leaves no half folder, and two runs at once both succeed."""
    if folder.is_dir():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=folder.parent))
    try:
        fill(partial)
        try:
            partial.rename(folder)
        except OSError:
            if not folder.is_dir():  # not just another run that finished first
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _write_atomically(path: Path, text: str) -> None:
    """The upstream server may be reading the page at that moment: never a half page."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def _page(title: str, links: Iterable[str]) -> str:
    body = "".join(f"    {link}<br>\n" for link in links)
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        '    <meta name="pypi:repository-version" content="1.0">\n'
        f"    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n"
        f"    <h1>{html.escape(title)}</h1>\n{body}  </body>\n</html>\n"
    )


def write_simple_index(root: Path, wheels: Iterable[Path]) -> None:
    """Copy `wheels` into `root/files/` and write the PEP 503 pages `root/simple/index.html`
    and `root/simple/<normalized-name>/index.html` for every wheel there.

    A file already there must have the same bytes: an index never changes a published file
    (and proxpi keeps the first one it fetched).
    """
    files = root / "files"
    files.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        target = files / wheel.name
        if target.exists():
            if target.read_bytes() != wheel.read_bytes():
                raise ValueError(f"{wheel.name} is already in the index with other bytes")
            continue
        shutil.copyfile(wheel, target)

    projects: dict[str, list[str]] = {}
    for wheel in sorted(files.glob("*.whl")):
        metadata = wheel_metadata(wheel)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        href = f"../../files/{urllib.parse.quote(wheel.name)}#sha256={digest}"
        attributes = f'href="{html.escape(href)}"'
        if "Requires-Python" in metadata:
            attributes += f' data-requires-python="{html.escape(metadata["Requires-Python"])}"'
        link = f"<a {attributes}>{html.escape(wheel.name)}</a>"
        projects.setdefault(normalize(metadata["Name"]), []).append(link)
    for project, links in projects.items():
        _write_atomically(
            root / "simple" / project / "index.html", _page(f"Links for {project}", links)
        )
    root_links = [f'<a href="{p}/">{p}</a>' for p in sorted(projects)]
    _write_atomically(root / "simple" / "index.html", _page("Simple index", root_links))


@dataclass
class PackageIndex:
    """proxpi serving at `url`, in front of the static index in `upstream_dir`."""

    host: str
    port: int
    upstream_dir: Path
    upstream_url: str
    log_path: Path
    started_in: float  # seconds from starting both servers to proxpi answering

    @property
    def url(self) -> str:
        """The simple index URL as pip takes it (`--index-url`)."""
        return f"http://{self.host}:{self.port}/index/"

    def add_wheels(self, paths: Iterable[Path]) -> None:
        """Publish wheels upstream; proxpi lists them on the next request."""
        paths = list(paths)
        write_simple_index(self.upstream_dir, paths)
        # proxpi keeps the project list and each project's file list for PROXPI_INDEX_TTL (30
        # minutes); its invalidation endpoints make it read the new pages the next time.
        self._request("DELETE", "/cache/list")
        for project in sorted({normalize(wheel_metadata(path)["Name"]) for path in paths}):
            self._request("DELETE", f"/cache/{project}")

    def log(self) -> str:
        """proxpi's log so far: its own messages and one line per request it served."""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        # werkzeug colours the request lines of some statuses (404 yellow...) even in a file.
        return _ANSI_STYLE.sub("", text)

    def _request(self, method: str, path: str) -> None:
        request = urllib.request.Request(f"http://{self.host}:{self.port}{path}", method=method)
        with _DIRECT.open(request, timeout=10):
            pass


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _start(stack: ExitStack, argv: list[str], env: Mapping[str, str], logs: Path, name: str) -> int:
    """Start a server that prints `port N` first on stdout; return N once it has."""
    out, log = logs / f"{name}.out", logs / f"{name}.log"
    # Files, not pipes: nobody reads a pipe while the tests run, and a full one blocks.
    with out.open("wb") as stdout, log.open("wb") as stderr:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=dict(env)
        )
    stack.callback(_stop, process)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        found = re.search(r"\bport (\d+)", out.read_text(errors="replace"))
        if found:
            return int(found.group(1))
        if process.poll() is not None:
            break
        time.sleep(0.02)
    raise RuntimeError(
        f"{name} did not report its port (exit status {process.poll()}):\n"
        f"{log.read_text(errors='replace')}"
    )


def get_page(url: str) -> str:
    """The page at `url` (an index page: HTML asked for, no proxy), or HTTPError."""
    # proxpi answers 406 to a request that accepts neither HTML nor JSON.
    request = urllib.request.Request(url, headers={"Accept": "text/html"})  # noqa: S310 (ours)
    with _DIRECT.open(request, timeout=10) as response:
        text: str = response.read().decode()
    return text


def _wait_answering(url: str, process_log: Path) -> None:
    """Poll `url` until it answers 200 (a refused connection or an error status: not yet)."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            get_page(url)  # urllib raises for every status but 2xx
        except OSError as exc:  # URLError, HTTPError, refused, timed out
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{url} did not answer ({exc}):\n{process_log.read_text(errors='replace')}"
                ) from None
        else:
            return
        time.sleep(0.05)


@contextmanager
def serve_package_index(
    proxpi_python: Path, workdir: Path, *, host: str = "127.0.0.1"
) -> Iterator[PackageIndex]:
    """Run an empty upstream index (`python -m http.server` over `workdir/upstream`) and proxpi
    in front of it, with `proxpi_python`; both are stopped on exit."""
    started = time.monotonic()
    upstream_dir = workdir / "upstream"
    write_simple_index(upstream_dir, [])
    logs = workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        upstream_port = _start(
            stack,
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", host,
             "--directory", str(upstream_dir)],
            os.environ, logs, "upstream",
        )  # fmt: skip
        upstream_url = f"http://{host}:{upstream_port}/simple/"
        env = {key: value for key, value in os.environ.items() if not key.startswith("PROXPI_")}
        env.update(
            PROXPI_INDEX_URL=upstream_url,
            PROXPI_CACHE_DIR=str(workdir / "proxpi-cache"),
            # Wait for upstream files instead of redirecting pip to them after 0.9 s, so
            # every file pip gets comes through proxpi (and its log).
            PROXPI_DOWNLOAD_TIMEOUT="60",
            PROXPI_CONNECT_TIMEOUT="5",
            PROXPI_READ_TIMEOUT="30",
            NO_PROXY=host,
            no_proxy=host,
        )
        port = _start(stack, [str(proxpi_python), "-c", _PROXPI_SERVE, host], env, logs, "proxpi")
        index = PackageIndex(
            host=host,
            port=port,
            upstream_dir=upstream_dir,
            upstream_url=upstream_url,
            log_path=logs / "proxpi.log",
            started_in=0.0,
        )
        _wait_answering(index.url, index.log_path)
        index.started_in = time.monotonic() - started
        yield index
