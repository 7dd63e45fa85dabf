"""Our informer's thread hops, and decoding alone, per watch event, beside the JSON read alone.

A drill run by hand (benchmarks/RESULTS.md records it), not part of run_all.
Our SharedInformer hands each watch event across two threads, as client-go
hands it across goroutines: from the reflector thread to the processing thread
(the RealFIFO), and from there to each handler's own thread (its buffer). In
CPython a hop wakes a sleeping thread, which then waits for the GIL; a
goroutine switch costs far less. This runs informer_bench's events workload
(20,000 updates replayed to a no-op handler) in four shapes, and two readers
that are no informer at all, each in a fresh process, beside the JSON read
alone (informer_bench's wire row), on the same updates in each round:

``course``
    the informer as chapter 03a builds it (run_all's "ours" row);
``batched``
    the processing thread pops up to 1,000 queued deltas of distinct keys at
    once, as client-go does since v0.35 (``RealFIFO.PopBatch``, feature gate
    ``InOrderInformersBatchProcess``, on by default), and applies them under
    one hold of the informer's lock. client-go applies a batch to its store
    in one transaction and then calls the handlers; this applies each delta
    and queues its notification in turn, which the handlers, on their own
    threads, cannot tell apart;
``no-handler-thread``
    updates handed to the handler on the processing thread (one hop left);
``one-thread``
    once the first list is in the cache, the reflector applies each change
    to the cache and calls the handler itself (no hop);
``decode-and-keep``
    no informer: our ``WatchStream`` decodes each event, and the reader strips
    its managedFields, shares its strings (as the reflector does) and keeps it
    in a dict by key, the least a cache does;
``decode-only``
    no informer: our ``WatchStream`` decodes each event, and nothing more.

The informer variants are made in the child process by replacing private
methods (:func:`reshape`); the course has none of them. The two readers say
what any client that decodes each event with this decoder reaches against the
JSON read alone, before an informer does anything.

``--decoder orjson`` runs every shape with :mod:`helpers.fastjson` installed
(informer_bench's "ours with helpers.fastjson" row) instead of the standard
library's :mod:`json` that the chapters use: how close a shape comes to the
JSON read alone once decoding is as cheap as this project makes it.

Run: .venv/bin/python -m benchmarks.thread_hops [--rounds 5] [--events 20000] [--decoder orjson]
         [--shapes course,batched,...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import deque
from typing import Any

from benchmarks import informer_bench
from benchmarks.cluster import ConfigMaps, create_namespace
from benchmarks.connections import ConnectionRecorder
from benchmarks.guard import refuse_clusters_not_the_courses
from benchmarks.stopping import exit_on_sigterm
from helpers import kube
from helpers.decode import share_strings
from helpers.informer import REPLACED_ALL, Delta, strip_managed_fields
from helpers.listwatch import WatchStream
from helpers.store import meta_namespace_key

INFORMER_SHAPES = ("course", "batched", "no-handler-thread", "one-thread")
READERS = ("decode-and-keep", "decode-only")
SHAPES = (*INFORMER_SHAPES, *READERS)
WIRE = "the JSON read alone"
BATCH_LIMIT = 1000
"""The most deltas one batch takes (client-go's RealFIFO batch size)."""
DECODERS = {"json": "ours", "orjson": "ours-fastjson"}
"""Which informer_bench row each decoder runs: the chapters' json, or helpers.fastjson."""


def prepare(shape: str, decoder: str) -> str:
    """Shape this process's informer; the informer_bench impl that decodes with ``decoder``.

    ``informer_bench.measure_events`` installs the decoder that impl names.
    """
    if shape in INFORMER_SHAPES:
        reshape(shape)
    return DECODERS[decoder]


def take_batch(deltas: deque[Delta], limit: int = BATCH_LIMIT) -> list[Delta]:
    """Take from the front of ``deltas`` what client-go's ``RealFIFO.PopBatch`` takes at once.

    Consecutive deltas of distinct keys, at most ``limit``. A ``ReplacedAll``
    (a whole list) is never batched: first in the queue it comes alone,
    later it ends the batch; so does a key already in the batch, so no two
    changes to one object are applied out of their order.
    """
    if deltas and deltas[0].type == REPLACED_ALL:
        return [deltas.popleft()]
    batch: list[Delta] = []
    keys: set[str] = set()
    while deltas and len(batch) < limit and deltas[0].type != REPLACED_ALL:
        key = meta_namespace_key(deltas[0].obj)
        if key in keys:
            break
        keys.add(key)
        batch.append(deltas.popleft())
    return batch


def measure_decoding(
    reader: str, namespace: str, since: str, events: int, timeout_seconds: int = 300
) -> dict[str, Any]:
    """Read the replayed watch through our ``WatchStream``, decoding each event, and no informer.

    The same watch, and the same timing, as informer_bench's
    ``measure_wire_events``: from before the request until the
    ``events``-th event. ``decode-and-keep`` also strips each object's
    managedFields, shares its strings and keeps it by key; ``kept`` is how
    many objects it kept.
    """
    api = kube.connect()  # opens the connection (GET /version) before the clock starts
    recorder = ConnectionRecorder(api)
    kept: dict[str, Any] = {}
    seen = 0
    recorder.start()
    cpu, started = time.process_time(), time.perf_counter()
    stream = WatchStream(
        informer_bench.replayed_watch(api, namespace, since, "json", timeout_seconds)
    )
    try:
        for event in stream:
            if reader == "decode-and-keep":
                obj = share_strings(strip_managed_fields(event["object"]))
                kept[meta_namespace_key(obj)] = obj
            seen += 1
            if seen >= events:
                break
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        stream.close()  # the watch goes on past the last event
    assert seen >= events, f"{reader}: the watch ended after {seen} of {events} events"
    return {"impl": reader, "events": events, "seconds": round(elapsed, 3),
            "events_per_second": round(events / elapsed), "kept": len(kept),
            "client_cpu_seconds": round(cpu, 3), **recorder.fields()}  # fmt: skip


def reshape(shape: str) -> None:
    """Give ``helpers.informer.SharedInformer`` the ``shape`` asked, in this process only."""
    from helpers import informer

    if shape == "course":
        return
    if shape == "batched":
        batch_the_processing_thread()
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


def batch_the_processing_thread() -> None:
    """The ``batched`` shape: the processing thread pops and applies :func:`take_batch` at once."""
    from helpers import informer

    def pop_batch(
        fifo: informer.RealFIFO, clock: Any, deadline: float | None
    ) -> list[informer.Delta]:
        with fifo._cond:
            clock.wait_until(fifo._cond, lambda: bool(fifo._deltas) or fifo._closed, deadline)
            if fifo._closed:
                return []
            return take_batch(fifo._deltas)

    def process_in_batches(self: informer.SharedInformer) -> None:
        while True:
            batch = pop_batch(self.fifo, self._clock, self._next_check)
            if self.fifo.closed:
                return
            with self._lock:
                for delta in batch:
                    try:
                        self._apply(delta)
                    except Exception:  # as the course's loop: one bad delta stops nothing
                        informer.log.exception("could not apply a %s delta", delta.type)
                if self._next_check is not None and self._clock.now() >= self._next_check:
                    self._resync()
            del batch

    informer.SharedInformer._process_loop = process_in_batches  # type: ignore[method-assign]


def run_child(*args: str) -> dict[str, Any]:
    child = informer_bench.Child([sys.executable, "-m", "benchmarks.thread_hops", *args])
    row = child.row()
    child.finish()
    return row


def per_event(row: dict[str, Any]) -> float:
    """Client CPU per event, in microseconds."""
    return row["client_cpu_seconds"] / row["events"] * 1e6


def measure(
    rounds: int, events: int, decoder: str, shapes: tuple[str, ...] = SHAPES
) -> list[dict[str, Any]]:
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
        runs = [*shapes, WIRE]
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
        if not mine:
            continue
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
    parser.add_argument("--shapes", default=",".join(SHAPES), help="which shapes, comma-separated")
    args = parser.parse_args(argv)
    shapes = tuple(args.shapes.split(","))
    if unknown := [shape for shape in shapes if shape not in SHAPES]:
        parser.error(f"unknown shape(s) {', '.join(unknown)}; the shapes are {', '.join(SHAPES)}")
    refuse_clusters_not_the_courses()  # before the first request
    if args.command == "_events":
        impl = prepare(args.shape, args.decoder)
        namespace = informer_bench.EVENTS_NAMESPACE
        if args.shape in READERS:
            informer_bench.use_fast_json(impl)
            row = measure_decoding(args.shape, namespace, args.since, args.events)
        else:
            row = informer_bench.measure_events(impl, namespace, args.since, args.events)
        informer_bench.emit(row)
        return 0
    exit_on_sigterm()  # a stopped drill still stops its informers' processes
    print(f"Shapes decoding with {args.decoder}:")
    print(table(measure(args.rounds, args.events, args.decoder, shapes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
