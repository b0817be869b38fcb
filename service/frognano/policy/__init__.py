"""Admin policy: its models, the loader with hot reload, and (gate/) the diff gate."""
