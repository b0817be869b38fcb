"""Where things are inside every sandbox, whatever the backend."""

WORKSPACE = "/workspace"
HOME = "/home/sandbox"
TMP = "/tmp"  # noqa: S108 - the sandbox's own private /tmp, not the host's
TOOLS = "/opt/frognano"
"""FrogNano's own read-only files inside a sandbox (its pytest collector), where the backend
provides them: bound from the host in a local sandbox, baked into a Kubernetes sandbox image."""
ENVIRONMENT = "/environment"
"""A repository's Python environment, built by the environment phase: read-only in the agent's
and every verification sandbox, writable only in the sandbox that builds it."""
EGRESS = "/run/frognano-egress"
"""The folder holding the environment phase's one way out (a Unix socket to FrogNano's
allowlisting proxy); bound only into the sandbox that builds an environment."""
