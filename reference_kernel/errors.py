"""Errors of the reference kernel that callers are expected to catch by type."""

from __future__ import annotations


class ConfigError(ValueError):
    """Invalid configuration, refused when the kernel is built (never mid-run).

    ``field`` names what was refused (``tags``, ``max_turns``, ``doom_loop.threshold``,
    ``concurrency`` ...) so an adapter can report it as a ``Rejection``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ProviderError(Exception):
    """A model API answered with a non-2xx status (status and the API's message kept)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class UnknownSessionError(KeyError):
    """A journal call named a session (or parent session) that was never created."""

    def __init__(self, session_id: str, what: str = "session") -> None:
        super().__init__(session_id)
        self.session_id = session_id
        self.what = what

    def __str__(self) -> str:
        return f"unknown {self.what} {self.session_id!r}: no such session in the journal"


class UnknownTurnError(KeyError):
    """finish_turn for a turn that start_turn never recorded."""

    def __init__(self, turn_id: str) -> None:
        super().__init__(turn_id)
        self.turn_id = turn_id

    def __str__(self) -> str:
        return f"unknown turn {self.turn_id!r}: start_turn was never called for it"
