"""Python source read by the gate: parsing, constants, names, test-weakening rules."""
