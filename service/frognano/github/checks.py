"""CheckRunOps: the app's check runs on a commit: find, create or edit, list, external id."""

from __future__ import annotations

from typing import Any

from frognano.github.core import ClientCore, quote
from frognano.github.manifest import web_url_for
from frognano.github.models import CHECK_TEXT_LIMIT, CheckRunInfo, truncate

__all__ = ["CheckRunOps"]

_CHECK_STATUSES = frozenset({"queued", "in_progress", "completed"})
_CONCLUSIONS = frozenset(
    {"action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"}
)


class CheckRunOps(ClientCore):
    """The check run operations of RepoClient (see there for why each is idempotent)."""

    async def _find_check_run(self, head_sha: str, name: str) -> int | None:
        runs = await self._paginate(
            f"/commits/{quote(head_sha)}/check-runs",
            f"look for check run {name!r}",
            params={"check_name": name},
            key="check_runs",
        )
        ids = [
            int(run["id"])
            for run in runs
            if run.get("name") == name
            and (self.app_id is None or (run.get("app") or {}).get("id") == self.app_id)
        ]
        return max(ids) if ids else None

    async def upsert_check_run(
        self,
        head_sha: str,
        name: str,
        *,
        status: str,
        conclusion: str | None = None,
        title: str,
        summary: str,
        text: str | None = None,
        details_url: str | None = None,
    ) -> int:
        """Edit the app's check run `name` on `head_sha`, or create it; return its id.
        `conclusion` is required with status "completed" and refused otherwise."""
        if status not in _CHECK_STATUSES:
            raise ValueError(f"check run status {status!r} is not one of {sorted(_CHECK_STATUSES)}")
        if (status == "completed") != (conclusion is not None):
            raise ValueError("a conclusion is required with status 'completed', and only then")
        if conclusion is not None and conclusion not in _CONCLUSIONS:
            raise ValueError(
                f"check run conclusion {conclusion!r} is not one of {sorted(_CONCLUSIONS)}"
            )
        output = {
            "title": truncate(title, 1024, "title"),
            "summary": truncate(summary, CHECK_TEXT_LIMIT, "summary"),
        }
        if text is not None:
            output["text"] = truncate(text, CHECK_TEXT_LIMIT, "text")
        fields: dict[str, Any] = {"status": status, "output": output}
        if conclusion is not None:
            fields["conclusion"] = conclusion
        if details_url is not None:
            fields["details_url"] = details_url
        existing = await self._find_check_run(head_sha, name)
        if existing is not None:
            await self._request(
                "PATCH", f"/check-runs/{existing}", f"update check run {name!r}", body=fields
            )
            return existing

        async def find_again() -> dict[str, Any] | None:
            found = await self._find_check_run(head_sha, name)
            return None if found is None else {"id": found}

        created = await self._data(
            "POST",
            "/check-runs",
            f"create check run {name!r}",
            body={"name": name, "head_sha": head_sha, **fields},
            recover=find_again,
        )
        return int(created["id"])

    def check_run_url(self, check_run_id: int) -> str:
        """The check run's page on GitHub's web (the `html_url` GitHub gives it): the API's
        host (GitHub Enterprise Server's without `/api/v3`), the repository, `runs/ID`."""
        web = web_url_for(self.transport.base_url)
        return f"{web}/{self.full_name}/runs/{int(check_run_id)}"

    async def check_runs(self, head_sha: str, name: str) -> list[CheckRunInfo]:
        """Every check run named `name` on commit `head_sha` (all of them, not only the latest),
        newest first; restricted to this client's App when `app_id` is known. Callers that
        trust a run's content must still compare `app_id` themselves."""
        params: dict[str, Any] = {"check_name": name, "filter": "all"}
        if self.app_id is not None:
            params["app_id"] = self.app_id
        runs = await self._paginate(
            f"/commits/{quote(head_sha)}/check-runs",
            f"list check runs {name!r} of {head_sha}",
            params=params,
            key="check_runs",
        )
        found = []
        for run in runs:
            if run.get("name") != name:
                continue
            app = run.get("app") or {}
            app_id = app.get("id")
            found.append(
                CheckRunInfo(
                    id=int(run["id"]),
                    name=str(run["name"]),
                    head_sha=str(run.get("head_sha") or head_sha),
                    status=str(run.get("status") or ""),
                    conclusion=run.get("conclusion"),
                    external_id=run.get("external_id"),
                    app_id=app_id if isinstance(app_id, int) else None,
                )
            )
        found.sort(key=lambda info: info.id, reverse=True)
        return found

    async def set_check_run_external_id(self, check_run_id: int, external_id: str) -> None:
        """Set the `external_id` of one of the app's check runs (e.g. the review marker on
        `FrogNano / verification`; see `frognano.app.review.review_marker`)."""
        await self._request(
            "PATCH",
            f"/check-runs/{check_run_id}",
            f"set the external id of check run {check_run_id}",
            body={"external_id": external_id},
        )
