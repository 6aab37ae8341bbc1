"""The reference agent kernel: small, spec-exact, the embedded default that ``akc run`` certifies."""

__version__ = "0.1.0"
