"""Where things are inside every sandbox, whatever the backend."""

WORKSPACE = "/workspace"
HOME = "/home/sandbox"
TMP = "/tmp"  # noqa: S108 - the sandbox's own private /tmp, not the host's
