"""Our SharedInformer beside the official client's and client-go's, on the same cluster and work.

Not a timed test: ``benchmarks/run_all`` records the rows in benchmarks/results.json.
Two workloads:

``sync``
    Initial sync of N ConfigMaps in one namespace: seconds from start until
    the cache holds all of them, peak RSS, and resident memory per cached
    object ((RSS after sync - RSS before start) / objects), measured twice:
    right after the sync, and again after a fifth of the objects were updated
    through the watch (``configmaps -update``). "ours" strips managedFields
    (our default transform), "ours-unstripped" keeps objects whole, as the
    official informer does.
``events``
    Events per second delivered to a no-op handler. 20,000 updates to 100
    ConfigMaps are made first; each informer then lists at the resourceVersion
    before them and its watch replays them all as fast as the informer takes
    them: the measure is the informer's pipeline (decode, cache, dispatch),
    not how fast anyone can write.

Both sides do the same work (benchmarks/go/informerbench says the Go side's terms):

- Warm connections: every client asks the API server for ``/version`` before
  its clock starts (``kube.connect()``; the Go program does the same), and
  every row says how many connections it opened while timed
  (``connections_opened``) and which HTTP version its requests used (``http``).
- client-go runs over JSON at HTTP/1.1 (what the Python clients speak) and at
  HTTP/2 (what it negotiates when left alone), and over protobuf, its default.
- Every client-go row strips managedFields, as ours does, in both workloads;
  the official client has no transform and keeps them.
- The handlers count under a lock (Python) or a mutex (Go).

``--wire`` adds rows that read the same responses with nothing decoded, in
JSON and protobuf, the way our informer reads them (``_wire_sync``: the first
LIST, in 64 KiB reads as ``decode_list`` asks; ``_wire_events``: the replayed
watch, one HTTP chunk at a time as ``WatchStream`` reads, frames counted).
They show how fast the bytes alone arrive through urllib3 on this machine.
They are not a bound on a client: the API server flushes a watch after an
event only when no other event is waiting (k8s.io/apiserver's watch handler,
``if len(ch) == 0 { flusher.Flush() }``), so a reader that keeps up costs it
a write per event, and one that takes longer over each gets several per write
(the events table's API server column shows what each reader cost).

Every events row also records ``server_cpu_seconds``: the CPU time the
kube-apiserver process spent meanwhile (read from ``/proc``; the local control
plane only, absent on kind).

Each measurement runs in a process of its own, so one does not inherit the
other's memory. Needs the course's cluster (``make up``; KUBECONFIG as
``python -m helpers.cluster kubeconfig`` prints).

Run: .venv/bin/python -m benchmarks.informer_bench sync|events|all [--count 10000] [--wire]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import kubernetes
import urllib3

from benchmarks.cluster import (
    ConfigMaps,
    Measure,
    Updates,
    api_server_pid,
    create_namespace,
    go_environment,
    with_server_cpu,
)
from benchmarks.connections import ConnectionRecorder
from benchmarks.guard import refuse_clusters_not_the_courses
from benchmarks.stopping import exit_on_sigterm
from helpers import kube

ROOT = Path(__file__).resolve().parents[1]
SYNC_NAMESPACE = "bench-sync"
EVENTS_NAMESPACE = "bench-events"
EVENTS = 20_000
"""Events replayed: enough that client-go over protobuf runs for about a quarter of a second.

With 5,000, its run lasted under 0.1 s, of which its start (process, LIST,
watch request) took about a third; the rate then measured start-up as much as
the event pipeline, ours as well as client-go's.
"""
EVENT_OBJECTS = 100
"""The ConfigMaps the events workload's updates are spread over."""
UPDATED_SHARE = 5
"""After a sync, one object in this many is updated (through the watch) and memory is read again."""
REPLAY_FRESH_SECONDS = 240.0
"""How long one round of updates is replayed before another is made.

A watch from an old resourceVersion needs it not yet compacted: the API
server compacts etcd every 5 minutes, keeping at least the last 5 minutes.
"""
PYTHON_IMPLS = ("ours", "ours-fastjson", "ours-unstripped", "official")
EVENTS_IMPLS = ("ours", "ours-fastjson", "official")
"""The informers of the events workload (ours-unstripped is in the sync tables only)."""


