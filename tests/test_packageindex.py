"""The test package index itself: wheels built here and pytest's from PyPI install with pip
through proxpi into fresh virtual environments, and proxpi's log shows what was fetched."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.packageindex import (
    PYTEST_WHEELS,
    WHEEL_CACHE,
    PackageIndex,
    build_wheel,
    download_wheels,
    get_page,
    pip_environment,
    write_simple_index,
)


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A fresh virtual environment with its own pip; returns its Python."""
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    return tmp_path / "venv" / "bin" / "python"


def _pip_install(python: Path, index: PackageIndex, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", "install", "--index-url", index.url, *args],
        env=pip_environment(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _run(*argv: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(arg) for arg in argv], env=pip_environment(), cwd=cwd,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_build_wheel_is_deterministic_with_a_true_record(tmp_path: Path) -> None:
    modules = {"pkg/__init__.py": "X = 1\n", "pkg/sub.py": "Y = 2\n"}
    first = build_wheel(tmp_path / "a", "Fn.Probe_Det", "0.1", modules=modules, requires=["b>=1"])
    second = build_wheel(tmp_path / "b", "Fn.Probe_Det", "0.1", modules=modules, requires=["b>=1"])
    assert first.name == "fn_probe_det-0.1-py3-none-any.whl"
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as wheel:
        info = "fn_probe_det-0.1.dist-info"
        assert wheel.namelist()[-1] == f"{info}/RECORD"
        record = wheel.read(f"{info}/RECORD").decode().splitlines()
        assert sorted(line.split(",")[0] for line in record) == sorted(wheel.namelist())
        metadata = wheel.read(f"{info}/METADATA").decode()
        assert "Name: Fn.Probe_Det\n" in metadata
        assert "Requires-Dist: b>=1\n" in metadata
        assert wheel.read(f"{info}/top_level.txt") == b"pkg\n"


def test_built_wheel_installs_with_its_dependency(
    package_index: PackageIndex, venv: Path, tmp_path: Path
) -> None:
    alpha = build_wheel(
        tmp_path, "fn-probe-alpha", "2.0",
        modules={"fn_alpha/__init__.py": (
            "from fn_beta import VALUE\n\n\ndef main() -> None:\n    print(VALUE * 7)\n"
        )},
        # Spelled unlike the index's folder: pip and proxpi normalize it.
        requires=["FN_Probe.Beta>=1.0"],
        console_scripts={"fn-alpha": "fn_alpha:main"},
    )  # fmt: skip
    beta = build_wheel(tmp_path, "FN_Probe.Beta", "1.0", modules={"fn_beta.py": "VALUE = 6\n"})
    package_index.add_wheels([alpha, beta])

    done = _pip_install(venv, package_index, "fn-probe-alpha")
    assert done.returncode == 0, done.stderr
    assert "Successfully installed FN_Probe.Beta-1.0 fn-probe-alpha-2.0" in done.stdout
    assert _run(venv, "-c", "import fn_alpha; fn_alpha.main()") == "42\n"
    assert _run(venv.parent / "fn-alpha") == "42\n"

    log = package_index.log()
    for path in (
        "/index/fn-probe-alpha/",
        "/index/fn-probe-alpha/fn_probe_alpha-2.0-py3-none-any.whl",
        "/index/fn-probe-beta/",
        "/index/fn-probe-beta/fn_probe_beta-1.0-py3-none-any.whl",
    ):
        assert f'"GET {path} HTTP/1.1" 200' in log, log


def test_pytest_from_pypi_installs_and_runs(
    package_index: PackageIndex, venv: Path, tmp_path: Path
) -> None:
    wheels = download_wheels(WHEEL_CACHE, PYTEST_WHEELS)
    assert sorted(w.name.split("-")[0] for w in wheels) == [
        "iniconfig", "packaging", "pluggy", "pytest",
    ]  # fmt: skip
    assert download_wheels(WHEEL_CACHE, PYTEST_WHEELS) == wheels  # from the cache
    package_index.add_wheels(wheels)

    done = _pip_install(venv, package_index, "pytest==8.3.5")
    assert done.returncode == 0, done.stderr
    # In a folder of its own: from ours, pytest would load FrogNano's conftest.
    (tmp_path / "repo").mkdir()
    assert _run(venv, "-m", "pytest", "--version", cwd=tmp_path / "repo") == "pytest 8.3.5\n"
    (tmp_path / "repo" / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    assert "1 passed" in _run(
        venv, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=tmp_path / "repo"
    )

    log = package_index.log()
    for wheel in wheels:
        project = wheel.name.split("-")[0]
        assert f'"GET /index/{project}/{wheel.name} HTTP/1.1" 200' in log, log


def test_a_name_not_upstream_does_not_install(package_index: PackageIndex, venv: Path) -> None:
    done = _pip_install(venv, package_index, "fn-probe-absent")
    assert done.returncode != 0
    assert "No matching distribution found for fn-probe-absent" in done.stderr
    assert '"GET /index/fn-probe-absent/ HTTP/1.1" 404' in package_index.log()


def test_add_wheels_makes_proxpi_list_a_new_version(
    package_index: PackageIndex, venv: Path, tmp_path: Path
) -> None:
    def gamma(version: str) -> Path:
        modules = {"fn_gamma.py": f"VERSION = {version!r}\n"}
        return build_wheel(tmp_path, "fn-probe-gamma", version, modules=modules)

    package_index.add_wheels([gamma("1.0")])
    assert _pip_install(venv, package_index, "fn-probe-gamma").returncode == 0
    page = package_index.url + "fn-probe-gamma/"

    # Upstream alone: proxpi still lists what it cached, which is why add_wheels invalidates.
    newer = gamma("1.1")
    write_simple_index(package_index.upstream_dir, [newer])
    assert "fn_probe_gamma-1.1" in get_page(package_index.upstream_url + "fn-probe-gamma/")
    assert "fn_probe_gamma-1.1" not in get_page(page)

    package_index.add_wheels([newer])
    assert "fn_probe_gamma-1.1" in get_page(page)
    done = _pip_install(venv, package_index, "--upgrade", "fn-probe-gamma")
    assert done.returncode == 0, done.stderr
    assert _run(venv, "-c", "import fn_gamma; print(fn_gamma.VERSION)") == "1.1\n"

    # A published file never changes: other bytes under the same name are refused.
    changed = build_wheel(tmp_path / "other", "fn-probe-gamma", "1.1", modules={"x.py": ""})
    with pytest.raises(ValueError, match="other bytes"):
        package_index.add_wheels([changed])


def test_requires_python_reaches_pip_through_proxpi(
    package_index: PackageIndex, venv: Path, tmp_path: Path
) -> None:
    future = build_wheel(
        tmp_path, "fn-probe-future", "1.0", modules={"fn_future.py": ""}, requires_python=">=3.99"
    )
    package_index.add_wheels([future])
    assert 'data-requires-python="&gt;=3.99"' in get_page(package_index.url + "fn-probe-future/")
    done = _pip_install(venv, package_index, "fn-probe-future")
    assert done.returncode != 0
    assert "Requires-Python >=3.99" in done.stderr
