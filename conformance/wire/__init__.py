"""The stdio wire protocol (docs/protocol.md): kernels in any language, certified out of process.

``conformance.harness.loading`` loads ``stdio:COMMAND ARGS…`` specs through
:func:`conformance.wire.client.load_stdio`.
"""

from __future__ import annotations

from conformance.wire.codes import PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION"]
