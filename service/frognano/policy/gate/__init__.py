"""The diff gate: the check of a patch against the policy, and its analysers."""