def emit(row: dict[str, Any]) -> None:
    """One row, as one line of JSON on stdout (the parent reads them line by line)."""
    print(json.dumps(row), flush=True)


def free_memory() -> bool:
    """Collect garbage and hand free heap pages back to the system, as the Go side does;
    whether they could be handed back (the row records it, and the report says so).

    The Go program measures after ``runtime.GC()`` and ``debug.FreeOSMemory()``,
    which returns the pages its collector freed. CPython's counterpart of the
    collection is ``gc.collect()``; of the return, glibc's ``malloc_trim(0)``
    (a freed object's memory otherwise stays resident, in malloc's heap or in
    an arena that still holds one live object). Elsewhere than glibc there is
    no such call, and the figure includes what is free but still held.
    """
    gc.collect()
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    libc.malloc_trim(0)
    return True


M_TRIM_THRESHOLD = -1
"""mallopt's number for glibc's trim threshold (``<malloc.h>``)."""
TRIM_THRESHOLD = 128 * 1024
"""glibc's default trim threshold (mallopt(3))."""


def hold_trim_threshold() -> int | None:
    """Hold glibc's trim threshold at its 128 KiB default; the threshold held (None: not glibc).

    :func:`free_memory`'s ``malloc_trim(0)`` hands back the free top of the
    main arena and the free pages inside every arena's free chunks, but not the
    free top of another thread's arena: that goes back only when a ``free()``
    leaves it above the trim threshold, and glibc raises the threshold by
    itself, to twice the largest block it has unmapped (a dict's old table:
    megabytes). So the informer's threads kept their free tops resident, and
    the figure counted them: 54 B per object of the 1,969 B on 100,001
    ConfigMaps, all of it free by glibc's own count (``mallinfo2``). Setting the
    threshold turns that raising off (mallopt(3)), so a thread's arena hands its
    free top back as it frees it; Go's ``debug.FreeOSMemory`` hands back what
    its heap has free wherever it is. Called before the informer starts.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return TRIM_THRESHOLD if libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 else None


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_mib() -> float:
    """This process's peak resident memory (VmHWM).

    Not ``getrusage``'s ``ru_maxrss``: on Linux a child starts with its parent's
    figure, so a small child reports the orchestrating parent's peak.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("/proc/self/status has no VmHWM line")


def use_fast_json(impl: str) -> None:
    """``ours-fastjson`` is ours with helpers.fastjson's one swap (orjson) installed."""
    if impl == "ours-fastjson":
        from helpers import fastjson

        fastjson.install()


def wait_for_value(data_of: Callable[[str], dict[str, str] | None], key: str, value: str) -> None:
    """Poll the cache every 10 ms (as informerbench does) until ``key`` has data.round == value."""
    deadline = time.monotonic() + 600
    while ((data_of(key) or {}).get("round")) != value:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{key} never had data.round={value} in the cache")
        time.sleep(0.01)


# -- one measurement, in its own process -------------------------------------------


