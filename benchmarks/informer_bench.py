"""Our SharedInformer beside the official client's, on the same cluster and workload.

Not a timed test: measurements recorded in benchmarks/RESULTS.md. Two workloads:

``sync``
    Initial sync of N ConfigMaps (default 10,000) in one namespace: seconds
    from start until the cache holds all of them, peak RSS, and resident
    memory per cached object ((RSS after sync - RSS before start) / N).
    "ours" strips managedFields (our default transform), "ours-unstripped"
    keeps objects whole, as the official informer does.
``events``
    Events per second delivered to a no-op handler. We make M updates first,
    then start each informer from the resourceVersion before them, so the API
    server replays all M events as fast as the informer can take them: the
    measure is the informer's own pipeline (decode, cache, dispatch), not how
    fast we can write.

Each measurement runs in a fresh subprocess, so one does not inherit the
other's memory. Needs the course's cluster (``make up``; KUBECONFIG as
``python -m helpers.cluster kubeconfig`` prints).

Run: .venv/bin/python benchmarks/informer_bench.py all [--count 10000] [--events 5000]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import json
import os
import resource
import subprocess
import sys
import threading
import time
from typing import Any

import kubernetes

from helpers import kube

SYNC_NAMESPACE = "bench-sync"
EVENTS_NAMESPACE = "bench-events"
PAGE_SIZE = 500


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def config_map(name: str) -> dict[str, Any]:
    """A ConfigMap of a realistic size: a few labels, an annotation, five short values."""
    return {
        "metadata": {
            "name": name,
            "labels": {"app": "bench", "tier": "backend"},
            "annotations": {"example.com/owner": "team-bench"},
        },
        "data": {f"key{i}": f"value-{i}-" + "x" * 24 for i in range(5)},
    }


# -- populating the cluster -----------------------------------------------------


def populate(api: kubernetes.client.ApiClient, namespace: str, count: int) -> int:
    """Make sure ``namespace`` holds ``count`` bench ConfigMaps; return how many it holds in all.

    The total includes ``kube-root-ca.crt``, which Kubernetes adds to every namespace.
    """
    core = kubernetes.client.CoreV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": namespace}})
    except kubernetes.client.exceptions.ApiException as exc:
        if exc.status != 409:
            raise
    existing = {item["metadata"]["name"] for item in _list_all(api, namespace)}
    missing = [f"cm-{i:05d}" for i in range(count) if f"cm-{i:05d}" not in existing]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: core.create_namespaced_config_map(namespace, config_map(n)),
                      missing))  # fmt: skip
    total = len(_list_all(api, namespace))
    print(f"{namespace}: {total} ConfigMaps ({len(missing)} created now)", file=sys.stderr)
    return total


def _list_all(api: kubernetes.client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    from helpers.listwatch import ListWatch

    lister = ListWatch(api, f"/api/v1/namespaces/{namespace}/configmaps")
    items, token = [], None
    while True:
        page = lister.list(limit=PAGE_SIZE, continue_token=token)
        items += page["items"]
        token = page["metadata"].get("continue")
        if not token:
            return items


# -- one measurement, in its own process -------------------------------------------


def measure_sync(impl: str, namespace: str, count: int) -> dict[str, Any]:
    api = kube.connect()
    if impl.startswith("ours"):
        from helpers.informer import SharedInformer, strip_managed_fields, wait_for_cache_sync
        from helpers.listwatch import ListWatch
    gc.collect()
    before = rss_bytes()
    started = time.perf_counter()
    if impl.startswith("ours"):
        informer = SharedInformer(
            ListWatch(api, f"/api/v1/namespaces/{namespace}/configmaps"),
            name="bench",
            transform=strip_managed_fields if impl == "ours" else None,
        )
        informer.start()
        assert wait_for_cache_sync(informer.has_synced, timeout=600)
        synced = time.perf_counter()
        size = len(informer.indexer.list_keys())
    else:
        from kubernetes.informer import SharedInformer as OfficialInformer

        # It has no has_synced: the cache is synced when it holds every object.
        # (If its first list fails it retries and reports MODIFIED, so watch both.)
        full = threading.Event()
        informer = OfficialInformer(
            kubernetes.client.CoreV1Api(api).list_namespaced_config_map, namespace=namespace
        )

        events = {"n": 0}

        def check(_: Any) -> None:
            events["n"] += 1  # handlers run on its one watch thread: no race
            if events["n"] >= count and len(informer.cache.list_keys()) >= count:
                full.set()

        informer.add_event_handler("ADDED", check)
        informer.add_event_handler("MODIFIED", check)
        informer.start()
        assert full.wait(600), "the official informer never held every object"
        synced = time.perf_counter()
        size = len(informer.cache.list_keys())
    gc.collect()
    after = rss_bytes()
    if impl.startswith("ours"):
        informer.stop()
    # The official informer's stop() blocks until its watch sees another event
    # (the read has no timeout); its thread is a daemon, so the process just exits.
    return {
        "impl": impl,
        "objects": size,
        "sync_seconds": round(synced - started, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "bytes_per_object": round((after - before) / size),
    }


def measure_events(impl: str, namespace: str, since: str, events: int) -> dict[str, Any]:
    api = kube.connect()
    done = threading.Event()
    counter = {"n": 0}
    lock = threading.Lock()

    def count(*_: Any) -> None:
        with lock:
            counter["n"] += 1
            if counter["n"] >= events:
                done.set()

    started = time.perf_counter()
    if impl == "ours":
        from helpers.informer import SharedInformer
        from helpers.listwatch import ListWatch, decode_list

        class ListFromThen(ListWatch):
            """Lists the collection as it was at ``since``, so the watch replays what followed."""

            def list(self, *_: Any, **__: Any) -> dict[str, Any]:
                query = [("resourceVersion", since), ("resourceVersionMatch", "Exact")]
                response = self._get(query, (self.connect_timeout, self.list_read_timeout))
                try:
                    return decode_list(response.data)
                finally:
                    response.release_conn()

        informer = SharedInformer(
            ListFromThen(api, f"/api/v1/namespaces/{namespace}/configmaps"), name="bench"
        )
        informer.add_event_handler(on_update=lambda old, new: count())
        informer.start()
    else:
        from kubernetes.informer import SharedInformer as OfficialInformer

        informer = OfficialInformer(
            kubernetes.client.CoreV1Api(api).list_namespaced_config_map, namespace=namespace
        )
        informer._resource_version = since  # skip its list: watch from `since` (no public API)
        informer.add_event_handler("MODIFIED", lambda obj: count())
        informer.start()
    finished = done.wait(300)
    elapsed = time.perf_counter() - started
    if impl == "ours":
        informer.stop()  # see measure_sync for why the official one is left to exit
    assert finished, f"{impl}: only {counter['n']} of {events} events arrived"
    return {"impl": impl, "events": events, "seconds": round(elapsed, 3),
            "events_per_second": round(events / elapsed)}  # fmt: skip


# -- orchestration ------------------------------------------------------------------------


def prepare_events(api: kubernetes.client.ApiClient, events: int) -> str:
    """Make ``events`` updates to 100 ConfigMaps; return the resourceVersion before them."""
    populate(api, EVENTS_NAMESPACE, 100)
    core = kubernetes.client.CoreV1Api(api)
    since = core.list_namespaced_config_map(EVENTS_NAMESPACE, limit=1).metadata.resource_version

    def update(i: int) -> None:
        core.patch_namespaced_config_map(
            f"cm-{i % 100:05d}", EVENTS_NAMESPACE, {"data": {"counter": str(i)}}
        )

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(update, range(events)))
    return since


def run_child(*args: str) -> dict[str, Any]:
    output = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["all", "sync", "events", "_sync", "_events"])
    parser.add_argument("--impl", choices=["ours", "ours-unstripped", "official"])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--since")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    if args.command == "_sync":
        print(json.dumps(measure_sync(args.impl, SYNC_NAMESPACE, args.count)))
        return
    if args.command == "_events":
        print(json.dumps(measure_events(args.impl, EVENTS_NAMESPACE, args.since, args.events)))
        return

    api = kube.connect()
    results: dict[str, list[dict[str, Any]]] = {"sync": [], "events": []}
    if args.command in ("all", "sync"):
        total = populate(api, SYNC_NAMESPACE, args.count)
        for _ in range(args.repeat):
            for impl in ("ours", "ours-unstripped", "official"):
                row = run_child("_sync", "--impl", impl, "--count", str(total))
                print(json.dumps(row), file=sys.stderr)
                results["sync"].append(row)
    if args.command in ("all", "events"):
        for _ in range(args.repeat):
            since = prepare_events(api, args.events)
            for impl in ("ours", "official"):
                row = run_child("_events", "--impl", impl, "--since", since,
                                "--events", str(args.events))  # fmt: skip
                print(json.dumps(row), file=sys.stderr)
                results["events"].append(row)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
