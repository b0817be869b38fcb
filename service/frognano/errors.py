"""The exception tree: every error FrogNano raises on purpose derives from FrogNanoError."""

#   FrogNanoError
#   ├── ConfigError            settings or options are wrong; the message says which and how to fix
#   ├── UnsafePathError        a path would leave the sandbox (relative, outside its roots, a
#   │   │                      symlink out of an uploaded tree); also a ValueError
#   │   └── ArchiveRefused     GitHub's tarball of a repository holds a member that refuses it
#   │                          whole; defined in frognano.github.archive; its reason is the
#   │                          repository's, for its maintainers
#   ├── SetupError             a policy setup command failed; nothing after it would mean anything
#   │   └── EnvironmentBuildError  the environment phase refused the repository's dependency
#   │                          files or an install command failed; the message names which
#   ├── SandboxError           the sandbox itself failed, not a command inside it
#   │   ├── SandboxUnavailable no isolation mechanism works on this host, or the cluster
#   │   │   │                  will not run a sandbox pod (namespace, RBAC, credentials)
#   │   │   └── SandboxBusy    the sandbox namespace's quota is full for now; retry later
#   │   ├── SandboxStartError  the sandbox could not be created or a command could not start in it
#   │   └── SandboxClosed      an operation on a sandbox that was already closed
#   ├── ModelError             the model server failed in a way retrying did not fix
#   │   ├── ModelUnavailable   unreachable, or 429/5xx until the retry budget ran out
#   │   ├── ContextOverflow    the request no longer fits the server's context window
#   │   └── ModelResponseError the server refused the request (401, 404, ...) or answered
#   │                          with something that is not a chat completion
#   ├── MalformedJob           a job argument read from Redis is not what the queue writes;
#   │                          defined in frognano.app.jobschema (jobs re-exports it);
#   │                          also a ValueError
#   └── GitHubError            GitHub refused a request or kept failing; defined with its
#                              subclasses in frognano.github.errors (unavailable, rate limited,
#                              auth, forbidden, not found, request error, branch conflict)
#
# A command that fails, times out or crashes inside a sandbox is not an exception: it comes back
# as an `ExecResult`. File operations raise the built-in `FileNotFoundError`, `IsADirectoryError`
# and `PermissionError` (or `OSError` with the errno) for problems with the file itself, as
# `pathlib` does.


class FrogNanoError(Exception):
    """Base of every error raised on purpose by FrogNano."""


class ConfigError(FrogNanoError):
    """Settings, options or files given to FrogNano are invalid; the message says the fix."""


class UnsafePathError(FrogNanoError, ValueError):
    """A path would reach outside the sandbox or outside the tree being copied into it."""


class SetupError(FrogNanoError):
    """A `sandbox.setup` command of the policy failed; the message has its output."""


class EnvironmentBuildError(SetupError):
    """The environment phase could not build the repository's environment."""


class SandboxError(FrogNanoError):
    """The sandbox itself failed: it could not start, died, or was misused after closing."""


class SandboxUnavailable(SandboxError):
    """No isolation mechanism works on this host; the message says what to install or change."""


class SandboxBusy(SandboxUnavailable):
    """No room for another sandbox now (a full ResourceQuota); the same run can wait and retry."""


class SandboxStartError(SandboxError):
    """Creating the sandbox, or starting a command inside it, failed before the command ran."""


class SandboxClosed(SandboxError):
    """The sandbox was already closed."""


class ModelError(FrogNanoError):
    """The model server could not produce a reply; the message says why and what to check."""


class ModelUnavailable(ModelError):
    """The server could not be reached, or kept answering 429 or 5xx, within the retry budget."""


class ContextOverflow(ModelError):
    """The conversation plus `max_tokens` no longer fits the server's context length."""


class ModelResponseError(ModelError):
    """The server refused the request or sent something that is not a chat completion."""
