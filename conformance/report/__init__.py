"""Verdicts, the report model and its writers, and the multi-kernel matrix."""
