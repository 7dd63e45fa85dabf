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

Every events row also records ``server_cpu_seconds``: the CPU time the
kube-apiserver process spent meanwhile (read from ``/proc``; the local control
plane only, absent on kind). On a 2-core machine the API server and the
informer share the cores, and serving one watch event costs the server more in
JSON than in protobuf, so this column says how much of a row's rate the
format set before any client code ran.

``--wire`` adds two rows to each: the same request read over the wire with
nothing decoded (``_wire_sync``: the first LIST; ``_wire_events``: the replayed
watch, frames counted), in JSON and in protobuf. No client speaking a format
can be faster than its row, so these show what the wire format alone allows.

Each measurement runs in a fresh subprocess, so one does not inherit the
other's memory. Needs the course's cluster (``make up``; KUBECONFIG as
``python -m helpers.cluster kubeconfig`` prints).

Run: .venv/bin/python benchmarks/informer_bench.py all [--count 10000] [--events 20000] [--wire]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import inspect
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import kubernetes
import urllib3

from helpers import kube

SYNC_NAMESPACE = "bench-sync"
EVENTS_NAMESPACE = "bench-events"
PAGE_SIZE = 500
EVENTS = 20_000
"""Events replayed: enough that client-go over protobuf runs for about a quarter of a second.

With 5,000, its run lasted under 0.1 s, of which its start (process, LIST,
watch request) took about a third; the rate then measured start-up as much as
the event pipeline, ours as well as client-go's.
"""


def api_server_pid() -> int | None:
    """The local control plane's kube-apiserver process; None on kind or another cluster."""
    from helpers.cluster.backends import local_cluster
    from helpers.cluster.paths import DEFAULT_CLUSTER_NAME, CourseHome

    cluster = local_cluster(CourseHome.from_environment(), DEFAULT_CLUSTER_NAME)
    return None if cluster is None else cluster.running().get("kube-apiserver")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


Measure = Callable[[], dict[str, Any]]
"""One run of one informer (or wire reader): it returns that run's row."""


def with_server_cpu(pid: int | None, measure: Measure) -> dict[str, Any]:
    """``measure()``'s row, plus the API server's CPU seconds while it ran (when known)."""
    if pid is None:
        return measure()
    before = cpu_seconds(pid)
    row = measure()
    return {**row, "server_cpu_seconds": round(cpu_seconds(pid) - before, 3)}


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
    use_fast_json(impl)
    # Imported before the clock starts (see measure_events).
    from kubernetes.informer import SharedInformer as OfficialInformer

    from helpers.informer import SharedInformer, strip_managed_fields, wait_for_cache_sync
    from helpers.listwatch import ListWatch

    gc.collect()
    before = rss_bytes()
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
    else:
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
        "peak_rss_mib": peak_rss_mib(),
        "bytes_per_object": round((after - before) / size),
    }


def measure_events(impl: str, namespace: str, since: str, events: int) -> dict[str, Any]:
    api = kube.connect()
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

    started = time.perf_counter()
    if impl.startswith("ours"):
        # No indexes, as informerbench's events informer (cache.Indexers{}).
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
    elapsed = time.perf_counter() - started
    if impl.startswith("ours"):
        informer.stop()  # see measure_sync for why the official one is left to exit
    assert finished, f"{impl}: only {counter['n']} of {events} events arrived"
    return {"impl": impl, "events": events, "seconds": round(elapsed, 3),
            "events_per_second": round(events / elapsed)}  # fmt: skip


# -- the wire alone: bytes read, nothing decoded -------------------------------------------

# The Accept header for each format, (LIST, WATCH), as client-go sends them: a
# protobuf watch asks for stream=watch (its frames are length-prefixed).
WIRE_ACCEPT = {
    "json": ("application/json", "application/json"),
    "protobuf": ("application/vnd.kubernetes.protobuf",
                 "application/vnd.kubernetes.protobuf;stream=watch"),
}  # fmt: skip
WIRE_READ = 1 << 20  # bytes asked of each read: whatever has arrived, up to 1 MiB


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
    """Read the watch the events workload replays, counting frames only: a ceiling for any client.

    The same watch as the informers' (from ``since``, no bookmarks), timed the
    same way (from before the request until the ``events``-th event), so the
    row says how fast the bytes alone arrive over this format on this machine.
    ``frames`` is how many whole frames had arrived by then: the replayed
    watch holds exactly ``events``, so anything else means miscounted frames.
    The server ends the watch after ``timeout_seconds``, should fewer arrive.
    ``client_cpu_seconds`` is this process's CPU time meanwhile: well below
    ``seconds``, it shows the reader waited on the API server and the
    connection, so the row measures the wire, not Python.
    """
    api = kube.connect()
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    query = [("watch", "true"), ("resourceVersion", since),
             ("timeoutSeconds", str(timeout_seconds))]  # fmt: skip
    cpu, started = time.process_time(), time.perf_counter()
    response = _wire_get(api, path, query, WIRE_ACCEPT[wire][1])
    frames, pending, received = 0, b"", 0
    try:
        while frames < events:
            chunk = response.read1(WIRE_READ)
            if not chunk:
                break
            received += len(chunk)
            found, pending = count_frames(pending + chunk, wire)
            frames += found
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        response.close()  # the watch goes on past the last event: drop the connection
    assert frames >= events, f"wire-{wire}: the watch ended after {frames} of {events} events"
    return {"impl": f"wire-{wire}", "events": events, "frames": frames,
            "seconds": round(elapsed, 3), "events_per_second": round(events / elapsed),
            "bytes": received, "client_cpu_seconds": round(cpu, 3)}  # fmt: skip


