"""The GitHub App: webhook intake, the Redis queue, the worker's jobs and publication."""
