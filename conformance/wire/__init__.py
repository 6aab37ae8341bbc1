"""The stdio wire protocol (docs/protocol.md): kernels in any language, certified out of process.

Importing this package registers the ``stdio:`` adapter scheme (``stdio:COMMAND ARGS…``).
"""

from __future__ import annotations

from conformance.harness.loading import register_scheme
from conformance.wire.messages import PROTOCOL_VERSION


def _load_stdio(rest: str):  # type: ignore[no-untyped-def]
    from conformance.wire.client import load_stdio

    return load_stdio(rest)


register_scheme("stdio", _load_stdio)

__all__ = ["PROTOCOL_VERSION"]
