"""Progress lines for steps that take a while.

A cold build of the control plane takes tens of minutes on a small machine; a
silent terminal for that long looks like a hang. :func:`step` prints what is
starting, a heartbeat with the elapsed time while it runs, and how long it took.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


def format_duration(seconds: float) -> str:
    """``75.2`` -> ``"1m15s"``; short steps keep one decimal."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


@contextmanager
def step(what: str, *, heartbeat: float = 30.0, out: TextIO | None = None) -> Iterator[None]:
    """Announce ``what``, print a heartbeat every ``heartbeat`` seconds, then the time taken."""
    stream = out if out is not None else sys.stderr
    started = time.monotonic()
    print(f"==> {what} ...", file=stream, flush=True)
    finished = threading.Event()

    def beat() -> None:
        while not finished.wait(heartbeat):
            elapsed = format_duration(time.monotonic() - started)
            print(f"    ... still {what} ({elapsed} so far)", file=stream, flush=True)

    beater = threading.Thread(target=beat, name=f"progress: {what}")
    beater.start()
    try:
        yield
    finally:
        finished.set()
        beater.join()
    print(
        f"    {what}: done in {format_duration(time.monotonic() - started)}",
        file=stream,
        flush=True,
    )
