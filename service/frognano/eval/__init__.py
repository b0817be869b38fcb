"""`frognano eval`: SWE-bench-format instances run through the App's own harness."""
