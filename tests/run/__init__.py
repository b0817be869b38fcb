"""Tests of one run: trees, test runs, evidence."""
