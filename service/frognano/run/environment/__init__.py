"""The environment phase: a repository's dependencies, installed through the approved index."""
