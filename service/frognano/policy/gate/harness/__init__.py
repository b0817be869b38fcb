"""Which files of a patch belong to the test harness, from test commands and config."""
