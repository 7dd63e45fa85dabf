"""When each controller's syncs happen in controller_bench's run: the pace of its Foo bucket.

A drill run by hand (benchmarks/RESULTS.md records it), not part of run_all.
At the default pacing both controllers are bound by their Foo token bucket
(5 status writes a second after a burst of 10), so their wall times differ by
where that bucket's pace starts, not by how fast they sync. This runs
controller_bench's run (200 Foos, each controller in turn) while a thread reads
the controller's log as it is written, and notes when each "Successfully
synced" line appeared, in seconds after the run's clock started (when the
Foos began to be created). It prints, per run, when the 1st, 20th and 400th
syncs came and the last one: after the burst, sync n comes at about
(n - 10) x 0.2 s plus where the pace started.

``--settle`` says how long after "Started workers" the Foos are created:
``refill`` (controller_bench's choice: burst / QPS, when every bucket is full
again) or a number of seconds (0: at once, as controller_bench did before).

Run: .venv/bin/python -m benchmarks.sync_timeline [--settle 0,refill] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import controller_bench
from benchmarks.controller_bench import SYNCED, SYNCED_KEY, Pacing
from benchmarks.guard import refuse_clusters_not_the_courses
from benchmarks.informer_bench import rotated
from benchmarks.stopping import exit_on_sigterm

MARKS = (1, 20, 400)
"""The syncs whose times the table gives (besides the last)."""


class LogClock:
    """Notes when each sync line appears in the one log file a run adds to ``folder``."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._before = set(folder.iterdir())
        self.synced_at: list[float] = []  # time.monotonic() when each sync line was read
        self.synced_keys: list[str] = []  # the key each of those lines names ("" if none)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="log-clock", daemon=True)

    def __enter__(self) -> LogClock:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _read(self) -> None:
        log = None
        pending = ""
        while not self._stop.is_set():
            if log is None:
                added = [path for path in self._folder.iterdir() if path not in self._before]
                if added:
                    log = added[0].open(errors="replace")
            chunk = log.read() if log is not None else ""
            now = time.monotonic()
            *lines, pending = (pending + chunk).split("\n")
            for line in lines:
                if SYNCED in line:
                    key = SYNCED_KEY.search(line)
                    self.synced_keys.append(key.group(1) if key else "")
                    self.synced_at.append(now)  # last: a reader that sees the time has the key
            if not chunk:
                self._stop.wait(0.005)
        if log is not None:
            log.close()


def marks(times: list[float]) -> dict[str, float]:
    """The times of the syncs in :data:`MARKS` that happened, and of the last one."""
    found = {f"sync {n}": round(times[n - 1], 3) for n in MARKS if n <= len(times)}
    if times:
        found["last sync"] = round(times[-1], 3)
    return found


def timed_run(
    controller: controller_bench.Controller, pacing: Pacing, settle: float, logs: Path
) -> dict[str, Any]:
    """controller_bench's run of ``controller``, with its syncs timed from the run's clock."""
    with LogClock(logs) as clock:
        row = controller_bench.run_once(controller, pacing, 200, 1, logs, settle=settle)
        returned = time.monotonic()
    # run_once stops its clock just before it measures its cleanup from ``stopping``.
    started = returned - row["cleanup_seconds"] - row["wall_seconds"]
    times = [when - started for when in clock.synced_at]
    return {"controller": row["controller"], "settle_seconds": row["settle_seconds"],
            "syncs": row["syncs"], "wall_seconds": row["wall_seconds"], **marks(times)}  # fmt: skip


def parse_settles(text: str) -> list[float | None]:
    """``0,refill`` -> [0.0, None]: None is controller_bench's own choice (burst / QPS)."""
    return [None if part == "refill" else float(part) for part in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=parse_settles, default=parse_settles("0,refill"))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    refuse_clusters_not_the_courses()  # before the first request
    exit_on_sigterm()  # a stopped drill still stops its controller
    from helpers.cluster import gobuild

    sample = gobuild.ensure_benchmark_programs()["sample-controller-paced"]
    pacing = Pacing()
    logs = Path(tempfile.mkdtemp(prefix="sync-timeline-"))
    rows = []
    for settle in args.settle:
        wait = pacing.refill_seconds() if settle is None else settle
        for repetition in range(args.repeat):
            for controller in rotated(controller_bench.controllers(sample, pacing), repetition):
                row = timed_run(controller, pacing, wait, logs)
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
    for log in logs.iterdir():
        log.unlink()
    logs.rmdir()
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
