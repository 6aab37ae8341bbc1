"""An adapter module whose import sends ``$ZOO_SIGNAL`` (INT or TERM) to its own process: a
signal that arrives while ``akc run`` is still starting up (loading the adapter), before the run's
own handlers are in place."""

import os
import signal

os.kill(os.getpid(), getattr(signal, "SIG" + os.environ.get("ZOO_SIGNAL", "TERM")))

from reference_kernel.adapter import factory  # noqa: E402,F401