def measure_sync(impl: str, namespace: str, objects: int, then_updates: bool) -> None:
    """Sync ``namespace``, emit the row; with ``then_updates``, wait for updates and emit memory.

    ``objects`` is how many the namespace holds: the official informer has no
    has_synced, so its cache is synced when it holds that many.

    The second row is emitted once the parent has written "KEY VALUE" on
    stdin (see :class:`benchmarks.cluster.Updates`) and the cache shows it.
    """
    api = kube.connect()  # opens the connection (GET /version) before the clock starts
    recorder = ConnectionRecorder(api)
    use_fast_json(impl)
    # Imported before the clock starts, as the Go program is loaded before it starts.
    from kubernetes.informer import SharedInformer as OfficialInformer

    from helpers.informer import SharedInformer, strip_managed_fields, wait_for_cache_sync
    from helpers.listwatch import ListWatch

    trim_threshold = hold_trim_threshold()
    free_memory()
    before = rss_bytes()
    recorder.start()
    started = time.perf_counter()
    if impl.startswith("ours"):
        informer = SharedInformer(
            ListWatch(api, f"/api/v1/namespaces/{namespace}/configmaps"),
            name="bench",
            transform=None if impl == "ours-unstripped" else strip_managed_fields,
        )
        informer.start()
        assert wait_for_cache_sync(informer.has_synced, timeout=600)
        synced = time.perf_counter()
        size = len(informer.indexer.list_keys())

        def data_of(key: str) -> dict[str, str] | None:
            return (informer.indexer.get_by_key(key) or {}).get("data")

    else:
        # Synced when it holds every object. (If its first list fails it
        # retries and reports MODIFIED, so watch both.)
        full = threading.Event()
        official = OfficialInformer(
            kubernetes.client.CoreV1Api(api).list_namespaced_config_map, namespace=namespace
        )
        events = {"n": 0}

        def check(_: Any) -> None:
            events["n"] += 1  # handlers run on its one watch thread: no race
            if events["n"] >= objects and len(official.cache.list_keys()) >= objects:
                full.set()

        official.add_event_handler("ADDED", check)
        official.add_event_handler("MODIFIED", check)
        official.start()
        assert full.wait(600), "the official informer never held every object"
        synced = time.perf_counter()
        size = len(official.cache.list_keys())

        def data_of(key: str) -> dict[str, str] | None:
            found = official.cache.get_by_key(key)
            return None if found is None else found.data

    connection = recorder.fields()
    trimmed = free_memory()
    after = rss_bytes()
    emit({"impl": impl, "objects": size, "sync_seconds": round(synced - started, 3),
          "peak_rss_mib": peak_rss_mib(), "bytes_per_object": round((after - before) / size),
          "malloc_trim": trimmed, "trim_threshold": trim_threshold,
          **connection})  # fmt: skip
    if then_updates:
        key, value = sys.stdin.readline().split()
        wait_for_value(data_of, key, value)
        free_memory()
        emit({"bytes_per_object_after_updates": round((rss_bytes() - before) / size),
              "peak_rss_mib_after_updates": peak_rss_mib()})  # fmt: skip
    if impl.startswith("ours"):
        informer.stop()
    # The official informer's stop() blocks until its watch sees another event
    # (the read has no timeout); its thread is a daemon, so the process just exits.


def measure_events(impl: str, namespace: str, since: str, events: int) -> dict[str, Any]:
    api = kube.connect()  # opens the connection (GET /version) before the clock starts
    recorder = ConnectionRecorder(api)
    use_fast_json(impl)
    done = threading.Event()
    counter = {"n": 0}
    lock = threading.Lock()

    def count(*_: Any) -> None:
        with lock:
            counter["n"] += 1
            if counter["n"] >= events:
                done.set()

    # Imports and class definitions come before the clock starts, as the Go
    # program starts its clock just before building the informer: loading
    # modules is a one-time cost of the process, not of handling events.
    from kubernetes.informer import SharedInformer as OfficialInformer

    from helpers import listwatch
    from helpers.informer import SharedInformer
    from helpers.listwatch import ListWatch

    class ListFromThen(ListWatch):
        """Lists the collection as it was at ``since``, so the watch replays what followed."""

        def list(self, *_: Any, **__: Any) -> dict[str, Any]:
            query = [("resourceVersion", since), ("resourceVersionMatch", "Exact")]
            response = self._get(query, (self.connect_timeout, self.list_read_timeout))
            try:
                return listwatch.decode_list(response.data)  # fastjson may swap it
            finally:
                response.release_conn()

    recorder.start()
    cpu, started = time.process_time(), time.perf_counter()
    if impl.startswith("ours"):
        # No indexes, as informerbench's events informer (cache.Indexers{}); the
        # default transform strips managedFields, as informerbench's -strip.
        informer = SharedInformer(
            ListFromThen(api, f"/api/v1/namespaces/{namespace}/configmaps"),
            name="bench",
            indexers={},
        )
        informer.add_event_handler(on_update=lambda old, new: count())
        informer.start()
    else:
        informer = OfficialInformer(
            kubernetes.client.CoreV1Api(api).list_namespaced_config_map, namespace=namespace
        )
        informer._resource_version = since  # skip its list: watch from `since` (no public API)
        informer.add_event_handler("MODIFIED", lambda obj: count())
        informer.start()
    finished = done.wait(300)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    connection = recorder.fields()
    if impl.startswith("ours"):
        informer.stop()  # see measure_sync for why the official one is left to exit
    assert finished, f"{impl}: only {counter['n']} of {events} events arrived"
    return {"impl": impl, "events": events, "seconds": round(elapsed, 3),
            "events_per_second": round(events / elapsed), "client_cpu_seconds": round(cpu, 3),
            **connection}  # fmt: skip


