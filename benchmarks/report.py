"""Run every side-by-side benchmark in one go and write the measured part of RESULTS.md.

``benchmarks/run_all`` calls this. In one run, on one cluster, so the ratios
compare like with like on a shared machine: the course's informer (standard
library JSON, and with the :mod:`helpers.fastjson` swap), the official Python
client's informer, client-go's informer (benchmarks/go/informerbench, with and
without streaming lists, JSON and protobuf), the same requests read over the
wire with nothing decoded (JSON and protobuf: what the format alone allows),
the course's FooController and sample-controller, the growth of sync time and
memory with the number of objects, and a cProfile of where our time goes.

The Go programs are built (or found in the cache) by
:mod:`helpers.cluster.gobuild`. Raw rows go to ``benchmarks/results.json``;
RESULTS.md's text between the two ``run_all`` markers is replaced, everything
around it (hand-run drills) is kept. ``--render-only`` rewrites RESULTS.md from
results.json without measuring again.

Needs the course's cluster (``make up``; KUBECONFIG as
``python -m helpers.cluster kubeconfig`` prints).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS_MD = HERE / "RESULTS.md"
RESULTS_JSON = HERE / "results.json"
BEGIN = "<!-- run_all: begin (benchmarks/run_all writes this part; edits here are lost) -->"
END = "<!-- run_all: end -->"

# The client-go shapes the targets are judged against.
GO_DEFAULT = "client-go (stream, protobuf)"  # what a client-go program gets when left alone
GO_LIKE_OURS = "client-go (list, json)"  # a paginated LIST in JSON, as our informer makes
GO_EVENTS = "client-go (list, json)"
GO_EVENTS_DEFAULT = "client-go (list, protobuf)"  # the events target's client-go row
# Issue 14's targets, for the sentence under each table that holds wire-only rows.
SYNC_TARGET, EVENTS_TARGET = 1.2, 0.7


def python_bench(*args: str) -> dict[str, Any]:
    """Run informer_bench.py; its final JSON document."""
    output = subprocess.run(
        [sys.executable, str(HERE / "informer_bench.py"), *args],
        capture_output=True, text=True, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    sys.stderr.write(output.stderr)
    if output.returncode != 0:
        raise SystemExit(f"informer_bench.py {' '.join(args)} failed")
    return json.loads(output.stdout)


def json_lines(command: list[str]) -> list[dict[str, Any]]:
    output = subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    sys.stderr.write(output.stderr)
    if output.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{output.stdout}")
    return [json.loads(line) for line in output.stdout.splitlines() if line.startswith("{")]


def machine() -> dict[str, Any]:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")), platform.processor(),
    )  # fmt: skip
    memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    go = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=False)
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(memory_kib / 2**20),
        "python": platform.python_version(),
        "go": go.stdout.strip(),
        "kubernetes_python_client": metadata.version("kubernetes"),
        "orjson": metadata.version("orjson"),
    }


def server_version() -> str:
    import kubernetes

    from helpers import kube

    return kubernetes.client.VersionApi(kube.connect()).get_code().git_version


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from helpers.cluster import gobuild

    results: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "server": server_version(),
        "client_go": gobuild.BENCHMARK_PROGRAMS.version(),
        "load": {"start": loadavg()},
    }
    started = time.monotonic()
    programs = gobuild.ensure_benchmark_programs()
    results["go_programs_seconds"] = round(time.monotonic() - started, 1)
    go = str(programs["informerbench"])

    common = ["--go-program", go, "--repeat", str(args.repeat)]
    results["informer"] = python_bench(
        "all", "--count", str(args.count), "--events", str(args.events), "--fast-json", "--wire",
        "--events-repeat", str(args.events_repeat), *common,
    )  # fmt: skip
    results["load"]["after_informer"] = loadavg()
    save(results)

    results["scaling"] = []
    for count in args.scale:
        rows = python_bench(
            "sync", "--count", str(count), "--namespace", scale_namespace(count, args.count),
            "--skip-official", "--fast-json", "--repeat", "1", "--go-program", go,
            "--go-variants", f"{GO_LIKE_OURS};{GO_DEFAULT}",
        )["sync"]  # fmt: skip
        results["scaling"] += [{**row, "count": count} for row in rows]
    results["load"]["after_scaling"] = loadavg()
    save(results)

    if not args.skip_controllers:
        results["controllers"] = json_lines(
            [sys.executable, str(HERE / "controller_bench.py"), "--foos", str(args.foos),
             "--replicas", str(args.replicas), "--repeat", str(args.controller_repeat),
             "--sample-controller", str(programs["sample-controller"])]
        )  # fmt: skip
        results["load"]["after_controllers"] = loadavg()
        save(results)

    if not args.skip_profile:
        results["profile"] = []
        for fast in (False, True):
            extra = ["--fast-json"] if fast else []
            results["profile"] += json_lines(
                [sys.executable, str(HERE / "profile_informer.py"), "sync", *extra]
            )
            results["profile"] += json_lines(
                [sys.executable, str(HERE / "profile_informer.py"), "events",
                 "--events", str(args.events), *extra]
            )  # fmt: skip
            save(results)
    results["load"]["end"] = loadavg()
    if not args.keep_objects:
        from informer_bench import EVENTS_NAMESPACE, SYNC_NAMESPACE  # (benchmarks/ is on the path)

        scaled = [scale_namespace(count, args.count) for count in args.scale]
        remove_namespaces([SYNC_NAMESPACE, EVENTS_NAMESPACE, *scaled])
    return results


def remove_namespaces(names: list[str]) -> None:
    """Leave the course's cluster as we found it, and wait until it is.

    The benchmark namespaces hold up to 140,000 ConfigMaps: left in place, they
    slow every later API server start (its watch cache lists them all) and so
    every test and drill that restarts one. ``--keep-objects`` keeps them for a
    quicker second run.
    """
    import kubernetes

    from helpers import kube, namespaces
    from helpers.waiting import wait_for

    core = kubernetes.client.CoreV1Api(kube.connect())
    for name in dict.fromkeys(names):
        print(f"namespace {name} {namespaces.delete_namespace(core.api_client, name)}")
    wait_for(
        core.list_namespace,
        lambda namespaces: not set(names) & set(namespaces),
        what="the benchmark namespaces to be deleted",
        timeout=900,
    )


def save(results: dict[str, Any]) -> None:
    """Keep what is measured so far: a failure later must not lose it (see --render-only)."""
    RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")


def scale_namespace(count: int, main_count: int) -> str:
    return "bench-sync" if count == main_count else f"bench-scale-{count}"


# -- rendering --------------------------------------------------------------------------------


def by_impl(rows: list[dict[str, Any]], field: str) -> dict[str, list[Any]]:
    """Each row's ``field`` grouped by implementation, in first-seen order; rows without it skipped.

    The wire-only rows have no memory figures (they keep nothing), so the
    memory columns leave them out rather than fail.
    """
    found: dict[str, list[Any]] = {}
    for row in rows:
        if field in row:
            found.setdefault(row["impl"], []).append(row[field])
    return found


def wire_last(found: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The same rows with the wire-only ones moved to the end: they are a bound, not a client."""
    return dict(sorted(found.items(), key=lambda item: item[0] in WIRE_NAMES))