def measure_wire_sync(wire: str, namespace: str) -> dict[str, Any]:
    """Read our reflector's first LIST (resourceVersion=0, limit=500) to its last byte, undecoded.

    The watch cache answers a LIST at resourceVersion 0 from memory in one
    response, so this is the whole sync's traffic: the time any client
    speaking this format needs just to receive it (``client_cpu_seconds`` as
    in :func:`measure_wire_events`).
    """
    from helpers.reflector import Reflector

    limit = inspect.signature(Reflector).parameters["page_size"].default  # what ours asks
    api = kube.connect()
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    query = [("resourceVersion", "0"), ("limit", str(limit))]
    cpu, started = time.process_time(), time.perf_counter()
    response = _wire_get(api, path, query, WIRE_ACCEPT[wire][0])
    received = 0
    try:
        while chunk := response.read1(WIRE_READ):
            received += len(chunk)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        response.release_conn()  # read to its end: the connection can be used again
    return {"impl": f"wire-{wire}", "sync_seconds": round(elapsed, 3), "bytes": received,
            "limit": limit, "client_cpu_seconds": round(cpu, 3)}  # fmt: skip


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


# client-go's informer (benchmarks/go/informerbench), in the shapes we compare against.
# "stream": client-go's default since 1.35, a watch with sendInitialEvents=true fills
# the cache; "list": KUBE_FEATURE_WatchListClient=false, a paginated LIST as ours does.
# "json" is what the Python informers speak; "protobuf" is what client-go's
# clientset asks for when left alone. All strip managedFields, as ours does by default.
GO_SYNC_VARIANTS = {
    "client-go (stream, json)": ("json", True),
    "client-go (list, json)": ("json", False),
    "client-go (stream, protobuf)": ("protobuf", True),
}
# Replaying from a resourceVersion needs a LIST at exactly that version: list mode only.
GO_EVENTS_VARIANTS = {"client-go (list, json)": "json", "client-go (list, protobuf)": "protobuf"}


def run_go(program: str, label: str, streaming: bool, *args: str) -> dict[str, Any]:
    """Run informerbench once; its JSON row, labelled, and checked for the list mode asked."""
    environment = {**os.environ, "KUBE_FEATURE_WatchListClient": str(streaming).lower()}
    output = subprocess.run(
        [program, *args], capture_output=True, text=True, check=False, env=environment
    )
    if output.returncode != 0:
        raise RuntimeError(f"{program} {' '.join(args)} failed: {output.stderr.strip()}")
    row = json.loads(output.stdout.strip().splitlines()[-1])
    want = "streaming" if streaming else "list"
    if row["list_mode"] != want:
        raise RuntimeError(f"{label}: client-go filled its cache by {row['list_mode']}, not {want}")
    return {**row, "impl": label}


def go_sync(program: str, label: str, namespace: str) -> dict[str, Any]:
    content_type, streaming = GO_SYNC_VARIANTS[label]
    return run_go(program, label, streaming, "-mode", "sync", "-namespace", namespace,
                  "-strip", "-content-type", content_type)  # fmt: skip


def go_events(program: str, label: str, since: str, events: int) -> dict[str, Any]:
    return run_go(program, label, False, "-mode", "events", "-namespace", EVENTS_NAMESPACE,
                  "-since", since, "-events", str(events),
                  "-content-type", GO_EVENTS_VARIANTS[label])  # fmt: skip


