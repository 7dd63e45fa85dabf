"""A benchmark stopped with SIGTERM stops the processes it started, as one stopped with Ctrl-C does.

The benchmarks start controllers and informers as child processes and stop
them in ``finally`` blocks. Ctrl-C raises KeyboardInterrupt, so those blocks
run; SIGTERM (``kill``, ``timeout``, a CI runner giving up) ends a Python
process at once by default, and its children live on: our controller keeps
its probe port, so the next run cannot start it ("Cannot serve probes on
:8081"), and its namespace is never deleted.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType


def exit_on_sigterm() -> None:
    """From now on, SIGTERM raises SystemExit(143) in the main thread, so ``finally`` blocks run.

    Call it from a benchmark's ``main`` before it starts a child; 143 is 128 +
    SIGTERM, the status a shell reports for a process that SIGTERM ended.
    """

    def exit_now(signum: int, frame: FrameType | None) -> None:
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, exit_now)
