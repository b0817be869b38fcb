"""Tests of the Kubernetes sandbox backend, against a fake API server."""
