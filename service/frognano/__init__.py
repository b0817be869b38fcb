"""FrogNano PR drafter: a GitHub App that drafts pull requests with a sandboxed coding agent."""

__version__ = "0.1.0"
