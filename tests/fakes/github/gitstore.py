"""The git object store: blobs, trees and commits hashed as git hashes them, and diffs."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

from tests.fakes.github.model import Repo, _error
from tests.fakes.github.state import _State


def _git_hash(kind: str, data: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(data)}\0".encode() + data, usedforsecurity=False).hexdigest()


def _tree_bytes(entries: list[dict[str, str]]) -> bytes:
    def key(e: dict[str, str]) -> bytes:
        name = e["name"].encode()
        return name + b"/" if e["type"] == "tree" else name

    out = b""
    for e in sorted(entries, key=key):
        mode = e["mode"].lstrip("0")
        out += f"{mode} {e['name']}".encode() + b"\0" + bytes.fromhex(e["sha"])
    return out


def _git_time(iso: str) -> str:
    dt = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return f"{int(dt.timestamp())} +0000"


class _GitStore(_State):
    """Each repository's git objects, and the history walks the operations share."""

    def file_at(self, full_name: str, ref_or_sha: str, path: str) -> bytes | None:
        """The bytes of `path` (a symlink gives its target) at a branch, full ref or commit SHA;
        None when the path is absent."""
        with self._lock:
            repo = self.repo(full_name)
            sha = self._resolve_commitish(repo, ref_or_sha)
            if sha is None:
                raise KeyError(f"{ref_or_sha} not found in {full_name}")
            entry = self._flatten(repo, repo.commits[sha]["tree"]).get(path)
            if entry is None or entry[1] != "blob":
                return None
            return repo.blobs[entry[2]]

    def files_at(self, full_name: str, ref_or_sha: str) -> dict[str, tuple[str, bytes]]:
        """Every blob at a commit: path -> (mode, bytes)."""
        with self._lock:
            repo = self.repo(full_name)
            sha = self._resolve_commitish(repo, ref_or_sha)
            if sha is None:
                raise KeyError(f"{ref_or_sha} not found in {full_name}")
            flat = self._flatten(repo, repo.commits[sha]["tree"])
            return {p: (m, repo.blobs[s]) for p, (m, t, s) in flat.items() if t == "blob"}

    # ---- internals: git -------------------------------------------------------------

    def _store_blob(self, repo: Repo, data: bytes) -> str:
        sha = _git_hash("blob", data)
        repo.blobs[sha] = data
        return sha

    def _store_tree(self, repo: Repo, entries: list[dict[str, str]]) -> str:
        sha = _git_hash("tree", _tree_bytes(entries))
        repo.trees[sha] = sorted(entries, key=lambda e: e["name"])
        return sha

    def _build_tree(self, repo: Repo, flat: dict[str, tuple[str, str, str]]) -> str:
        """flat: path -> (mode, type, sha) for blobs and submodules; returns the root tree."""
        children: dict[str, dict[str, tuple[str, str, str]]] = {}
        entries: list[dict[str, str]] = []
        for path, (mode, kind, sha) in flat.items():
            head, sep, rest = path.partition("/")
            if sep:
                children.setdefault(head, {})[rest] = (mode, kind, sha)
            else:
                entries.append({"name": head, "mode": mode, "type": kind, "sha": sha})
        for name, sub in children.items():
            entries.append(
                {"name": name, "mode": "040000", "type": "tree", "sha": self._build_tree(repo, sub)}
            )
        return self._store_tree(repo, entries)

    def _flatten(
        self, repo: Repo, tree_sha: str, prefix: str = ""
    ) -> dict[str, tuple[str, str, str]]:
        out: dict[str, tuple[str, str, str]] = {}
        for e in repo.trees[tree_sha]:
            path = prefix + e["name"]
            if e["type"] == "tree":
                out.update(self._flatten(repo, e["sha"], path + "/"))
            else:
                out[path] = (e["mode"], e["type"], e["sha"])
        return out

    def _store_commit(
        self,
        repo: Repo,
        message: str,
        tree: str,
        parents: list[str],
        *,
        author: dict[str, str],
        committer: dict[str, str],
        signed_by: str | None,
    ) -> str:
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
        lines.append(f"author {author['name']} <{author['email']}> {_git_time(author['date'])}")
        lines.append(
            f"committer {committer['name']} <{committer['email']}> {_git_time(committer['date'])}"
        )
        payload = "\n".join(lines) + "\n\n" + message
        sha = _git_hash("commit", payload.encode())
        repo.commits[sha] = {
            "sha": sha,
            "tree": tree,
            "parents": list(parents),
            "author": dict(author),
            "committer": dict(committer),
            "message": message,
            "verified": signed_by is not None,
            "payload": payload,
            "signed_by": signed_by,
        }
        return sha

    def _resolve_commitish(self, repo: Repo, ref: str) -> str | None:
        for candidate in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/{ref}"):
            if candidate in repo.refs:
                return repo.refs[candidate]
        if ref in repo.commits:
            return ref
        if len(ref) >= 7 and re.fullmatch(r"[0-9a-f]+", ref):
            found = [s for s in repo.commits if s.startswith(ref)]
            if len(found) == 1:
                return found[0]
        return None

    def _ancestors(self, repo: Repo, sha: str) -> list[str]:
        """sha and its ancestors, newest first (parents in order; fine for linear history)."""
        seen: list[str] = []
        stack = [sha]
        while stack:
            cur = stack.pop(0)
            if cur in seen or cur not in repo.commits:
                continue
            seen.append(cur)
            stack.extend(repo.commits[cur]["parents"])
        return seen

    def _require_nonempty(self, repo: Repo) -> None:
        if not repo.refs:
            raise _error(409, "Git Repository is empty.")

    # ---- internals: diffs ------------------------------------------------------------

    def _ahead(self, repo: Repo, base: str, head: str) -> list[str]:
        """Commits reachable from head but not base, oldest first."""
        if not base or not head:
            return []
        base_set = set(self._ancestors(repo, base))
        return [s for s in self._ancestors(repo, head) if s not in base_set][::-1]

    def _diff(self, repo: Repo, base: str, head: str) -> list[dict[str, Any]]:
        a = self._flatten(repo, repo.commits[base]["tree"])
        b = self._flatten(repo, repo.commits[head]["tree"])
        files = []
        for path in sorted(set(a) | set(b)):
            if a.get(path) == b.get(path):
                continue
            status = "added" if path not in a else "removed" if path not in b else "modified"
            sha = (b.get(path) or a[path])[2]
            files.append({"filename": path, "status": status, "sha": sha})
        return files

    # ---- internals: commit authors and signatures ---------------------------------

    def _git_user_for(self, person: dict[str, str]) -> dict[str, Any] | None:
        login = self._emails.get(person["email"])
        return self._user_json(login) if login else None

    def _verification(self, c: dict[str, Any]) -> dict[str, Any]:
        if c["verified"]:
            return {
                "verified": True,
                "reason": "valid",
                "signature": "-----BEGIN PGP SIGNATURE-----\n\nfake\n-----END PGP SIGNATURE-----\n",
                "payload": c["payload"],
                "verified_at": c["committer"]["date"],
            }
        return {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        }
