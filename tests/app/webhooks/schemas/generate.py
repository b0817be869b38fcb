"""Regenerate `webhooks.json`: the subset of GitHub's webhook schemas that the tests use.

The source is the npm package `@octokit/openapi-webhooks` (MIT), file
`package/generated/api.github.com.json`: GitHub's official OpenAPI 3.1 description of every
webhook, whose schemas are JSON Schema 2020-12. The subset keeps, for each event and action in
EVENTS, the request body schema and every component schema it reaches through `$ref`, unchanged
except that annotations that never affect validation (descriptions, titles, examples, ...) are
dropped to keep the file small. `$ref`s stay as they are and resolve against the kept
`components` map, so a document `{"$ref": "#/components/schemas/X", "components": ...}` validates
a payload exactly as the full description would.

    python tests/app/webhooks/schemas/generate.py                  # runs `npm pack` for VERSION
    python tests/app/webhooks/schemas/generate.py --tarball FILE   # an already downloaded tarball

To move to a newer release, change VERSION, run this script and commit both files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = "@octokit/openapi-webhooks"
VERSION = "12.1.0"
MEMBER = "package/generated/api.github.com.json"
OUT = Path(__file__).with_name("webhooks.json")

# (event, action) as GitHub sends them in X-GitHub-Event and the payload's `action`;
# ping has no action.
EVENTS: list[tuple[str, str | None]] = [
    ("ping", None),
    ("issues", "labeled"),
    ("issues", "unlabeled"),
    ("issues", "closed"),
    ("issue_comment", "created"),
    ("pull_request_review", "submitted"),
    ("pull_request_review", "dismissed"),
    ("pull_request_review_comment", "created"),
    ("pull_request", "synchronize"),
    ("pull_request", "reopened"),
    ("pull_request", "opened"),
    ("installation", "created"),
    ("installation", "deleted"),
    ("installation", "suspend"),
    ("installation", "unsuspend"),
    ("installation", "new_permissions_accepted"),
    ("installation_repositories", "added"),
    ("installation_repositories", "removed"),
    ("watch", "started"),
]

# Keywords that annotate a schema without constraining what it accepts.
ANNOTATIONS = {
    "description", "title", "example", "examples", "externalDocs",
    "readOnly", "writeOnly", "deprecated", "$comment",
}  # fmt: skip
SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "dependentSchemas"}
SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
SCHEMA_ONE = {
    "items", "additionalProperties", "not", "if", "then", "else", "contains",
    "propertyNames", "unevaluatedProperties", "unevaluatedItems",
}  # fmt: skip
REF_PREFIX = "#/components/schemas/"


def strip(schema: Any) -> Any:
    """`schema` without annotation keywords, recursively (property *names* are kept)."""
    if not isinstance(schema, dict):
        return schema  # true/false schemas
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ANNOTATIONS or key.startswith("x-"):
            continue
        if key in SCHEMA_MAPS:
            out[key] = {name: strip(sub) for name, sub in value.items()}
        elif key in SCHEMA_LISTS:
            out[key] = [strip(sub) for sub in value]
        elif key in SCHEMA_ONE:
            out[key] = strip(value)
        else:
            out[key] = value
    return out


def referenced(node: Any, components: dict[str, Any], seen: set[str]) -> None:
    """Add to `seen` every component schema that `node` reaches, transitively."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith(REF_PREFIX):
                raise SystemExit(f"unexpected $ref {ref!r}")
            name = ref.removeprefix(REF_PREFIX)
            if name not in seen:
                seen.add(name)
                referenced(components[name], components, seen)
        for value in node.values():
            referenced(value, components, seen)
    elif isinstance(node, list):
        for value in node:
            referenced(value, components, seen)


def spec_key(event: str, action: str | None) -> str:
    return event.replace("_", "-") + ("" if action is None else "-" + action.replace("_", "-"))


def subset(spec: dict[str, Any]) -> tuple[dict[str, str], list[str], dict[str, Any]]:
    components = spec["components"]["schemas"]
    events: dict[str, str] = {}
    headers: list[str] = []
    names: set[str] = set()
    for event, action in EVENTS:
        post = spec["webhooks"][spec_key(event, action)]["post"]
        ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        name = ref.removeprefix(REF_PREFIX)
        enum = components[name].get("properties", {}).get("action", {}).get("enum")
        if (enum or [None]) != [action]:
            raise SystemExit(f"{name}: action enum {enum!r} is not [{action!r}]")
        events[event if action is None else f"{event}.{action}"] = name
        names.add(name)
        referenced(components[name], components, names)
        required = [p["name"] for p in post["parameters"] if p["in"] == "header" and p["required"]]
        if headers and required != headers:
            raise SystemExit(f"{event}.{action}: headers differ: {required} != {headers}")
        headers = required
    return events, headers, {name: strip(components[name]) for name in sorted(names)}


def npm_pack(directory: Path) -> Path:
    result = subprocess.run(
        ["npm", "pack", "--silent", f"{PACKAGE}@{VERSION}"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    )
    return directory / result.stdout.strip().splitlines()[-1]


def generate(tarball: Path) -> dict[str, Any]:
    with tarfile.open(tarball) as archive:
        package = json.load(archive.extractfile("package/package.json"))  # type: ignore[arg-type]
        spec = json.load(archive.extractfile(MEMBER))  # type: ignore[arg-type]
    events, headers, schemas = subset(spec)
    return {
        "$comment": "Generated by tests/app/webhooks/schemas/generate.py; do not edit by hand.",
        "source": {
            "package": package["name"],
            "version": package["version"],
            "file": MEMBER.removeprefix("package/"),
            "tarball_sha256": hashlib.sha256(tarball.read_bytes()).hexdigest(),
            "license": package.get("license"),
        },
        "events": events,
        "headers": headers,
        "components": {"schemas": schemas},
    }


def dump(document: dict[str, Any]) -> str:
    """Readable JSON with one component schema per line: small, and diffs name the schema."""
    schemas = document["components"]["schemas"]
    head = {key: value for key, value in document.items() if key != "components"}
    lines = json.dumps(head, indent=1, sort_keys=True).rstrip("}").rstrip()
    rows = ",\n".join(
        f"  {json.dumps(name)}: {json.dumps(schemas[name], sort_keys=True, separators=(',', ':'))}"
        for name in sorted(schemas)
    )
    return f'{lines},\n "components": {{"schemas": {{\n{rows}\n }}}}\n}}\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tarball", type=Path, help=f"a downloaded {PACKAGE} tarball")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tarball = args.tarball or npm_pack(Path(tmp))
        document = generate(tarball)
    args.out.write_text(dump(document), encoding="utf-8")
    size = args.out.stat().st_size
    print(f"wrote {args.out} ({size:,} bytes, {len(document['components']['schemas'])} schemas)")


if __name__ == "__main__":
    main()