def median(values: list[float]) -> float:
    return statistics.median(values)


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}x" if theirs else "n/a"


def render(results: dict[str, Any]) -> str:
    lines: list[str] = []
    out = lines.append
    m = results["machine"]
    load = results["load"]
    out(f"Measured {results['date']} by `benchmarks/run_all`, in one run on one cluster: "
        f"{m['cpus']} cores ({m['cpu']}), {m['memory_gib']} GiB, Python {m['python']}, "
        f"{m['go']}; Kubernetes {results['server']} (local control plane), client-go and "
        f"sample-controller {results['client_go']}, `kubernetes` Python client "
        f"{m['kubernetes_python_client']}, orjson {m['orjson']}.")  # fmt: skip
    out("")
    out("The machine is shared with other work, so absolute times wander; the ratios compare "
        "runs made minutes apart. Load average (1, 5, 15 min): "
        + "; ".join(f"{when.replace('_', ' ')} {value}" for when, value in load.items())
        + ".")  # fmt: skip
    out("")
    out(f"The Go programs (benchmarks/go) came from the build cache in "
        f"{results['go_programs_seconds']} s (`python -m helpers.cluster.gobuild`).")  # fmt: skip
    out("")
    lines += render_sync(results)
    lines += render_events(results)
    lines += render_scaling(results)
    lines += render_controllers(results)
    lines += render_profile(results)
    return "\n".join(lines)


