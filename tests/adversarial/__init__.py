"""Attacks on verification and the gate, replayed through `frognano solve`."""
