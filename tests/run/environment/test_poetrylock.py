"""poetry.lock's pins: the wanted groups and extras, `extra` decided here, hashes required."""

from __future__ import annotations

from typing import Any

from frognano.run.environment.poetrylock import poetry_lock_pins

H = [{"file": "x.whl", "hash": "sha256:" + "a" * 64}]


def _lock(*packages: dict[str, Any], version: str = "2.1") -> dict[str, Any]:
    return {"package": list(packages), "metadata": {"lock-version": version}}


def _pkg(name: str, **rest: Any) -> dict[str, Any]:
    return {"name": name, "version": "1.0", "groups": ["main"], "files": H, **rest}


def _lines(document: dict[str, Any]) -> list[str]:
    pins = poetry_lock_pins(document)
    assert pins is not None
    return [line.split(" --hash")[0] for line in pins.lines]


def test_groups_decide_and_extras_are_decided_before_pip_sees_them() -> None:
    assert _lines(_lock(
        _pkg("main-dep"),
        _pkg("dev-dep", groups=["dev"]),
        _pkg("docs-group", groups=["docs"]),
        _pkg("test-extra", markers='extra == "test"'),
        _pkg("docs-extra", markers="extra == 'docs'"),
        _pkg("win-test", markers='extra == "test" and sys_platform == "win32"'),
        _pkg("either", markers={"main": 'python_version < "3.12"', "dev": 'os_name == "nt"'},
             groups=["main", "dev"]),
    )) == [
        "dev-dep==1.0",
        "docs-extra==1.0 ; python_version < \"0\"",
        "either==1.0 ; os_name == \"nt\" or python_version < \"3.12\"",
        "main-dep==1.0",
        "test-extra==1.0",
        "win-test==1.0 ; python_version >= \"0\" and sys_platform == \"win32\"",
    ]  # fmt: skip


def test_a_group_without_a_marker_makes_the_pin_unconditional() -> None:
    document = _lock(_pkg("x", groups=["main", "dev"], markers={"main": 'sys_platform == "win32"'}))
    assert _lines(document) == ["x==1.0"]


def test_older_locks_and_packages_without_hashes_or_from_git_are_not_used() -> None:
    assert poetry_lock_pins(_lock(_pkg("x"), version="2.0")) is None
    assert poetry_lock_pins({"package": [_pkg("x")]}) is None
    pins = poetry_lock_pins(_lock(
        _pkg("nohash", files=[]),
        _pkg("fromgit", source={"type": "git", "url": "https://example.invalid/x.git"}),
        _pkg("fromindex", source={"type": "legacy", "url": "http://index.internal/simple"}),
    ))  # fmt: skip
    assert pins is not None
    assert [line.split(" --hash")[0] for line in pins.lines] == ["fromindex==1.0"]
    assert any("nohash 1.0 has no valid hash" in note for note in pins.notes)
    assert any("fromgit comes from a git source" in note for note in pins.notes)


def test_a_poetry_lock_value_cannot_add_a_line_or_an_option() -> None:
    pins = poetry_lock_pins(_lock(
        _pkg("a", version="1.0\n--extra-index-url http://evil.example/"),
        _pkg("b", files=[{"file": "b.whl", "hash": "sha256:" + "a" * 64 + "\n-i http://evil"}]),
    ))  # fmt: skip
    assert pins is not None
    assert pins.lines == []
    assert "evil" not in pins.text()
