"""The Kubernetes sandbox: one pod per sandbox, exec over the API, and its checks."""
