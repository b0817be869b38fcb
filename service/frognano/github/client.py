"""RepoClient: exactly the operations the worker performs on one repository, each idempotent."""

from __future__ import annotations

from frognano.github.checks import CheckRunOps
from frognano.github.gitdata import GitDataOps
from frognano.github.issues import IssueOps
from frognano.github.pulls import PullOps

__all__ = ["RepoClient"]


class RepoClient(IssueOps, GitDataOps, PullOps, CheckRunOps):
    """One repository, one narrowed token; every method is async and idempotent.

    The plumbing (token refresh, retries, pagination) is ClientCore's; each concern's
    operations are a mixin. Idempotency, operation by operation (a retried request or a
    re-run job never duplicates):
    - `react`: GitHub answers 200 for a reaction that already exists.
    - `upsert_status_comment`: the app's own comment holding the hidden marker is found (all
      pages) and edited; only when none exists is one created, and a create that failed
      transiently is looked up again before it is re-sent.
    - `create_commit`: blobs and trees are content-addressed; a commit nobody points at is
      inert.
    - `upsert_branch`: created, moved or left unchanged; moved only over the app's own commits.
    - `find_or_create_pull`: an open pull request for the head is looked up before and after
      a create that failed transiently; an existing one has its body updated.
    - `add_labels`, `request_reviewers`: GitHub keeps sets, so repeating is harmless.
    - `upsert_check_run`: the app's run of that name on that commit is edited, else created.
    """
