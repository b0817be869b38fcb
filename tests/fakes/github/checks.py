"""Check runs: create, update, list for a ref."""

from __future__ import annotations

import copy
from typing import Any

from tests.fakes.github.model import (
    Repo,
    _error,
    _node_id,
    _now_iso,
    _Request,
    _Response,
    _validation_failed,
)
from tests.fakes.github.pulls import _Pulls


class _Checks(_Pulls):
    """Check runs, which only Apps may write."""

    def _check_run_json(self, repo: Repo, run: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        pulls = []
        for number, pull in repo.pulls.items():
            if (
                repo.issues[number]["state"] == "open"
                and self._pull_head_sha(repo, pull) == run["head_sha"]
            ):
                base_sha = repo.branch_sha(pull["base"]) or ""
                pulls.append(
                    {
                        "id": pull["id"],
                        "number": number,
                        "url": f"{api}/pulls/{number}",
                        "head": {
                            "ref": pull["head"],
                            "sha": run["head_sha"],
                            "repo": {"id": repo.id, "url": api, "name": repo.name},
                        },
                        "base": {
                            "ref": pull["base"],
                            "sha": base_sha,
                            "repo": {"id": repo.id, "url": api, "name": repo.name},
                        },
                    }
                )
        output = run["output"]
        return {
            "id": run["id"],
            "node_id": _node_id("CR", run["id"]),
            "head_sha": run["head_sha"],
            "external_id": run["external_id"],
            "url": f"{api}/check-runs/{run['id']}",
            "html_url": f"https://github.com/{repo.full_name}/runs/{run['id']}",
            "details_url": run["details_url"],
            "status": run["status"],
            "conclusion": run["conclusion"],
            "started_at": run["started_at"],
            "completed_at": run["completed_at"],
            "output": {
                "title": output.get("title"),
                "summary": output.get("summary"),
                "text": output.get("text"),
                "annotations_count": len(run["annotations"]),
                "annotations_url": f"{api}/check-runs/{run['id']}/annotations",
            },
            "name": run["name"],
            "check_suite": {"id": run["check_suite_id"]},
            "app": self._integration_json(),
            "pull_requests": pulls,
        }

    # ---- operations: checks ------------------------------------------------------------

    def _apply_check_fields(self, run: dict[str, Any], body: dict[str, Any]) -> None:
        for key in ("name", "details_url", "external_id", "started_at", "completed_at"):
            if key in body:
                run[key] = body[key]
        if "status" in body:
            run["status"] = body["status"]
        if "conclusion" in body:
            run["conclusion"] = body["conclusion"]
            if body["conclusion"] is not None:
                run["status"] = "completed"
        if run["status"] == "completed":
            if run["conclusion"] is None:
                raise _validation_failed(
                    "CheckRun",
                    "conclusion",
                    "missing_field",
                    "Conclusion is required when status is completed",
                )
            run["completed_at"] = (
                body.get("completed_at") or run["completed_at"] or _now_iso(self.now())
            )
        if "output" in body:
            output = body["output"]
            for key in ("title", "summary", "text"):
                if key in output:
                    run["output"][key] = output[key]
            annotations = output.get("annotations", [])
            if len(annotations) > 50:
                raise _validation_failed(
                    "CheckRun",
                    "annotations",
                    "custom",
                    "Only 50 annotations are allowed per request",
                )
            run["annotations"].extend(annotations)
        if "actions" in body:
            run["actions"] = body["actions"]

    def _op_checks__create(self, req: _Request) -> _Response:
        self._require_installation(req)
        repo = self._access(req, "checks", "write")
        body = req.body
        if body.get("head_sha") not in repo.commits:
            raise _validation_failed(
                "CheckRun",
                "head_sha",
                "invalid",
                f"No commit found for SHA: {body.get('head_sha')}",
            )
        if "name" not in body:
            raise _validation_failed("CheckRun", "name", "missing_field")
        if len(body.get("actions", [])) > 3:
            raise _validation_failed("CheckRun", "actions", "custom", "Only 3 actions are allowed")
        run: dict[str, Any] = {
            "id": self._next_id(),
            "name": body["name"],
            "head_sha": body["head_sha"],
            "external_id": "",
            "details_url": f"https://example.invalid/{self.app_slug}",
            "status": "queued",
            "conclusion": None,
            "started_at": _now_iso(self.now()),
            "completed_at": None,
            "output": {"title": None, "summary": None, "text": None},
            "annotations": [],
            "actions": [],
            "check_suite_id": self._check_suite_id(repo, body["head_sha"]),
            "app_id": self.app_id,
        }
        self._apply_check_fields(run, body)
        repo.check_runs[run["id"]] = run
        out = self._check_run_json(repo, run)
        return _Response(201, out, {"Location": out["url"]})

    def _check_suite_id(self, repo: Repo, head_sha: str) -> int:
        for run in repo.check_runs.values():
            if run["head_sha"] == head_sha:
                return int(run["check_suite_id"])
        return self._next_id()

    def _op_checks__update(self, req: _Request) -> _Response:
        self._require_installation(req)
        repo = self._access(req, "checks", "write")
        rid = req.params["check_run_id"]
        run = repo.check_runs.get(int(rid)) if rid.isdigit() else None
        if run is None:
            raise _error(404, "Not Found")
        updated = copy.deepcopy(run)
        self._apply_check_fields(updated, req.body)
        run.update(updated)
        return _Response(200, self._check_run_json(repo, run))

    def _op_checks__list_for_ref(self, req: _Request) -> _Response:
        repo = self._access(req, "checks", "read")
        sha = self._resolve_commitish(repo, req.params["ref"])
        if sha is None:
            raise _validation_failed(
                "CheckRun", "ref", "invalid", "No commit found for SHA: " + req.params["ref"]
            )
        runs = [r for r in repo.check_runs.values() if r["head_sha"] == sha]
        name = req.query.get("check_name", [None])[-1]
        status = req.query.get("status", [None])[-1]
        app_id = req.query.get("app_id", [None])[-1]
        if name is not None:
            runs = [r for r in runs if r["name"] == name]
        if status is not None:
            runs = [r for r in runs if r["status"] == status]
        if app_id is not None:
            runs = [r for r in runs if str(r["app_id"]) == app_id]
        if req.query.get("filter", ["latest"])[-1] == "latest":
            latest: dict[str, dict[str, Any]] = {}
            for r in sorted(runs, key=lambda r: r["id"]):
                latest[r["name"]] = r
            runs = list(latest.values())
        runs.sort(key=lambda r: r["id"], reverse=True)
        page = self._paginate(req, [self._check_run_json(repo, r) for r in runs])
        return _Response(200, {"total_count": len(runs), "check_runs": page.body}, page.headers)
