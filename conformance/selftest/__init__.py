"""The suite's self-test: mutants of the reference kernel it must catch, legal variants it must pass.

``registry`` holds the entries, ``mutants`` and ``variants`` define them, ``runner`` runs the
matrix (``akc selftest``).
"""
