"""GitHub's OpenAPI description (the committed subset), converted to JSON Schema and indexed."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC_PATH = Path(__file__).parent.parent / "openapi" / "api.github.com.subset.json"
SPEC_URI = "urn:github:rest"


@dataclass
class _Operation:
    method: str
    template: str
    regex: re.Pattern[str]
    operation_id: str
    op: dict[str, Any]
    pointer: str  # JSON pointer of the operation inside the spec


def _to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schema dialect -> JSON Schema 2020-12 (`nullable` is the only difference
    that matters for validation here)."""
    if isinstance(node, list):
        return [_to_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _to_json_schema(v) for k, v in node.items()}
    if out.pop("nullable", False) is True:
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _pointer(*parts: str) -> str:
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass
class _Spec:
    document: dict[str, Any]
    registry: Registry[Any]
    operations: list[_Operation]
    info: dict[str, Any]
    validators: dict[str, Draft202012Validator] = field(default_factory=dict)

    def validator(self, pointer: str) -> Draft202012Validator:
        if pointer not in self.validators:
            self.validators[pointer] = Draft202012Validator(
                {"$ref": f"{SPEC_URI}#{pointer}"}, registry=self.registry
            )
        return self.validators[pointer]

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            target: Any = self.document
            for part in node["$ref"][2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node


# Path parameters that may contain slashes.
_GREEDY_PARAMS = {"ref", "basehead"}


@functools.cache
def load_spec() -> _Spec:
    """The committed subset, converted and indexed (cached per process)."""
    raw = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
    document = _to_json_schema(raw)
    registry: Registry[Any] = Registry().with_resource(
        SPEC_URI, Resource.from_contents(document, default_specification=DRAFT202012)
    )
    operations = []
    for template, item in document["paths"].items():
        pattern = re.sub(
            r"\{(\w+)\}",
            lambda m: f"(?P<{m[1]}>.+)" if m[1] in _GREEDY_PARAMS else f"(?P<{m[1]}>[^/]+)",
            template,
        )
        for method, op in item.items():
            if method == "parameters":
                continue
            operations.append(
                _Operation(
                    method.upper(),
                    template,
                    re.compile(f"^{pattern}$"),
                    op["operationId"],
                    op,
                    _pointer("paths", template, method),
                )
            )
    # Literal segments first, so /issues/comments/{id} never reads as /issues/{number}.
    operations.sort(key=lambda o: (o.template.count("{"), -len(o.template)))
    return _Spec(document, registry, operations, raw["info"])
