"""The agent harness: tools, model client, loop and trajectory (knows nothing of GitHub)."""
