"""agent-kernel-conformance: the conformance suite for agent kernels."""

__version__ = "0.1.0"