NAMES = {
    "ours": "ours (managedFields stripped, json)",
    "ours-fastjson": "ours with `helpers.fastjson` (orjson)",
    "ours-unstripped": "ours, `transform=None` (objects kept whole)",
    "official": "official Python client",
}
# Rows from informer_bench.py's _wire_sync and _wire_events: the bytes of the
# same request read and counted, nothing decoded (absent from older results.json).
WIRE_NAMES = {
    "wire-json": "wire only, JSON (bytes read, nothing decoded)",
    "wire-protobuf": "wire only, protobuf (bytes read, nothing decoded)",
}
NAMES |= WIRE_NAMES


def render_sync(results: dict[str, Any]) -> list[str]:
    rows = results["informer"]["sync"]
    times, memory = by_impl(rows, "sync_seconds"), by_impl(rows, "bytes_per_object")
    peaks, objects = by_impl(rows, "peak_rss_mib"), rows[0]["objects"]
    go_default, go_like = median(times[GO_DEFAULT]), median(times[GO_LIKE_OURS])
    lines = [
        f"## Initial sync of {objects:,} ConfigMaps", "",
        "Time from start until HasSynced (client-go's polled every millisecond), each run a "
        "fresh process. Memory per object: (resident memory after sync - before) / objects, "
        "after a garbage collection (Go: `runtime.GC` and `debug.FreeOSMemory`). Every "
        "client-go row strips managedFields as ours does. *stream* is client-go's default since "
        "1.35 (a watch with `sendInitialEvents=true` fills the cache); *list* sets "
        "`KUBE_FEATURE_WatchListClient=false` (a paginated LIST, as ours).", "",
        f"| informer | sync time (runs) | median | vs {GO_DEFAULT} | vs {GO_LIKE_OURS} "
        "| memory per object (median) | peak RSS |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for impl, values in wire_last(times).items():
        kept = f"{median(memory[impl]):,.0f} B" if impl in memory else "(nothing kept)"
        peak = f"{max(peaks[impl])} MiB" if impl in peaks else "-"
        lines.append(
            f"| {NAMES.get(impl, impl)} | {', '.join(f'{v:.3f}' for v in values)} s "
            f"| **{median(values):.3f} s** | {ratio(median(values), go_default)} "
            f"| {ratio(median(values), go_like)} | {kept} | {peak} |"
        )  # fmt: skip
    limits = {row["limit"] for row in rows if row["impl"] in WIRE_NAMES}
    if limits:
        lines += ["", (
            "The *wire only* rows make our reflector's first request (a LIST at resourceVersion "
            f"0 with limit={min(limits)}, which the watch cache answers in one response) and read "
            "its bytes to the last without decoding any: the ceiling any client speaking that "
            "format through urllib3, as ours does, can reach on this machine "
            "(`informer_bench.py _wire_sync`)."
            + wire_against_target(rows, "sync_seconds", GO_DEFAULT, SYNC_TARGET)
        )]  # fmt: skip
    return [*lines, ""]


def wire_against_target(rows: list[dict[str, Any]], field: str, label: str, target: float) -> str:
    """Sentences putting the JSON wire beside the target it bounds; "" without both rows.

    Beside the medians, run by run: each repeat measures every reader once,
    minutes apart at most, so the paired ratios show how far the machine's
    load moves the comparison. ``field`` says which target: ``sync_seconds``
    (a most) or ``events_per_second`` (a least). The reader's CPU share says
    how much of the wire row was Python rather than waiting for the API server.
    """
    wire = [row for row in rows if row["impl"] == "wire-json"]
    theirs = [row for row in rows if row["impl"] == label]
    if not wire or not theirs:
        return ""
    goal = median([row[field] for row in theirs]) * target
    got = median([row[field] for row in wire])
    sync = field == "sync_seconds"
    if sync:
        text = (
            f" Issue 14's target, at most {target}x {label}, is {goal:.3f} s; reading the "
            f"JSON LIST alone took {got:.3f} s (median)."
        )
    else:
        text = (
            f" Issue 14's target, at least {target}x {label}, is {goal:,.0f} events a second; "
            f"the JSON watch's bytes alone arrived at {got:,.0f} a second (median)."
        )
    if len(wire) == len(theirs):
        paired = ", ".join(ratio(w[field], t[field]) for w, t in zip(wire, theirs, strict=True))
        text += f" Run by run, the JSON wire against {label}: {paired}."
    seconds = field if sync else "seconds"
    if all("client_cpu_seconds" in row for row in wire):
        busy = median([row["client_cpu_seconds"] / row[seconds] for row in wire])
        text += (f" The reader's own CPU time was {busy:.0%} of its wall time (median): the rest "
                 "it waited for the API server.")  # fmt: skip
    return text


def render_events(results: dict[str, Any]) -> list[str]:
    rows = results["informer"]["events"]
    rates = by_impl(rows, "events_per_second")
    server = server_micros_per_event(rows)
    count = rows[0]["events"]
    reference = median(rates[GO_EVENTS])
    lines = [
        f"## Watch events to a no-op handler ({count:,} replayed)", "",
        f"{count:,} updates to 100 ConfigMaps are made first; each informer then lists at the "
        "resourceVersion before them and its watch replays them all. Counted from the "
        "informer's start until the last update reached the handler. client-go lists at an "
        "exact resourceVersion only with streaming lists off "
        "(`KUBE_FEATURE_WatchListClient=false`), so both client-go rows are *list*. "
        "*API server CPU* is the kube-apiserver process's CPU time during the run, per event "
        "(median; it includes the server's own background work over the run's life, about a "
        "second and a half for a Python process's start).", "",
        f"| informer | events per second (runs) | median | vs {GO_EVENTS} | API server CPU |",
        "| --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for impl, values in wire_last(rates).items():
        cost = f"{server[impl]:.0f} µs" if impl in server else "-"
        lines.append(
            f"| {NAMES.get(impl, impl)} | {' / '.join(f'{v:,}' for v in values)} "
            f"| **{median(values):,.0f}** | {ratio(median(values), reference)} | {cost} |"
        )
    if WIRE_NAMES.keys() & rates.keys():
        against = wire_against_target(rows, "events_per_second", GO_EVENTS_DEFAULT, EVENTS_TARGET)
        lines += ["", (
            "The *wire only* rows open the same watch (from the same resourceVersion, no "
            "bookmarks) and count its frames as the bytes arrive (JSON: one line per event; "
            "protobuf: length-prefixed), decoding nothing, timed from before the request as the "
            "informers are: the ceiling any client speaking that format through urllib3, as "
            "ours does, can reach on this machine (`informer_bench.py _wire_events`)." + against
        )]  # fmt: skip
    if {"wire-json", "wire-protobuf"} <= server.keys():
        lines += ["", (
            f"Serving one event cost the API server {server['wire-json']:.0f} µs of CPU in JSON "
            f"and {server['wire-protobuf']:.0f} µs in protobuf (the wire rows, medians). This "
            "machine has two cores, shared by the API server and the informer, so a JSON watch "
            "is slower before any client code runs."
        )]  # fmt: skip
    return [*lines, ""]


def server_micros_per_event(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Median API server CPU microseconds per event, by implementation (rows that have it)."""
    found = by_impl(rows, "server_cpu_seconds")
    events = {row["impl"]: row["events"] for row in rows}
    return {impl: median(values) / events[impl] * 1e6 for impl, values in found.items()}


def render_scaling(results: dict[str, Any]) -> list[str]:
    rows = results.get("scaling") or []
    if not rows:
        return []
    lines = [
        "## Scaling: sync time and memory against the number of objects", "",
        "One run each (a fresh process), in namespaces holding that many ConfigMaps.", "",
        "| objects | informer | sync time | memory per object | peak RSS |",
        "| --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for row in sorted(rows, key=lambda r: (r["count"], r["impl"])):
        lines.append(
            f"| {row['objects']:,} | {NAMES.get(row['impl'], row['impl'])} "
            f"| {row['sync_seconds']:.3f} s | {row['bytes_per_object']:,} B "
            f"| {row['peak_rss_mib']} MiB |"
        )
    return [*lines, ""]


def render_controllers(results: dict[str, Any]) -> list[str]:
    rows = results.get("controllers") or []
    if not rows:
        return []
    walls = by_impl([{**r, "impl": r["controller"]} for r in rows], "wall_seconds")
    first = rows[0]
    reference = median(walls.get("sample-controller", [0.0]))
    lines = [
        f"## Controller: {first['foos']} Foos to available Deployments", "",
        f"{first['foos']} Foos of {first['replicas']} replica(s) created at once in a fresh "
        "namespace; wall time until every Foo's `status.availableReplicas` is right "
        "(benchmarks/controller_bench.py). Both run 2 workers and sample-controller's "
        "workqueue limiter (5 ms doubling per item, 50/s burst 300 overall). Client pacing: "
        "client-go's defaults, which sample-controller keeps: its `rest.Config` leaves QPS at "
        "zero, so each API group's REST client gets a 5/10 token bucket of its own (`core/v1` "
        "for Events, `apps/v1` for Deployments, `samplecontroller.k8s.io` for Foos); our program "
        "paces per API group the same way (`--kube-api-qps 5 --kube-api-burst 10`). Both write "
        "Events from a thread of their own, so a sync does not wait for them.", "",
        "| controller | wall time (runs) | median | vs sample-controller |",
        "| --- | --- | --- | --- |",
    ]  # fmt: skip
    for name, values in walls.items():
        lines.append(
            f"| {name} | {', '.join(f'{v:.1f}' for v in values)} s | **{median(values):.1f} s** "
            f"| {ratio(median(values), reference)} |"
        )
    return [*lines, ""]


def render_profile(results: dict[str, Any]) -> list[str]:
    rows = results.get("profile") or []
    if not rows:
        return []
    lines = [
        "## Where our time goes (cProfile)", "",
        "Own time per function, over every thread of the informer, put in buckets by the file "
        "the function lives in (benchmarks/profile_informer.py). The profiler slows Python "
        "code down, so shares matter here, not seconds.", "",
    ]  # fmt: skip
    buckets = sorted({name for row in rows for name in row["buckets"]})
    header = [f"{r['workload']}{' + orjson' if r['fast_json'] else ''}" for r in rows]
    lines += ["| share of own time | " + " | ".join(header) + " |",
              "| --- |" + " --- |" * len(rows)]  # fmt: skip
    for name in buckets:
        cells = [f"{row['buckets'].get(name, 0.0)}%" for row in rows]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(
        "| profiled seconds | " + " | ".join(f"{r['profiled_seconds']}" for r in rows) + " |"
    )
    for row in rows:
        if row["fast_json"]:
            continue
        lines += ["", f"Top functions by own time, {row['workload']} (standard library json):", ""]
        lines += [f"- `{t['function']}`: {t['own_seconds']} s in {t['calls']:,} calls"
                  for t in row["top"][:8]]  # fmt: skip
    return [*lines, ""]


def write_results_md(text: str) -> None:
    current = RESULTS_MD.read_text()
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
    else:
        head, tail = current + "\n", ""
    RESULTS_MD.write_text(f"{head}{BEGIN}\n\n{text}\n{END}{tail}")


def refuse_clusters_not_the_courses() -> None:
    """Before the first request: the benchmarks create 140,000 ConfigMaps and delete namespaces,
    so they run only on a cluster the course created (or one named in CFS_ALLOW_CLUSTER)."""
    from helpers.cluster.identity import require_course_cluster
    from helpers.errors import CourseError

    try:
        require_course_cluster(doing="The benchmarks")
    except CourseError as exc:
        raise SystemExit(f"error: {exc.problem}\nnext step: {exc.next_step}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--events", type=int, help="default: informer_bench.EVENTS")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--events-repeat", type=int, default=5,
        help="events runs: each lasts well under a second, so the machine's load moves it most",
    )  # fmt: skip
    parser.add_argument(
        "--scale", default="10000,30000,100000",
        type=lambda text: [int(n) for n in text.split(",") if n],
        help="object counts for the scaling table (comma-separated; empty to skip)",
    )  # fmt: skip
    parser.add_argument("--foos", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--controller-repeat", type=int, default=1)
    parser.add_argument("--skip-controllers", action="store_true")
    parser.add_argument("--skip-profile", action="store_true")
    parser.add_argument("--render-only", action="store_true", help="rewrite from results.json")
    parser.add_argument(
        "--keep-objects", action="store_true",
        help="keep the benchmark namespaces and their ConfigMaps (a second run starts sooner)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.events is None:
        from informer_bench import EVENTS  # (benchmarks/ is on the path)

        args.events = EVENTS
    if args.render_only:
        results = json.loads(RESULTS_JSON.read_text())
    else:
        refuse_clusters_not_the_courses()
        results = measure(args)
        save(results)
    write_results_md(render(results))
    print(f"wrote {RESULTS_MD.relative_to(ROOT)} and {RESULTS_JSON.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
