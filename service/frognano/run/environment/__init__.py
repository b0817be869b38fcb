"""The environment phase: the repository's virtualenv, installed through the approved index only."""
