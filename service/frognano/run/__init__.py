"""One run, shared by `frognano solve` and the worker: trees, test runs, evidence."""
