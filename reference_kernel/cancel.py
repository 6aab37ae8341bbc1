"""000's CancellationToken, built on anyio cancel scopes.

The loop checks ``token.cancelled`` between steps and runs in-flight work (the model call, tool
executions) inside ``token.scope()``, a CancelScope the token cancels. A child token (given to a
sub-agent) is cancelled with its parent, so stopping a parent stops its children too.
"""

from __future__ import annotations

from typing import Any

import anyio


class Cancelled(Exception):
    """Raised inside the loop when it finds its token cancelled (never leaves the kernel)."""


class CancellationToken:
    """Cancel once; every scope opened from it and every child token is cancelled too."""

    __slots__ = ("_cancelled", "_children", "_scopes", "_parent", "_scope_class")

    def __init__(self, parent: CancellationToken | None = None) -> None:
        self._cancelled = False
        self._children: list[CancellationToken] = []
        self._scopes: list[anyio.CancelScope] = []
        self._parent = parent
        #: The running backend's CancelScope class, found on the first ``scope()``: the
        #: ``anyio.CancelScope()`` factory asks sniffio which backend runs on every call, and
        #: that lookup costs as much as the scope itself. A token lives on one event loop.
        self._scope_class: type[anyio.CancelScope] | None = None
        if parent is not None:
            self._scope_class = parent._scope_class
            if parent._cancelled:
                self._cancelled = True
            else:
                parent._children.append(self)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Synchronous and idempotent, so it can be called from a hook, a tool or a button."""
        if self._cancelled:
            return
        self._cancelled = True
        for scope in list(self._scopes):
            scope.cancel()
        for child in list(self._children):
            child.cancel()
        self._children.clear()

    def child(self) -> CancellationToken:
        return CancellationToken(self)

    def detach(self) -> None:
        """Forget this token in its parent (a finished child must not be kept alive)."""
        if self._parent is not None:
            try:
                self._parent._children.remove(self)
            except ValueError:
                pass

    def check(self) -> None:
        """The between-steps check."""
        if self._cancelled:
            raise Cancelled()

    def scope(self) -> _TokenScope:
        """A CancelScope this token cancels; the caller checks ``cancelled`` after the block."""
        return _TokenScope(self)


class _TokenScope:
    """``with token.scope():`` — a class, not a generator context manager: it is on the hot path
    (every model call and tool execution)."""

    __slots__ = ("_token", "_scope")

    def __init__(self, token: CancellationToken) -> None:
        self._token = token
        scope_class = token._scope_class
        if scope_class is None:
            self._scope = anyio.CancelScope()
            token._scope_class = type(self._scope)
        else:
            self._scope = scope_class()

    def __enter__(self) -> anyio.CancelScope:
        token, scope = self._token, self._scope
        if token._cancelled:
            scope.cancel()
        token._scopes.append(scope)
        return scope.__enter__()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        scope = self._scope
        try:
            return bool(scope.__exit__(exc_type, exc, tb))
        finally:
            self._token._scopes.remove(scope)
