"""Where our informer spends its time: cProfile over informer_bench.py's two workloads.

Not a test: ``benchmarks/run_all`` records the summary in benchmarks/results.json.
The informer works on threads of its own (reflector, processor, handlers), and
cProfile sees only the thread that enabled it, so every thread started while
the profile runs gets a profiler of its own (``Thread.run`` is wrapped) and
the profiles are merged. Each function's own time (``tottime``) is put in one
of a few buckets by the file it lives in, so the answer reads "decoding JSON
took X% of the time".

Workloads (the namespaces informer_bench.py populates first):

``sync``
    start a SharedInformer on ``--namespace`` (``bench-sync``) and wait until it has synced.
``events``
    replay ``--events`` updates made after ``--since`` (informer_bench.py's
    ListFromThen); without ``--since``, make them first (benchmarks/go's
    ``configmaps``).

With ``--fast-json`` the same runs use :mod:`helpers.fastjson` (orjson).

Run: .venv/bin/python -m benchmarks.profile_informer sync|events
         [--events 20000] [--since RV] [--fast-json] [--top 12]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks import informer_bench
from benchmarks.cluster import ConfigMaps, create_namespace
from benchmarks.guard import refuse_clusters_not_the_courses
from helpers import kube

WAITING_BUCKET = "waiting (locks, queues, sleeps)"
BUCKETS = (
    # (bucket, a substring of the file or function name); the first match wins.
    ("JSON decoding", ("json/decoder", "json/__init__", "json/scanner", "orjson", "_json")),
    (
        "HTTP and TLS reads",
        (
            "urllib3",
            "http/client",
            "ssl.py",
            "socket.py",
            "<method 'read",
            "<method 'recv",
            "<method 'readinto",
        ),
    ),
    ("decode_list and key sharing", ("decode.py", "listwatch.py")),
    ("store and indexer", ("store.py", "lister.py")),
    ("reflector", ("reflector.py",)),
    ("informer dispatch and handlers", ("informer.py", "profile_informer.py")),
    (
        "waiting (locks, queues, sleeps)",
        ("threading.py", "queue.py", "<method 'acquire", "<built-in method time.sleep"),
    ),
)


@contextmanager
def profile_all_threads() -> Iterator[list[cProfile.Profile]]:
    """Profile this thread and every thread started inside the block."""
    profiles: list[cProfile.Profile] = []
    original_run = threading.Thread.run

    def profiled_run(self: threading.Thread) -> None:
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()
        try:
            original_run(self)
        finally:
            profile.disable()

    threading.Thread.run = profiled_run  # type: ignore[method-assign]
    main = cProfile.Profile()
    profiles.append(main)
    main.enable()
    try:
        yield profiles
    finally:
        main.disable()
        threading.Thread.run = original_run  # type: ignore[method-assign]


def bucket_of(function: tuple[str, int, str]) -> str:
    where = f"{function[0]}:{function[2]}"
    for name, needles in BUCKETS:
        if any(needle in where for needle in needles):
            return name
    return "other"


WAITING = WAITING_BUCKET


def summarise(profiles: list[cProfile.Profile], top: int) -> dict[str, Any]:
    """Own time by bucket and the top functions by own time, leaving out idle waiting.

    A thread blocked on a lock or a sleep shows that time as the lock's own
    time; it is reported apart (``waiting_seconds``), and the shares are of
    the rest. A blocking socket read is not idle in that sense: it is the
    informer waiting for the API server's bytes, so it stays in.
    """
    stats = pstats.Stats(profiles[0])
    for profile in profiles[1:]:
        profile.create_stats()
        if profile.stats:  # type: ignore[attr-defined]
            stats.add(profile)
    entries = stats.stats  # type: ignore[attr-defined]
    buckets: dict[str, float] = {}
    for function, entry in entries.items():
        buckets[bucket_of(function)] = buckets.get(bucket_of(function), 0.0) + entry[2]
    waiting = buckets.pop(WAITING, 0.0)
    busy = sum(buckets.values()) or 1.0
    working = {f: e for f, e in entries.items() if bucket_of(f) != WAITING}
    ranked = sorted(working.items(), key=lambda item: item[1][2], reverse=True)[:top]
    return {
        "profiled_seconds": round(busy, 3),
        "waiting_seconds": round(waiting, 3),
        "buckets": {
            name: round(100 * seconds / busy, 1)
            for name, seconds in sorted(buckets.items(), key=lambda b: -b[1])
        },
        "top": [
            {
                "function": f"{f[0].rsplit('/', 2)[-1]}:{f[1]}({f[2]})",
                "calls": e[1],
                "own_seconds": round(e[2], 3),
            }
            for f, e in ranked
        ],
    }


def run_sync(namespace: str) -> Callable[[], float]:
    from helpers.informer import SharedInformer, strip_managed_fields, wait_for_cache_sync
    from helpers.listwatch import ListWatch

    api = kube.connect()

    def go() -> float:
        started = time.perf_counter()
        informer = SharedInformer(
            ListWatch(api, f"/api/v1/namespaces/{namespace}/configmaps"),
            name="profile", transform=strip_managed_fields,
        )  # fmt: skip
        informer.start()
        assert wait_for_cache_sync(informer.has_synced, timeout=600)
        seconds = time.perf_counter() - started
        informer.stop()
        return seconds

    return go


def run_events(namespace: str, since: str, events: int) -> Callable[[], float]:
    def go() -> float:  # the same replay as the benchmark's
        return informer_bench.measure_events("ours", namespace, since, events)["seconds"]

    return go


def fresh_updates(events: int) -> str:
    """Make ``events`` updates now (as informer_bench does); the resourceVersion before them."""
    from helpers.cluster import gobuild

    configmaps = ConfigMaps(gobuild.ensure_benchmark_programs()["configmaps"])
    create_namespace(kube.connect(), informer_bench.EVENTS_NAMESPACE)
    configmaps.ensure(informer_bench.EVENTS_NAMESPACE, informer_bench.EVENT_OBJECTS)
    token = f"p{time.time_ns()}"
    done = configmaps.update(
        informer_bench.EVENTS_NAMESPACE, events, informer_bench.EVENT_OBJECTS, token
    )
    return done.since


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["sync", "events"])
    parser.add_argument("--namespace", default=informer_bench.SYNC_NAMESPACE, help="sync: where")
    parser.add_argument("--since", help="events: the resourceVersion to replay from")
    parser.add_argument("--events", type=int, default=informer_bench.EVENTS)
    parser.add_argument("--fast-json", action="store_true", help="use helpers.fastjson (orjson)")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    refuse_clusters_not_the_courses()  # before the first request
    if args.fast_json:
        from helpers import fastjson

        fastjson.install()
    if args.workload == "sync":
        work = run_sync(args.namespace)
    else:
        # A fresh resourceVersion unless given: the API server compacts old
        # versions every few minutes, after which a list at one answers 410 Gone.
        since = args.since or fresh_updates(args.events)
        work = run_events(informer_bench.EVENTS_NAMESPACE, since, args.events)
    with profile_all_threads() as profiles:
        seconds = work()
    result = {"workload": args.workload, "fast_json": args.fast_json, "seconds": round(seconds, 3)}
    print(json.dumps({**result, **summarise(profiles, args.top)}))


if __name__ == "__main__":
    main()