# -- the wire alone: bytes read as ours reads them, nothing decoded ---------------------------

# The Accept header for each format, (LIST, WATCH), as client-go sends them: a
# protobuf watch asks for stream=watch (its frames are length-prefixed).
WIRE_ACCEPT = {
    "json": ("application/json", "application/json"),
    "protobuf": ("application/vnd.kubernetes.protobuf",
                 "application/vnd.kubernetes.protobuf;stream=watch"),
}  # fmt: skip
LIST_READ = 64 * 1024
"""Bytes each read of a LIST asks for, as ``decode_list`` asks (``helpers.decode._Text.CHUNK``)."""


def _wire_get(api: kubernetes.client.ApiClient, path: str, query: list[tuple[str, str]],
              accept: str) -> urllib3.HTTPResponse:  # fmt: skip
    """GET ``path`` unread, through the course's client: our TLS, auth, pool and timeouts.

    Like helpers/listwatch.py's ``_get``, only with the Accept header asked
    for, so the wire rows differ from our informer's requests in nothing but
    the format and the decoding left out.
    """
    return api.call_api(
        path, "GET", query_params=query, header_params={"Accept": accept},
        auth_settings=["BearerToken"], _preload_content=False,
        _return_http_data_only=True, _request_timeout=(10, 300),
    )  # fmt: skip


def replayed_watch(
    api: kubernetes.client.ApiClient, namespace: str, since: str, wire: str, timeout_seconds: int
) -> urllib3.HTTPResponse:
    """The watch the events workload replays, from ``since``, no bookmarks, unread.

    Every reader of the replay (the wire rows, benchmarks/thread_hops.py's
    decoding readers) opens this one request, so they differ only in what
    they do with its bytes. The server ends it after ``timeout_seconds``.
    """
    query = [("watch", "true"), ("resourceVersion", since),
             ("timeoutSeconds", str(timeout_seconds))]  # fmt: skip
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    return _wire_get(api, path, query, WIRE_ACCEPT[wire][1])


def count_frames(pending: bytes, wire: str) -> tuple[int, bytes]:
    """Whole frames at the front of ``pending``, and the bytes left over (a frame still arriving).

    JSON watch events are one per line; protobuf ones are a 4-byte big-endian
    length and that many bytes. Only the frame boundaries are found: nothing
    is decoded.
    """
    if wire == "json":
        lines = pending.count(b"\n")
        return lines, pending[pending.rfind(b"\n") + 1 :]
    frames, at = 0, 0
    while len(pending) - at >= 4:
        size = int.from_bytes(pending[at : at + 4], "big")
        if len(pending) - at - 4 < size:
            break
        at += 4 + size
        frames += 1
    return frames, pending[at:]


def measure_wire_events(
    wire: str, namespace: str, since: str, events: int, timeout_seconds: int = 300
) -> dict[str, Any]:
    """Read the watch the events workload replays as ours reads it, counting frames only.

    The same watch as the informers' (from ``since``, no bookmarks), read one
    HTTP chunk at a time as helpers.listwatch's ``WatchStream`` reads it, and
    timed the same way (from before the request until the ``events``-th
    event). ``frames`` is how many whole frames had arrived by then: the
    replayed watch holds exactly ``events``, so anything else means
    miscounted frames. The server ends the watch after ``timeout_seconds``,
    should fewer arrive. ``client_cpu_seconds`` is this process's CPU time
    meanwhile: well below ``seconds``, the reader mostly waited for the API
    server.
    """
    api = kube.connect()
    recorder = ConnectionRecorder(api)
    recorder.start()
    cpu, started = time.process_time(), time.perf_counter()
    response = replayed_watch(api, namespace, since, wire, timeout_seconds)
    frames, pending, received = 0, b"", 0
    try:
        for chunk in response.stream(amt=None):
            received += len(chunk)
            found, pending = count_frames(pending + chunk, wire)
            frames += found
            if frames >= events:
                break
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        response.close()  # the watch goes on past the last event: drop the connection
    assert frames >= events, f"wire-{wire}: the watch ended after {frames} of {events} events"
    return {"impl": f"wire-{wire}", "events": events, "frames": frames,
            "seconds": round(elapsed, 3), "events_per_second": round(events / elapsed),
            "bytes": received, "client_cpu_seconds": round(cpu, 3),
            **recorder.fields()}  # fmt: skip


