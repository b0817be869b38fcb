"""A stateful fake of the GitHub REST API, served over real HTTP on 127.0.0.1.

Use it as a context manager::

    with FakeGitHub() as gh:
        gh.add_repo("octo/hello", files={"README.md": b"hi\\n"})
        gh.add_issue("octo/hello", 1, "Bug", "It breaks")
        client = github.Github(base_url=gh.base_url, auth=...)
        ...
        assert not gh.validation_errors

What it does (see tests/fakes/test_github.py for each behaviour):

- Routes exactly the operations in `tests/fakes/openapi/api.github.com.subset.json` (a
  committed cut of GitHub's official description, see `openapi/generate.py`); anything else
  is 404 `{"message": "Not Found"}`.
- Validates every request's JSON body and its query parameters against the operation's
  schema (OpenAPI 3.0 converted to JSON Schema 2020-12). A violation is answered 422
  `{"message": "Invalid request.\\n\\n...", "documentation_url": ...}` and appended to
  `validation_errors`. Responses the fake builds are checked against the response schemas
  too (`response_errors`): that keeps the fake's own shapes honest.
- Auth: App JWTs (RS256, checked with the App's public key; `iss` is the App id; `exp - iat`
  at most 600 s) for `/app/...` and `GET /repos/{o}/{r}/installation`; installation tokens
  (`ghs_...`, 1 hour, narrowed by `repositories` / `repository_ids` / `permissions`) for the
  rest; both the `Bearer` and `token` schemes. `add_user_token` mints a personal token for a
  human, which cannot write check runs (only Apps can). Anonymous GETs may read public repos.
- Git objects are real git objects: blob, tree and commit SHAs are what `git` would compute,
  so a tree can be compared with a local `git write-tree`.
- Commits created without `author`/`committer` by an installation token are authored by
  `<app_slug>[bot]`, committed by `GitHub <noreply@github.com>` and `verification.verified`
  is true; with a custom author (or committer) they are unsigned (`verified: false`).
- `GET /repos/{o}/{r}/tarball/{ref}` answers 302 with a `Location` on this same server
  (`/_codeload/...?token=...`, one-time token, no Authorization needed, like codeload.github.com),
  which serves a gzip tarball whose single top-level folder is `owner-repo-<7 char sha>/`,
  with file modes (executables, symlinks) preserved and the commit SHA in the pax global
  header's `comment`, as `git archive` writes it. `serve_tarball_once` replaces one
  download's bytes (a fault: an archive `git archive` cannot make).
- `fail_next` injects faults (502, secondary rate limits, 429...) and `latency` slows every
  response down.

- The App manifest flow: a form POST of `manifest` to `/settings/apps/new?state=S` (or
  `/organizations/ORG/settings/apps/new`, GitHub's web pages) answers 302 to the manifest's
  `redirect_url` with `?code=C&state=S`, as if a signed-in user confirmed at once;
  `POST /app-manifests/C/conversions` (no auth, the code once, for an hour) answers GitHub's
  shape with this fake's own App id and key, a new webhook and client secret, and records the
  manifest in `created_apps`.

Endpoints (paths under base_url; JWT = App JWT, otherwise a token):
    GET /app (JWT), GET /repos/{o}/{r}/installation (JWT), POST /app-manifests/{code}/conversions,
    POST /app/installations/{id}/access_tokens (JWT), DELETE /installation/token
    GET /repos/{o}/{r}, GET /repos/{o}/{r}/collaborators/{user}/permission,
    GET /repos/{o}/{r}/tarball/{ref} (302), GET /repos/{o}/{r}/commits?sha=&per_page=&page=,
    GET /repos/{o}/{r}/commits/{ref}, GET /repos/{o}/{r}/compare/{base}...{head}
    GET /git/ref/{ref}, POST /git/refs, PATCH /git/refs/{ref} (force false: fast-forward only),
    GET|POST /git/commits, GET|POST /git/blobs, GET|POST /git/trees (?recursive=1)
    GET|POST /pulls (?head=owner:branch&state=&base=), GET|PATCH /pulls/{n},
    POST /pulls/{n}/requested_reviewers, GET /pulls/{n}/reviews
    GET /issues/{n}, GET|POST /issues/{n}/comments, PATCH /issues/comments/{id},
    POST /issues/{n}/labels, POST /issues/{n}/reactions
    POST /check-runs, PATCH /check-runs/{id}, GET /commits/{ref}/check-runs?check_name=
(git, pulls, issues and check-runs paths are under /repos/{o}/{r}.)

PyGithub clients: pass `seconds_between_requests=0, seconds_between_writes=0`, or PyGithub
sleeps up to 1 s before each write. Its default GithubRetry retries 5xx (POST included) and
403/429 with Retry-After, which `fail_next` lets a test exercise.

Not modelled: GraphQL, webhooks (this server never sends any), merges, forks, teams,
conditional requests/ETags, primary rate-limit accounting (the `x-ratelimit-*` headers are
constant), the `workflows` permission check on `.github/workflows/**`.

Modules, each a mixin of `FakeGitHub` that builds on the ones it uses (no cycles):
    spec (the OpenAPI subset), model (constants, records, errors), state (the App, repos,
    installations, users), auth (JWTs, tokens, access rules), gitstore (git objects, diffs),
    repos, apps, manifests, commits, tarballs, gitdata, issues, pulls, checks (one operation
    group each),
    server (`FakeGitHub` itself: HTTP, routing, validation, faults).
"""

from __future__ import annotations

from tests.fakes.github.model import (
    SECONDARY_RATE_LIMIT_MESSAGE,
    HTTPError,
    Recorded,
    Repo,
    Token,
    ValidationFailure,
)
from tests.fakes.github.server import FakeGitHub

__all__ = [
    "SECONDARY_RATE_LIMIT_MESSAGE",
    "FakeGitHub",
    "HTTPError",
    "Recorded",
    "Repo",
    "Token",
    "ValidationFailure",
]
