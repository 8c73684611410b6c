"""Regression oracles: numpy / Python forms of a kernel kept to check the native code bit for
bit. Unlike ``tests/reference/``, they may call the code under test or read its internals, so
they prove equality with an earlier form, not correctness against a design."""
