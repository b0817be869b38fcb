"""Where things are inside every sandbox, whatever the backend."""

WORKSPACE = "/workspace"
HOME = "/home/sandbox"
TMP = "/tmp"  # noqa: S108 - the sandbox's own private /tmp, not the host's
TOOLS = "/opt/frognano"
"""FrogNano's own read-only files inside a sandbox (its pytest collector), where the backend
provides them: bound from the host in a local sandbox, baked into a Kubernetes sandbox image."""
