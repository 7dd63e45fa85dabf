"""What our informer's two thread hops cost per watch event, beside the JSON read alone.

A drill run by hand (benchmarks/RESULTS.md records it), not part of run_all.
Our SharedInformer hands each watch event across two threads, as client-go
hands it across goroutines: from the reflector thread to the processing thread
(the RealFIFO), and from there to each handler's own thread (its buffer). In
CPython a hop wakes a sleeping thread, which then waits for the GIL; a
goroutine switch costs far less. This runs informer_bench's events workload
(20,000 updates replayed to a no-op handler) in three shapes, each in a fresh
process, beside the JSON read alone (informer_bench's wire row), on the same
updates in each round:

``course``
    the informer as chapter 03a builds it (run_all's "ours" row);
``no-handler-thread``
    updates handed to the handler on the processing thread (one hop left);
``one-thread``
    once the first list is in the cache, the reflector applies each change
    to the cache and calls the handler itself (no hop).

The last two are measurement variants, made in the child process by
replacing two private methods (:func:`reshape`); the course has neither.

``--decoder orjson`` runs every shape with :mod:`helpers.fastjson` installed
(informer_bench's "ours with helpers.fastjson" row) instead of the standard
library's :mod:`json` that the chapters use: how close a shape comes to the
JSON read alone once decoding is as cheap as this project makes it.

Run: .venv/bin/python -m benchmarks.thread_hops [--rounds 5] [--events 20000] [--decoder orjson]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from benchmarks import informer_bench
from benchmarks.cluster import ConfigMaps, create_namespace
from benchmarks.guard import refuse_clusters_not_the_courses
from benchmarks.stopping import exit_on_sigterm
from helpers import kube

SHAPES = ("course", "no-handler-thread", "one-thread")
WIRE = "the JSON read alone"
DECODERS = {"json": "ours", "orjson": "ours-fastjson"}
"""Which informer_bench row each decoder runs: the chapters' json, or helpers.fastjson."""


def prepare(shape: str, decoder: str) -> str:
    """Shape this process's informer; the informer_bench impl that decodes with ``decoder``.

    ``informer_bench.measure_events`` installs the decoder that impl names.
    """
    reshape(shape)
    return DECODERS[decoder]


def reshape(shape: str) -> None:
    """Give ``helpers.informer.SharedInformer`` the ``shape`` asked, in this process only."""
    from helpers import informer

    if shape == "course":
        return
    course_distribute = informer.SharedInformer._distribute

    def distribute_updates_here(
        self: informer.SharedInformer, notification: Any, sync: bool = False
    ) -> None:
        if not isinstance(notification, informer._Update):
            course_distribute(self, notification, sync)  # adds keep their initial-list bookkeeping
            return
        for registration in self._handlers:
            if not sync or registration in self._syncing:
                registration._dispatch(notification)

    informer.SharedInformer._distribute = distribute_updates_here  # type: ignore[method-assign]
    if shape == "no-handler-thread":
        return
    course_init = informer.SharedInformer.__init__

    def init_applying_on_the_reflector_thread(
        self: informer.SharedInformer, *args: Any, **kwargs: Any
    ) -> None:
        course_init(self, *args, **kwargs)
        fifo, course_push = self.fifo, self.fifo._push

        def push(delta: informer.Delta) -> None:
            if delta.type == informer.REPLACED_ALL or not self.synced.is_set():
                # The list, and whatever follows it until it is in the cache, still go
                # through the processing thread: an update must not overtake the list.
                course_push(delta)
                return
            with self._lock:
                self._apply(delta)

        fifo._push = push  # type: ignore[method-assign]

    informer.SharedInformer.__init__ = init_applying_on_the_reflector_thread  # type: ignore[method-assign]


def run_child(*args: str) -> dict[str, Any]:
    child = informer_bench.Child([sys.executable, "-m", "benchmarks.thread_hops", *args])
    row = child.row()
    child.finish()
    return row


def per_event(row: dict[str, Any]) -> float:
    """Client CPU per event, in microseconds."""
    return row["client_cpu_seconds"] / row["events"] * 1e6


def measure(rounds: int, events: int, decoder: str) -> list[dict[str, Any]]:
    """Each round: fresh updates, then every shape and the wire row once, in rotated order."""
    from helpers.cluster import gobuild

    api = kube.connect()
    configmaps = ConfigMaps(gobuild.ensure_benchmark_programs()["configmaps"])
    create_namespace(api, informer_bench.EVENTS_NAMESPACE)
    configmaps.ensure(informer_bench.EVENTS_NAMESPACE, informer_bench.EVENT_OBJECTS)
    rows = []
    for number in range(rounds):
        since = configmaps.update(
            informer_bench.EVENTS_NAMESPACE, events, informer_bench.EVENT_OBJECTS, f"h{number}"
        ).since
        runs = [*SHAPES, WIRE]
        for name in informer_bench.rotated(runs, number):
            replay = ["--since", since, "--events", str(events)]
            if name == WIRE:
                row = informer_bench.run_python("_wire_events", "--wire-format", "json", *replay)
            else:
                row = run_child("_events", "--shape", name, "--decoder", decoder, *replay)
            row = {"shape": name, "round": number, **row}
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Medians per shape; the ratio to the wire row is taken round by round (same updates)."""
    wire = {row["round"]: row["events_per_second"] for row in rows if row["shape"] == WIRE}
    lines = ["| shape | events per second (runs) | median | vs the JSON read alone "
             "(median of rounds) | client CPU per event (median) |",
             "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for shape in (*SHAPES, WIRE):
        mine = [row for row in rows if row["shape"] == shape]
        rates = [row["events_per_second"] for row in mine]
        ratio = statistics.median(row["events_per_second"] / wire[row["round"]] for row in mine)
        cpu = statistics.median(per_event(row) for row in mine)
        runs = " / ".join(f"{rate:,}" for rate in rates)
        median = statistics.median(rates)
        lines.append(f"| {shape} | {runs} | **{median:,.0f}** | {ratio:.2f}x | {cpu:.1f} µs |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=["all", "_events"], default="all")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--events", type=int, default=informer_bench.EVENTS)
    parser.add_argument("--shape", choices=SHAPES, help="_events: which shape")
    parser.add_argument("--since", help="_events: the resourceVersion the updates follow")
    parser.add_argument("--decoder", choices=list(DECODERS), default="json")
    args = parser.parse_args(argv)
    refuse_clusters_not_the_courses()  # before the first request
    if args.command == "_events":
        impl = prepare(args.shape, args.decoder)
        informer_bench.emit(
            informer_bench.measure_events(
                impl, informer_bench.EVENTS_NAMESPACE, args.since, args.events
            )
        )
        return 0
    exit_on_sigterm()  # a stopped drill still stops its informers' processes
    print(f"Shapes decoding with {args.decoder}:")
    print(table(measure(args.rounds, args.events, args.decoder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
