"""uv.lock's pins: reached packages only, markers joined along each path, hashes required."""

from __future__ import annotations

from typing import Any

import pytest

from frognano.run.environment.uvlock import uv_lock_pins

H = {"hash": "sha256:" + "a" * 64}


def _pkg(name: str, version: str = "1.0", **rest: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "version": version}
    entry["source"] = rest.pop("source", {"registry": "https://pypi.org/simple"})
    entry.setdefault("wheels", [H])
    entry.update(rest)
    return entry


def _root(**rest: Any) -> dict[str, Any]:
    return _pkg("proj", "0.1", source={"editable": "."}, **rest)


def _lines(*packages: dict[str, Any]) -> list[str]:
    pins = uv_lock_pins({"version": 1, "package": list(packages)})
    assert pins is not None
    return [line.split(" --hash")[0] for line in pins.lines]


def test_only_what_the_project_reaches_is_pinned() -> None:
    assert _lines(
        _root(dependencies=[{"name": "a"}]),
        _pkg("a", dependencies=[{"name": "b"}]),
        _pkg("b"),
        _pkg("unrelated"),
    ) == ["a==1.0", "b==1.0"]


def test_markers_are_joined_along_a_path_and_either_path_counts() -> None:
    lines = _lines(
        _root(dependencies=[{"name": "a", "marker": "sys_platform == 'win32'"},
                            {"name": "c", "marker": "python_version < '3.12'"}]),
        _pkg("a", dependencies=[{"name": "b", "marker": "python_version >= '3.9'"}]),
        _pkg("c", dependencies=[{"name": "b"}]),
        _pkg("b"),
    )  # fmt: skip
    assert lines == [
        'a==1.0 ; ((sys_platform == "win32"))',
        'b==1.0 ; ((python_version < "3.12")) or '
        '((python_version >= "3.9") and (sys_platform == "win32"))',
        'c==1.0 ; ((python_version < "3.12"))',
    ]


def test_an_unconditional_path_makes_the_pin_unconditional() -> None:
    lines = _lines(
        _root(dependencies=[{"name": "a", "marker": "os_name == 'nt'"}, {"name": "b"}]),
        _pkg("a", dependencies=[{"name": "b"}]),
        _pkg("b"),
    )
    assert lines == ['a==1.0 ; ((os_name == "nt"))', "b==1.0"]


def test_test_extras_groups_and_extras_on_edges_are_followed() -> None:
    lines = _lines(
        _root(**{
            "optional-dependencies": {"test": [{"name": "t"}], "docs": [{"name": "d"}]},
            "dev-dependencies": {"dev": [{"name": "g", "extra": ["fast"]}]},
        }),
        _pkg("t"), _pkg("d"),
        _pkg("g", "1.0", **{"optional-dependencies": {"fast": [{"name": "speedups"}]}}),
        _pkg("speedups"),
    )  # fmt: skip
    assert lines == ["g==1.0", "speedups==1.0", "t==1.0"]


def test_cycles_end_and_forks_pick_the_edge_version() -> None:
    lines = _lines(
        _root(dependencies=[{"name": "a"}, {"name": "n", "version": "2.0"}]),
        _pkg("a", dependencies=[{"name": "b"}]),
        _pkg("b", dependencies=[{"name": "a"}, {"name": "proj"}]),
        _pkg("n", "1.0"),
        _pkg("n", "2.0"),
    )
    assert lines == ["a==1.0", "b==1.0", "n==2.0"]


def test_a_package_without_hashes_or_from_elsewhere_is_left_out_with_a_note() -> None:
    pins = uv_lock_pins({"package": [
        _root(dependencies=[{"name": "nohash"}, {"name": "local"}]),
        _pkg("nohash", wheels=[]),
        _pkg("local", source={"path": "../local"}),
    ]})  # fmt: skip
    assert pins is not None
    assert pins.lines == []
    assert any("nohash 1.0 has no valid hash" in note for note in pins.notes)
    assert any("local comes from a path source" in note for note in pins.notes)


def test_every_hash_of_the_package_is_allowed() -> None:
    pins = uv_lock_pins({"package": [
        _root(dependencies=[{"name": "a"}]),
        _pkg("a", sdist={"hash": "sha256:" + "b" * 64}, wheels=[H, {"hash": "sha256:" + "c" * 64}]),
    ]})  # fmt: skip
    assert pins is not None
    assert pins.lines == [
        f"a==1.0 --hash=sha256:{'a' * 64} --hash=sha256:{'b' * 64} --hash=sha256:{'c' * 64}"
    ]


def test_a_lock_without_one_root_project_is_not_used() -> None:
    assert uv_lock_pins({"package": [_pkg("a")]}) is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "a\n--extra-index-url http://evil.example/simple/"),
        ("version", "1.0\n--extra-index-url http://evil.example/simple/"),
        ("version", "1.0 --index-url=http://evil.example/simple/"),
        ("hash", "sha256:" + "a" * 64 + "\n-r /etc/passwd"),
        ("hash", "sha256:" + "a" * 64 + " --index-url=http://evil.example/"),
    ],
)
def test_a_lock_value_cannot_add_a_line_or_an_option_to_pips_file(field: str, value: str) -> None:
    target = _pkg("a")
    if field == "hash":
        target["wheels"] = [{"hash": value}]
    else:
        target[field] = value
    edge = {"name": target["name"]}
    pins = uv_lock_pins({"package": [_root(dependencies=[edge]), target]})
    assert pins is not None
    assert pins.lines == []
    assert "evil" not in pins.text()
    assert "passwd" not in pins.text()
    assert any("left out" in note for note in pins.notes), pins.notes