def measure_wire_sync(wire: str, namespace: str) -> dict[str, Any]:
    """Read our reflector's first LIST (resourceVersion=0, limit=500) to its last byte, undecoded.

    The watch cache answers a LIST at resourceVersion 0 from memory in one
    response, so this is the whole sync's traffic, read in the pieces
    ``decode_list`` reads it in (``client_cpu_seconds`` as in
    :func:`measure_wire_events`).
    """
    import inspect

    from helpers.reflector import Reflector

    limit = inspect.signature(Reflector).parameters["page_size"].default  # what ours asks
    api = kube.connect()
    recorder = ConnectionRecorder(api)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    query = [("resourceVersion", "0"), ("limit", str(limit))]
    recorder.start()
    cpu, started = time.process_time(), time.perf_counter()
    response = _wire_get(api, path, query, WIRE_ACCEPT[wire][0])
    received = 0
    try:
        while chunk := response.read(LIST_READ):
            received += len(chunk)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        response.release_conn()  # read to its end: the connection can be used again
    return {"impl": f"wire-{wire}", "sync_seconds": round(elapsed, 3), "bytes": received,
            "limit": limit, "client_cpu_seconds": round(cpu, 3),
            **recorder.fields()}  # fmt: skip


# -- client-go ------------------------------------------------------------------------


@dataclass(frozen=True)
class GoVariant:
    """One way to run client-go's informer (benchmarks/go/informerbench)."""

    content_type: str  # "json" or "protobuf"
    streaming: bool  # fill the cache with a streaming list (client-go's default since 1.35)
    http1: bool  # offer HTTP/1.1 only; else client-go negotiates HTTP/2

    @property
    def label(self) -> str:
        mode = "stream" if self.streaming else "list"
        return f"client-go ({mode}, {self.content_type}, {self.http})"

    @property
    def http(self) -> str:
        return "HTTP/1.1" if self.http1 else "HTTP/2"

    def command(self, program: Path, *args: str) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that run this variant."""
        environment = go_environment(KUBE_FEATURE_WatchListClient=str(self.streaming).lower())
        flags = ["-strip", "-content-type", self.content_type] + (["-http1"] if self.http1 else [])
        return [str(program), *args, *flags], environment

    def check(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row, labelled, after checking that it ran as asked (list mode, HTTP version)."""
        want = "streaming" if self.streaming else "list"
        if row["list_mode"] != want:
            raise RuntimeError(f"{self.label}: client-go listed by {row['list_mode']}, not {want}")
        if row["http"] != self.http:
            raise RuntimeError(f"{self.label}: the requests went over {row['http']}")
        return {**row, "impl": self.label}


GO_VARIANTS = [
    GoVariant(content_type, streaming, http1)
    for content_type, streaming, http1 in [
        ("json", False, True),
        ("json", False, False),
        ("json", True, True),
        ("json", True, False),
        ("protobuf", True, False),  # what a client-go program gets when left alone
        ("protobuf", False, False),
    ]
]
GO = {variant.label: variant for variant in GO_VARIANTS}
GO_DEFAULT = "client-go (stream, protobuf, HTTP/2)"
GO_SYNC = [label for label in GO if label != "client-go (list, protobuf, HTTP/2)"]
# Replaying from a resourceVersion needs a LIST at exactly that version: list mode only.
GO_EVENTS = [label for label, variant in GO.items() if not variant.streaming]


# -- processes ------------------------------------------------------------------------------


