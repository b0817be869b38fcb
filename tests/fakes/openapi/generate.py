"""Cut the subset of GitHub's OpenAPI description that the fake GitHub server validates against.

Source: the npm package `@octokit/openapi`, file `generated/api.github.com.json` (OpenAPI 3.0.3).
We commit only the operations FrogNano calls plus every component they reference
(`api.github.com.subset.json`, next to this script), never the 13 MB original.

Regenerate (from the repository root):

    npm pack @octokit/openapi            # writes octokit-openapi-<version>.tgz; no install needed
    python tests/fakes/openapi/generate.py octokit-openapi-<version>.tgz

Add an operation to `OPERATIONS`, rerun, and commit the new subset with the script.

The subset is the official text except for the overlays in `OVERLAYS`, each one a documented
behaviour of the real API that the description leaves out (they are listed in the output under
`x-frognano-overlays`). Everything is otherwise kept as published, including OpenAPI 3.0's
`nullable`; `tests/fakes/github/spec.py` turns that into JSON Schema when it loads the file.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

MEMBER = "package/generated/api.github.com.json"
PACKAGE_JSON = "package/package.json"
OUTPUT = Path(__file__).with_name("api.github.com.subset.json")

# (method, path template) of every operation the fake serves.
OPERATIONS: list[tuple[str, str]] = [
    # apps
    ("get", "/app"),
    ("get", "/repos/{owner}/{repo}/installation"),
    ("post", "/app/installations/{installation_id}/access_tokens"),
    ("delete", "/installation/token"),
    ("post", "/app-manifests/{code}/conversions"),
    # repositories
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("get", "/repos/{owner}/{repo}/tarball/{ref}"),
    ("get", "/repos/{owner}/{repo}/commits"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}"),
    ("get", "/repos/{owner}/{repo}/compare/{basehead}"),
    # git data
    ("get", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("post", "/repos/{owner}/{repo}/git/refs"),
    ("patch", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("get", "/repos/{owner}/{repo}/git/commits/{commit_sha}"),
    ("post", "/repos/{owner}/{repo}/git/commits"),
    ("get", "/repos/{owner}/{repo}/git/blobs/{file_sha}"),
    ("post", "/repos/{owner}/{repo}/git/blobs"),
    ("get", "/repos/{owner}/{repo}/git/trees/{tree_sha}"),
    ("post", "/repos/{owner}/{repo}/git/trees"),
    # pulls
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("post", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/commits"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments"),
    ("get", "/repos/{owner}/{repo}/pulls/comments/{comment_id}"),
    ("post", "/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions"),
    # issues
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/reactions"),
    ("post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    # checks
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
]

# Path-level fields kept besides the operations themselves.
PATH_LEVEL_KEYS = ("parameters",)


def _add_labels_array_form(spec: dict[str, Any]) -> None:
    # The operation's own description says "You can also pass an `array` of labels directly",
    # and PyGithub's Issue.add_to_labels does exactly that (a bare JSON list of names), but
    # the published requestBody schema only lists the `{"labels": [...]}` object form.
    op = spec["paths"]["/repos/{owner}/{repo}/issues/{issue_number}/labels"]["post"]
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    schema["oneOf"].append({"type": "array", "minItems": 1, "items": {"type": "string"}})


OVERLAYS = {
    "add-labels-array-form": _add_labels_array_form,
}


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref)
        for value in node.values():
            found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _lookup(spec: dict[str, Any], ref: str) -> Any:
    if not ref.startswith("#/"):
        raise ValueError(f"external $ref not supported: {ref}")
    node: Any = spec
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def subset(full: dict[str, Any], version: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "openapi": full["openapi"],
        "info": {
            **{
                k: full["info"][k] for k in ("title", "description", "version") if k in full["info"]
            },
            "x-source": f"npm @octokit/openapi@{version}, {MEMBER.removeprefix('package/')}",
            "x-generated-by": "tests/fakes/openapi/generate.py",
        },
        "servers": full.get("servers", []),
        "paths": {},
        "components": {},
    }
    for method, path in OPERATIONS:
        item = full["paths"].get(path)
        if item is None or method not in item:
            raise SystemExit(f"operation not in the description: {method.upper()} {path}")
        target = out["paths"].setdefault(path, {})
        for key in PATH_LEVEL_KEYS:
            if key in item:
                target[key] = copy.deepcopy(item[key])
        target[method] = copy.deepcopy(item[method])

    # Pull in every component reachable from the kept operations, transitively.
    pending = _refs(out["paths"])
    seen: set[str] = set()
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        parts = ref[2:].split("/")
        if parts[0] != "components" or len(parts) != 3:
            raise SystemExit(f"unexpected $ref shape: {ref}")
        node = _lookup(full, ref)
        out["components"].setdefault(parts[1], {})[parts[2]] = copy.deepcopy(node)
        pending |= _refs(node) - seen
    for section in out["components"].values():
        for key in sorted(section):
            section[key] = section.pop(key)
    out["components"] = dict(sorted(out["components"].items()))

    for apply in OVERLAYS.values():
        apply(out)
    out["x-frognano-overlays"] = {
        name: (fn.__doc__ or _first_comment(fn)) for name, fn in OVERLAYS.items()
    }
    return out


def _first_comment(fn: Any) -> str:
    import inspect

    lines = [
        line.strip().removeprefix("# ")
        for line in inspect.getsource(fn).splitlines()
        if line.strip().startswith("#")
    ]
    return " ".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tarball", type=Path, help="the file `npm pack @octokit/openapi` wrote")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    with tarfile.open(args.tarball, "r:gz") as tar:
        meta = json.load(_member(tar, PACKAGE_JSON))
        full = json.load(_member(tar, MEMBER))
    result = subset(full, meta["version"])
    text = json.dumps(result, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
    args.output.write_text(text, encoding="utf-8")
    counts = {k: len(v) for k, v in result["components"].items()}
    print(
        f"{args.output}: @octokit/openapi@{meta['version']}, {len(OPERATIONS)} operations, "
        f"components {counts}, {len(text.encode()) / 1024:.0f} KB",
        file=sys.stderr,
    )
    return 0


def _member(tar: tarfile.TarFile, name: str) -> Any:
    handle = tar.extractfile(name)
    if handle is None:
        raise SystemExit(f"{name} not found in the tarball")
    return handle


if __name__ == "__main__":
    raise SystemExit(main())
