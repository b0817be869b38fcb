"""The Git Data API: refs, commits, blobs and trees."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from tests.fakes.github.auth import _Auth
from tests.fakes.github.gitstore import _GitStore
from tests.fakes.github.model import (
    Repo,
    _error,
    _node_id,
    _now_iso,
    _Request,
    _Response,
    _validation_failed,
)


class _GitData(_Auth, _GitStore):
    """Refs, commits, blobs and trees through the Git Data API."""

    def _git_commit_json(self, repo: Repo, sha: str) -> dict[str, Any]:
        c = repo.commits[sha]
        api = f"{self.base_url}/repos/{repo.full_name}"
        return {
            "sha": sha,
            "node_id": _node_id("C", sha),
            "url": f"{api}/git/commits/{sha}",
            "html_url": f"https://github.com/{repo.full_name}/commit/{sha}",
            "author": dict(c["author"]),
            "committer": dict(c["committer"]),
            "tree": {"sha": c["tree"], "url": f"{api}/git/trees/{c['tree']}"},
            "message": c["message"],
            "parents": [
                {
                    "sha": p,
                    "url": f"{api}/git/commits/{p}",
                    "html_url": f"https://github.com/{repo.full_name}/commit/{p}",
                }
                for p in c["parents"]
            ],
            "verification": self._verification(c),
        }

    # ---- operations: git data -----------------------------------------------------------

    def _ref_json(self, repo: Repo, ref: str) -> dict[str, Any]:
        sha = repo.refs[ref]
        api = f"{self.base_url}/repos/{repo.full_name}"
        return {
            "ref": ref,
            "node_id": _node_id("REF", ref),
            "url": f"{api}/git/{ref}",
            "object": {"type": "commit", "sha": sha, "url": f"{api}/git/commits/{sha}"},
        }

    def _op_git__get_ref(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        ref = "refs/" + req.params["ref"]
        if ref not in repo.refs:
            raise _error(404, "Not Found")
        return _Response(200, self._ref_json(repo, ref))

    def _op_git__create_ref(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "write")
        ref, sha = req.body["ref"], req.body["sha"]
        if not ref.startswith("refs/") or ref.count("/") < 2 or ref.endswith("/") or ".." in ref:
            raise _error(422, f"{ref} is not a valid ref name.")
        if sha not in repo.commits:
            raise _error(422, "Object does not exist")
        if ref in repo.refs:
            raise _error(422, "Reference already exists")
        repo.refs[ref] = sha
        return _Response(
            201, self._ref_json(repo, ref), {"Location": self._ref_json(repo, ref)["url"]}
        )

    def _op_git__update_ref(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "write")
        self._require_nonempty(repo)
        ref = "refs/" + req.params["ref"]
        sha = req.body["sha"]
        if ref not in repo.refs:
            raise _error(422, "Reference does not exist")
        if sha not in repo.commits:
            raise _error(422, "Object does not exist")
        if not req.body.get("force", False) and repo.refs[ref] not in self._ancestors(repo, sha):
            raise _error(422, "Update is not a fast forward")
        repo.refs[ref] = sha
        return _Response(200, self._ref_json(repo, ref))

    def _op_git__get_commit(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        sha = req.params["commit_sha"]
        if sha not in repo.commits:
            raise _error(404, "Not Found")
        return _Response(200, self._git_commit_json(repo, sha))

    def _op_git__create_commit(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "write")
        body = req.body
        if body["tree"] not in repo.trees:
            raise _error(422, "Tree SHA does not exist")
        for parent in body.get("parents", []):
            if parent not in repo.commits:
                raise _error(422, "Parent SHA does not exist or is not a commit object")
        now = _now_iso(self.now())
        author_in, committer_in = body.get("author"), body.get("committer")
        custom = author_in is not None or committer_in is not None or "signature" in body
        actor = self._actor(req)
        if author_in is None:
            info = self._user(actor)
            default = {
                "name": actor,
                "email": f"{info['id']}+{actor}@users.noreply.github.com",
                "date": now,
            }
        author = {**(default if author_in is None else author_in)}
        author.setdefault("date", now)
        if committer_in is not None:
            committer = {**committer_in}
            committer.setdefault("date", now)
        elif author_in is not None:
            committer = {**author, "date": now}
        else:
            committer = {"name": "GitHub", "email": "noreply@github.com", "date": now}
        for person in (author, committer):
            person["date"] = _normalise_date(person["date"])
        signed = None if custom or req.identity.kind != "installation" else self.bot_login
        sha = self._store_commit(
            repo,
            body["message"],
            body["tree"],
            list(body.get("parents", [])),
            author=author,
            committer=committer,
            signed_by=signed,
        )
        out = self._git_commit_json(repo, sha)
        return _Response(201, out, {"Location": out["url"]})

    def _op_git__create_blob(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "write")
        encoding = req.body.get("encoding", "utf-8")
        content = req.body["content"]
        if encoding == "base64":
            try:
                data = base64.b64decode(content, validate=False)
            except ValueError as exc:
                raise _error(422, "Invalid base64 content") from exc
        elif encoding in ("utf-8", "utf8"):
            data = content.encode()
        else:
            raise _validation_failed(
                "Blob", "encoding", "invalid", f"encoding {encoding} is not supported"
            )
        sha = self._store_blob(repo, data)
        url = f"{self.base_url}/repos/{repo.full_name}/git/blobs/{sha}"
        return _Response(201, {"url": url, "sha": sha}, {"Location": url})

    def _op_git__get_blob(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        sha = req.params["file_sha"]
        if sha not in repo.blobs:
            raise _error(404, "Not Found")
        data = repo.blobs[sha]
        encoded = base64.encodebytes(data).decode()
        return _Response(
            200,
            {
                "sha": sha,
                "node_id": _node_id("B", sha),
                "size": len(data),
                "url": f"{self.base_url}/repos/{repo.full_name}/git/blobs/{sha}",
                "content": encoded,
                "encoding": "base64",
            },
        )

    def _tree_json(self, repo: Repo, sha: str, recursive: bool) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        entries: list[dict[str, Any]] = []

        def walk(tree_sha: str, prefix: str) -> None:
            for e in repo.trees[tree_sha]:
                item: dict[str, Any] = {
                    "path": prefix + e["name"],
                    "mode": e["mode"],
                    "type": e["type"],
                    "sha": e["sha"],
                }
                if e["type"] == "blob":
                    item["size"] = len(repo.blobs[e["sha"]])
                    item["url"] = f"{api}/git/blobs/{e['sha']}"
                elif e["type"] == "tree":
                    item["url"] = f"{api}/git/trees/{e['sha']}"
                entries.append(item)
                if recursive and e["type"] == "tree":
                    walk(e["sha"], prefix + e["name"] + "/")

        walk(sha, "")
        return {"sha": sha, "url": f"{api}/git/trees/{sha}", "tree": entries, "truncated": False}

    def _op_git__get_tree(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        ref = req.params["tree_sha"]
        sha: str | None = ref if ref in repo.trees else None
        if sha is None:
            commit = self._resolve_commitish(repo, ref)
            sha = repo.commits[commit]["tree"] if commit else None
        if sha is None:
            raise _error(404, "Not Found")
        recursive = bool(req.query.get("recursive", [""])[-1])
        return _Response(200, self._tree_json(repo, sha, recursive))

    def _op_git__create_tree(self, req: _Request) -> _Response:  # noqa: PLR0912 - one rule a branch
        repo = self._access(req, "contents", "write")
        base = req.body.get("base_tree")
        flat: dict[str, tuple[str, str, str]] = {}
        if base is not None:
            if base not in repo.trees:
                commit = repo.commits.get(base)
                if commit is None:
                    raise _error(422, "Invalid tree info (base_tree does not exist)")
                base = commit["tree"]
            flat = self._flatten(repo, base)
        expected_type = {
            "100644": "blob",
            "100755": "blob",
            "120000": "blob",
            "040000": "tree",
            "160000": "commit",
        }
        for i, entry in enumerate(req.body["tree"]):
            path, mode, kind = entry.get("path"), entry.get("mode"), entry.get("type")
            where = f"tree.{i}"
            if not path or path.startswith("/") or path.endswith("/") or "//" in path:
                raise _error(422, f"{where}.path is invalid: {path!r}")
            if mode is None or kind is None:
                raise _error(422, f"{where} must have mode and type")
            if expected_type[mode] != kind:
                raise _error(422, f"{where}.type {kind} does not match mode {mode}")
            has_sha, has_content = "sha" in entry, "content" in entry
            if has_sha and has_content:
                raise _error(422, f"{where} may contain either sha or content, not both")
            if not has_sha and not has_content:
                raise _error(422, f"{where} must contain sha or content")
            if has_sha and entry["sha"] is None:
                removed = [p for p in flat if p == path or p.startswith(path + "/")]
                if not removed:
                    raise _error(422, f"{where}.path '{path}' does not exist in base_tree")
                for p in removed:
                    del flat[p]
                continue
            # a new entry replaces whatever was at the path or under it
            for p in [p for p in flat if p == path or p.startswith(path + "/")]:
                del flat[p]
            for parent in _parents(path):
                if parent in flat:
                    raise _error(422, f"{where}.path '{path}' is below the file '{parent}'")
            if has_content:
                if kind != "blob":
                    raise _error(422, f"{where}: content is only valid for blobs")
                flat[path] = (mode, "blob", self._store_blob(repo, entry["content"].encode()))
            elif kind == "blob":
                if entry["sha"] not in repo.blobs:
                    raise _error(422, f"{where}.sha {entry['sha']} is not a valid blob")
                flat[path] = (mode, "blob", entry["sha"])
            elif kind == "tree":
                if entry["sha"] not in repo.trees:
                    raise _error(422, f"{where}.sha {entry['sha']} is not a valid tree")
                for sub, value in self._flatten(repo, entry["sha"]).items():
                    flat[f"{path}/{sub}"] = value
            else:  # submodule
                if not re.fullmatch(r"[0-9a-f]{40}", entry["sha"]):
                    raise _error(422, f"{where}.sha is not a valid commit SHA")
                flat[path] = (mode, "commit", entry["sha"])
        sha = self._build_tree(repo, flat)
        out = self._tree_json(repo, sha, recursive=False)
        return _Response(201, out, {"Location": out["url"]})


def _parents(path: str) -> Iterator[str]:
    parts = path.split("/")
    for i in range(1, len(parts)):
        yield "/".join(parts[:i])


def _normalise_date(value: str) -> str:
    dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
