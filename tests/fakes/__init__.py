"""Fake and broken adapters for testing the harness itself."""
