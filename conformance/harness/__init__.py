"""Runs scenarios against a kernel: the doubles, the runner, adapter loading, the pytest plugin, certify()."""
