"""The webhook receiver: its routes, its connection and body limits, its metrics."""