def rotated(runs: list[Measure], repeat: int) -> list[Measure]:
    """``runs`` started at a different one each repeat.

    Whatever precedes a run (the objects just created, the previous client's
    watch winding down on the API server) then falls on every informer in
    turn, not always on the first one listed. The first repeat keeps the
    listed order, which is the order the report's tables show.
    """
    start = repeat % len(runs) if runs else 0
    return runs[start:] + runs[:start]


def python_impls(args: argparse.Namespace, *more: str) -> list[str]:
    """Which Python informers to run, in the order they run."""
    impls = ["ours"] + (["ours-fastjson"] if args.fast_json else []) + list(more)
    return impls + ([] if args.skip_official else ["official"])


def go_variants(args: argparse.Namespace, known: dict[str, Any]) -> list[str]:
    """The client-go rows asked for (none without --go-program)."""
    if not args.go_program:
        return []
    wanted = args.go_variants.split(";") if args.go_variants else list(known)
    unknown = [label for label in wanted if label not in GO_SYNC_VARIANTS | GO_EVENTS_VARIANTS]
    if unknown:
        raise SystemExit(f"unknown --go-variants {unknown}; known: {list(known)}")
    return [label for label in wanted if label in known]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = ["all", "sync", "events", "_sync", "_events", "_wire_sync", "_wire_events"]
    parser.add_argument("command", choices=commands)
    parser.add_argument("--impl", choices=["ours", "ours-fastjson", "ours-unstripped", "official"])
    parser.add_argument("--wire-format", choices=list(WIRE_ACCEPT), help="_wire_*: which format")
    parser.add_argument("--namespace", default=SYNC_NAMESPACE, help="sync: where the objects are")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--since")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--events-repeat", type=int, help="events runs (default: --repeat)")
    parser.add_argument("--go-program", help="benchmarks/go's informerbench, to add client-go")
    parser.add_argument("--go-variants", help="client-go rows, separated by ';' (default: all)")
    parser.add_argument("--skip-official", action="store_true", help="leave out the official one")
    parser.add_argument("--fast-json", action="store_true", help="add ours with helpers.fastjson")
    parser.add_argument(
        "--wire", action="store_true", help="add the wire-only rows (bytes read, nothing decoded)"
    )
    args = parser.parse_args()

    if args.command == "_sync":
        print(json.dumps(measure_sync(args.impl, args.namespace, args.count)))
        return
    if args.command == "_events":
        print(json.dumps(measure_events(args.impl, EVENTS_NAMESPACE, args.since, args.events)))
        return
    if args.command.startswith("_wire") and args.wire_format is None:
        parser.error(f"{args.command} needs --wire-format ({' or '.join(WIRE_ACCEPT)})")
    if args.command == "_wire_sync":
        print(json.dumps(measure_wire_sync(args.wire_format, args.namespace)))
        return
    if args.command == "_wire_events":
        row = measure_wire_events(args.wire_format, EVENTS_NAMESPACE, args.since, args.events)
        print(json.dumps(row))
        return

    api = kube.connect()
    results: dict[str, Any] = {"sync": [], "events": []}
    if args.command in ("all", "sync"):
        total = populate(api, args.namespace, args.count)
        for repeat in range(args.repeat):
            runs: list[Measure] = [
                *(partial(run_child, "_sync", "--impl", impl, "--count", str(total),
                          "--namespace", args.namespace)
                  for impl in python_impls(args, "ours-unstripped")),
                *(partial(run_child, "_wire_sync", "--wire-format", wire,
                          "--namespace", args.namespace)
                  for wire in (WIRE_ACCEPT if args.wire else [])),
                *(partial(go_sync, args.go_program, label, args.namespace)
                  for label in go_variants(args, GO_SYNC_VARIANTS)),
            ]  # fmt: skip
            for measure in rotated(runs, repeat):
                row = measure()
                print(json.dumps(row), file=sys.stderr)
                results["sync"].append(row)
    if args.command in ("all", "events"):
        server = api_server_pid()
        for repeat in range(args.events_repeat or args.repeat):
            since = results["events_since"] = prepare_events(api, args.events)
            count = str(args.events)
            runs = [
                *(partial(run_child, "_events", "--impl", impl, "--since", since, "--events", count)
                  for impl in python_impls(args)),
                *(partial(run_child, "_wire_events", "--wire-format", wire, "--since", since,
                          "--events", count) for wire in (WIRE_ACCEPT if args.wire else [])),
                *(partial(go_events, args.go_program, label, since, args.events)
                  for label in go_variants(args, GO_EVENTS_VARIANTS)),
            ]  # fmt: skip
            for measure in rotated(runs, repeat):
                row = with_server_cpu(server, measure)
                print(json.dumps(row), file=sys.stderr)
                results["events"].append(row)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
