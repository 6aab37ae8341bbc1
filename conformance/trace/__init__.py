"""Canonical traces of scenario runs: building, normalising, diffing."""