class Child:
    """A measuring process: its rows are JSON lines on stdout; its stderr is the parent's.

    A sync child emits its row once synced; one started to wait for updates
    then reads "KEY VALUE" on stdin (:meth:`notify`) and emits a second row.
    """

    def __init__(self, command: list[str], environment: dict[str, str] | None = None) -> None:
        self.command = command
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
            env=environment if environment is not None else child_environment(),
        )  # fmt: skip

    def row(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            raise RuntimeError(
                f"{' '.join(self.command)} exited ({self.process.returncode}) without a row"
            )
        return json.loads(line)

    def notify(self, updates: Updates) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{updates.last_key} {updates.last_value}\n")
        self.process.stdin.flush()

    def finish(self) -> None:
        """Close stdin and wait for the process; it must succeed."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        if self.process.wait(120) != 0:
            raise RuntimeError(f"{' '.join(self.command)} failed ({self.process.returncode})")


def child_environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def python_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "benchmarks.informer_bench", *args]


def run_python(*args: str) -> dict[str, Any]:
    """Run one Python measurement to its end; its one row."""
    child = Child(python_command(*args))
    row = child.row()
    child.finish()
    return row


def rotated(runs: list[Any], repeat: int) -> list[Any]:
    """``runs`` started at a different one each repeat.

    Whatever precedes a run (the objects just created, the previous client's
    watch winding down on the API server) then falls on every informer in
    turn, not always on the first one listed. The first repeat keeps the
    listed order, which is the order the report's tables show.
    """
    start = repeat % len(runs) if runs else 0
    return runs[start:] + runs[:start]


# -- the sync workload --------------------------------------------------------------------


@dataclass(frozen=True)
class SyncRun:
    """One informer's sync, to be started as a process of its own."""

    command: list[str]
    environment: dict[str, str] | None = None
    waits_for_updates: bool = False
    go: str | None = None  # the client-go variant's label, to check its row against

    def start(self) -> Child:
        return Child(self.command, self.environment)


def sync_runs(namespace: str, objects: int, python: list[str], go: list[str], wire: bool,
              go_program: Path, then_updates: bool) -> list[SyncRun]:  # fmt: skip
    """The processes that sync ``namespace``, in the order the tables list them."""
    updates = ["--then-updates"] if then_updates else []
    runs = [
        SyncRun(python_command("_sync", "--impl", impl, "--namespace", namespace,
                               "--objects", str(objects), *updates),
                waits_for_updates=then_updates)
        for impl in python
    ]  # fmt: skip
    runs += [
        SyncRun(python_command("_wire_sync", "--wire-format", wire, "--namespace", namespace))
        for wire in (WIRE_ACCEPT if wire else [])
    ]
    for label in go:
        command, environment = GO[label].command(
            go_program, "-mode", "sync", "-namespace", namespace,
            *(["-then-updates"] if then_updates else []),
        )  # fmt: skip
        runs.append(SyncRun(command, environment, then_updates, label))
    return runs


def run_sync(runs: list[SyncRun], repeat: int, namespace: str, configmaps: ConfigMaps,
             count: int) -> list[dict[str, Any]]:  # fmt: skip
    """Each run syncs in turn, one at a time, ``repeat`` times; then a fifth of the objects changes.

    Every process that waits for the updates stays alive (its watch open and
    idle) while the others sync, so one round of updates (each of
    ``count / UPDATED_SHARE`` objects updated once) serves every repeat; each
    process then reads its own memory again.
    """
    rows: list[dict[str, Any]] = []
    waiting: list[tuple[dict[str, Any], Child]] = []
    try:
        for repetition in range(repeat):
            for run in rotated(runs, repetition):
                child = run.start()
                row = child.row()
                if run.go is not None:
                    row = GO[run.go].check(row)
                row = {**row, "count": count, "repeat": repetition}
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
                if run.waits_for_updates:
                    waiting.append((row, child))
                else:
                    child.finish()
        if waiting:
            share = count // UPDATED_SHARE
            done = configmaps.update(namespace, share, share, f"r{time.time_ns()}")
            print(f"{namespace}: {done.updates} updates in {done.seconds} s", file=sys.stderr)
            for _, child in waiting:
                child.notify(done)
            for row, child in waiting:
                row.update({key: value for key, value in child.row().items() if key != "go"})
                row["updated_objects"] = done.updates
                child.finish()
    finally:
        for _, child in waiting:
            if child.process.poll() is None:
                child.process.kill()
    return rows


# -- the events workload ------------------------------------------------------------------


@dataclass
class Replay:
    """The events workload's updates: made once, replayed by every informer until they age.

    A fresh round is made after :data:`REPLAY_FRESH_SECONDS`, so a watch from
    ``since`` never meets a compacted resourceVersion.
    """

    configmaps: ConfigMaps
    events: int
    made: list[Updates] = field(default_factory=list)
    _at: float = 0.0

    def since(self) -> str:
        if not self.made or time.monotonic() - self._at > REPLAY_FRESH_SECONDS:
            self._at = time.monotonic()
            done = self.configmaps.update(
                EVENTS_NAMESPACE, self.events, EVENT_OBJECTS, f"e{time.time_ns()}"
            )
            print(f"{EVENTS_NAMESPACE}: {done.updates} updates in {done.seconds} s",
                  file=sys.stderr)  # fmt: skip
            self.made.append(done)
        return self.made[-1].since


def run_events(
    python: list[str],
    go: list[str],
    wire: bool,
    repeat: int,
    events: int,
    go_program: Path,
    configmaps: ConfigMaps,
    api: kubernetes.client.ApiClient,
) -> tuple[list[dict[str, Any]], Replay]:
    """Every informer replays the same updates, ``repeat`` times, in rotated order."""
    create_namespace(api, EVENTS_NAMESPACE)
    configmaps.ensure(EVENTS_NAMESPACE, EVENT_OBJECTS)
    replay = Replay(configmaps, events)
    server = api_server_pid()
    rows = []
    for repetition in range(repeat):
        since = replay.since()
        count = str(events)
        runs: list[Measure] = [
            *(partial(run_python, "_events", "--impl", impl, "--since", since, "--events", count)
              for impl in python),
            *(partial(run_python, "_wire_events", "--wire-format", wire, "--since", since,
                      "--events", count) for wire in (WIRE_ACCEPT if wire else [])),
            *(partial(go_events, go_program, label, since, events) for label in go),
        ]  # fmt: skip
        for measure in rotated(runs, repetition):
            row = {**with_server_cpu(server, measure), "repeat": repetition}
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    return rows, replay


def go_events(program: Path, label: str, since: str, events: int) -> dict[str, Any]:
    command, environment = GO[label].command(
        program, "-mode", "events", "-namespace", EVENTS_NAMESPACE, "-since", since,
        "-events", str(events),
    )  # fmt: skip
    output = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    if output.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {output.stderr.strip()}")
    return GO[label].check(json.loads(output.stdout.strip().splitlines()[-1]))


# -- the command line ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = ["all", "sync", "events", "_sync", "_events", "_wire_sync", "_wire_events"]
    parser.add_argument("command", choices=commands)
    parser.add_argument("--impl", choices=PYTHON_IMPLS)
    parser.add_argument("--wire-format", choices=list(WIRE_ACCEPT), help="_wire_*: which format")
    parser.add_argument("--namespace", default=SYNC_NAMESPACE, help="sync: where the objects are")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--since")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--objects", type=int, help="_sync: how many the namespace holds")
    parser.add_argument("--then-updates", action="store_true", help="_sync: see measure_sync")
    parser.add_argument("--wire", action="store_true", help="add the rows that decode nothing")
    args = parser.parse_args(argv)
    refuse_clusters_not_the_courses()  # before the first request

    if args.command == "_sync":
        measure_sync(args.impl, args.namespace, args.objects, args.then_updates)
        return
    if args.command == "_events":
        emit(measure_events(args.impl, EVENTS_NAMESPACE, args.since, args.events))
        return
    if args.command.startswith("_wire") and args.wire_format is None:
        parser.error(f"{args.command} needs --wire-format ({' or '.join(WIRE_ACCEPT)})")
    if args.command == "_wire_sync":
        emit(measure_wire_sync(args.wire_format, args.namespace))
        return
    if args.command == "_wire_events":
        emit(measure_wire_events(args.wire_format, EVENTS_NAMESPACE, args.since, args.events))
        return

    exit_on_sigterm()  # from here on it starts the informers' processes: a stopped run stops them
    from helpers.cluster import gobuild

    programs = gobuild.ensure_benchmark_programs()
    configmaps = ConfigMaps(programs["configmaps"])
    api = kube.connect()
    results: dict[str, Any] = {}
    if args.command in ("all", "sync"):
        create_namespace(api, args.namespace)
        objects = configmaps.ensure(args.namespace, args.count)
        runs = sync_runs(args.namespace, objects, list(PYTHON_IMPLS), GO_SYNC, args.wire,
                         programs["informerbench"], then_updates=True)  # fmt: skip
        results["sync"] = run_sync(runs, args.repeat, args.namespace, configmaps, args.count)
    if args.command in ("all", "events"):
        results["events"], _ = run_events(
            list(EVENTS_IMPLS), GO_EVENTS, args.wire, args.repeat,
            args.events, programs["informerbench"], configmaps, api,
        )  # fmt: skip
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
