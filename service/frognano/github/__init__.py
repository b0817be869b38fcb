"""GitHub access for the worker: App auth, narrowed tokens, retries, repository operations."""
