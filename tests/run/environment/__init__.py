"""Tests of the environment phase: detection, refusals, the cache, the build."""
