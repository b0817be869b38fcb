"""Tarball downloads: the 302 to a one-time codeload URL, and the gzip tarball it serves."""

from __future__ import annotations

import gzip
import io
import secrets
import tarfile
from datetime import UTC, datetime

from tests.fakes.github.auth import _Auth
from tests.fakes.github.gitstore import _GitStore
from tests.fakes.github.model import _error, _Request, _Response


class _Tarballs(_Auth, _GitStore):
    """Tarball downloads through a codeload-like one-time URL."""

    def _op_repos__download_tarball_archive(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        sha = self._resolve_commitish(repo, req.params["ref"])
        if sha is None:
            raise _error(404, "Not Found")
        token = secrets.token_hex(16)
        self._download_tokens[token] = (repo.full_name, sha)
        location = f"{self.base_url}/_codeload/{repo.full_name}/legacy.tar.gz/{sha}?token={token}"
        return _Response(302, None, {"Location": location})

    def _codeload(self, path: str, query: dict[str, list[str]]) -> _Response:
        token = query.get("token", [""])[-1]
        target = self._download_tokens.pop(token, None)
        if target is None:
            raise _error(404, "Not Found")
        full_name, sha = target
        top = f"{full_name.replace('/', '-')}-{sha[:7]}"
        with self._lock:
            fault = self._tarball_faults.pop((full_name, sha), None)
        return _Response(
            200,
            raw=self.tarball(full_name, sha) if fault is None else fault,
            headers={
                "Content-Type": "application/x-gzip",
                "Content-Disposition": f"attachment; filename={top}.tar.gz",
            },
        )

    def serve_tarball_once(self, full_name: str, ref_or_sha: str, data: bytes) -> None:
        """Serve `data` instead of the commit's tarball on its next download: a fault, like
        `fail_next`. GitHub builds every tarball with `git archive`, which can hold nothing a
        git tree cannot (no hard link, no device, no `..`), so only this reaches the worker's
        refusals of such members."""
        with self._lock:
            repo = self.repo(full_name)
            sha = self._resolve_commitish(repo, ref_or_sha)
            if sha is None:
                raise KeyError(ref_or_sha)
            self._tarball_faults[(full_name, sha)] = data

    def tarball(self, full_name: str, ref_or_sha: str) -> bytes:
        """The gzip tarball GitHub would serve for this commit (folder `owner-repo-sha7/`)."""
        with self._lock:
            repo = self.repo(full_name)
            sha = self._resolve_commitish(repo, ref_or_sha)
            if sha is None:
                raise KeyError(ref_or_sha)
            commit = repo.commits[sha]
            mtime = int(
                datetime.strptime(commit["committer"]["date"], "%Y-%m-%dT%H:%M:%SZ")
                .replace(tzinfo=UTC)
                .timestamp()
            )
            top = f"{repo.owner}-{repo.name}-{sha[:7]}"
            buf = io.BytesIO()
            with tarfile.open(
                fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": sha}
            ) as tar:
                dirs = {top}
                info = tarfile.TarInfo(top)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o775, mtime
                tar.addfile(info)
                for path, (mode, kind, obj) in sorted(self._flatten(repo, commit["tree"]).items()):
                    parts = path.split("/")
                    for i in range(1, len(parts)):
                        d = "/".join([top, *parts[:i]])
                        if d not in dirs:
                            dirs.add(d)
                            dinfo = tarfile.TarInfo(d)
                            dinfo.type, dinfo.mode, dinfo.mtime = tarfile.DIRTYPE, 0o775, mtime
                            tar.addfile(dinfo)
                    info = tarfile.TarInfo(f"{top}/{path}")
                    info.mtime = mtime
                    if kind == "commit":  # submodule: an empty folder, as git archive does
                        info.type, info.mode = tarfile.DIRTYPE, 0o775
                        tar.addfile(info)
                    elif mode == "120000":
                        info.type, info.mode = tarfile.SYMTYPE, 0o777
                        info.linkname = repo.blobs[obj].decode()
                        tar.addfile(info)
                    else:
                        data = repo.blobs[obj]
                        info.size, info.mode = len(data), 0o775 if mode == "100755" else 0o664
                        tar.addfile(info, io.BytesIO(data))
            return gzip.compress(buf.getvalue(), mtime=0)
