"""A fake GitHub REST API server (`fake_github.FakeGitHub`) and its tests."""
