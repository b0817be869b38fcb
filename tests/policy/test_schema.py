"""policies/schema.json and docs/policies.md stay true to the models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from frognano.policy.fileformat import SECTIONS, SECURITY_LISTS, file_schema, file_schema_text
from frognano.policy.merge import LEAVES
from frognano.policy.models import EffectivePolicy

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "policies" / "schema.json"
REGENERATE = "python -m frognano policy schema > policies/schema.json"


def test_committed_schema_is_current() -> None:
    committed = SCHEMA_FILE.read_text(encoding="utf-8")
    assert committed == file_schema_text(), (
        f"policies/schema.json is stale; regenerate it with: {REGENERATE}"
    )


def test_schema_text_is_stable_json() -> None:
    text = file_schema_text()
    assert text.endswith("}\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _objects(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if node.get("type") == "object":
            found.append(node)
        for value in node.values():
            found.extend(_objects(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_objects(value))
    return found


def test_every_object_rejects_unknown_keys_and_only_version_and_match_are_required() -> None:
    schema = file_schema()
    objects = _objects(schema)
    assert len(objects) == 2 + 1 + len(SECTIONS)  # file, defaults, rule, six sections
    for obj in objects:
        assert obj.get("additionalProperties") is False, obj.get("title")
    required = {obj["title"]: obj.get("required", []) for obj in objects}
    assert required.pop("FrogNano policy file") == ["version"]
    assert required.pop("RepoRule") == ["match"]
    assert all(not keys for keys in required.values()), required


def test_schema_lists_every_key_with_its_default() -> None:
    definitions = file_schema()["$defs"]
    defaults = EffectivePolicy().model_dump()
    for section, model in SECTIONS.items():
        properties = definitions[f"{model.__name__}Overlay"]["properties"]
        extras = {f"{key}_extra" for name, key in SECURITY_LISTS if name == section}
        assert [key for key in properties if key not in extras] == list(model.model_fields)
        for extra in extras:  # right after its list, adding entries of the same kind
            listed = list(properties)
            assert listed.index(extra) == listed.index(extra.removesuffix("_extra")) + 1
            assert properties[extra]["default"] == []
            assert "replaces the whole list" in properties[extra]["description"]
        for key, value in defaults[section].items():
            assert properties[key]["default"] == value, (section, key)
    rule = definitions["RepoRule"]["properties"]
    assert set(rule) == {"match", "enabled", *SECTIONS}
    assert set(definitions["Defaults"]["properties"]) == set(SECTIONS)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def test_every_key_is_documented_with_its_default() -> None:
    docs = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    rows = {line.split(" | ")[0].removeprefix("| ").strip("`"): line for line in docs.splitlines()}
    defaults = EffectivePolicy().model_dump()
    for leaf in LEAVES:
        if leaf == "enabled":
            assert "`enabled` (default `true`)" in docs
            continue
        section, key = leaf.split(".")
        assert leaf in rows, f"{leaf} missing from docs/policies.md"
        default = f"| `{_shown(defaults[section][key])}` |"
        assert default in rows[leaf], f"{leaf}: the documented default is not {default}"
