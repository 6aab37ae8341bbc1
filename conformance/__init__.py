"""agent-kernel-conformance: the conformance suite for agent kernels."""

__version__ = "0.1.0"


def __getattr__(name: str):  # lazy: importing the package stays cheap (the pytest plugin imports it)
    if name == "certify":
        from conformance.harness.certify import certify

        return certify
    raise AttributeError(f"module 'conformance' has no attribute {name!r}")
