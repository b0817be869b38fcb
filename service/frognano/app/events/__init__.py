"""What a webhook delivery decides, without I/O: its verification, its fields, the decision."""
