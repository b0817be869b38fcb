"""Admin policy: its models, the loader with hot reload, and the diff gate."""
