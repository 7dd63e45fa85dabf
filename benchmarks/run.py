"""Run every side-by-side benchmark in one go, and record what ran beside what it measured.

``benchmarks/run_all`` calls this. In one run, on one cluster, so the ratios
compare like with like on a shared machine:

1. the FooController beside sample-controller, at client-go's default pacing
   and at a QPS of 50 (benchmarks/controller_bench.py);
2. watch events to a no-op handler: ours (standard library JSON, and with the
   :mod:`helpers.fastjson` swap), the official Python client, client-go over
   JSON at HTTP/1.1 and HTTP/2 and over protobuf, and the same watch read with
   nothing decoded (benchmarks/informer_bench.py);
3. with ``--profile``, a cProfile of where our time goes in that workload
   (benchmarks/profile_informer.py);
4. the initial sync, and memory per object right after it and after a fifth of
   the objects were updated, at each ``--scale`` (every informer at
   ``--count``, ours and client-go's JSON and default shapes at the others),
   in one namespace that grows from one count to the next;
5. with ``--profile``, the sync's cProfile;
6. deleting the benchmarks' namespaces again (``--keep-objects`` keeps them).

Raw rows go to ``benchmarks/results.json``, saved after every step (a failure
later keeps what was measured), with the facts that make them traceable: the
command line, the commit, the backend, the versions, the machine, the date,
and how long each step took. :mod:`benchmarks.report` then writes the measured
part of RESULTS.md and the benchmark paragraph of README.md from that file
(``--render-only`` does only that).

Needs the course's cluster (``make up``; KUBECONFIG as
``python -m helpers.cluster kubeconfig`` prints).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks import controller_bench, informer_bench, report
from benchmarks.cluster import (
    ConfigMaps,
    control_plane_cpu_seconds,
    create_namespace,
    remove_namespaces,
)
from benchmarks.guard import refuse_clusters_not_the_courses
from benchmarks.stopping import exit_on_sigterm

ROOT = Path(__file__).resolve().parents[1]
RESULTS_JSON = ROOT / "benchmarks" / "results.json"
SCALE_PYTHON = ["ours"]
"""The Python informers synced at the scales beside ``--count`` (every one syncs at ``--count``)."""
SCALE_GO = [
    "client-go (list, json, HTTP/1.1)",
    "client-go (stream, json, HTTP/1.1)",
    informer_bench.GO_DEFAULT,
]
"""client-go at those scales: JSON at our HTTP version (listing both ways), and its default."""


def git(*args: str) -> str:
    output = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, check=False)
    return output.stdout.strip()


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def backend() -> str:
    """What runs the cluster the kubeconfig names: the course's backend, or "another cluster"."""
    from helpers import kube
    from helpers.cluster.backends import recorded_backend
    from helpers.home import DEFAULT_CLUSTER_NAME, CourseHome

    home = CourseHome.from_environment()
    if kube.default_kubeconfig(home) != home.kubeconfig(DEFAULT_CLUSTER_NAME):
        return "another cluster (not the course's)"
    found = recorded_backend(home, DEFAULT_CLUSTER_NAME)
    return {"local": "local control plane", "kind": "kind"}.get(found or "", found or "unknown")


def controller_manager_pacing() -> str | None:
    """kube-controller-manager's client pacing flags, read from the local control plane's process.

    The controller benchmark's Deployments wait on its controllers' requests, so
    the rows depend on it. None when it cannot be read (kind, another cluster).
    """
    from benchmarks.cluster import control_plane_pids
    from helpers.cluster.processes import command_line

    pid = control_plane_pids().get("kube-controller-manager")
    if pid is None:
        return None
    flags = [a for a in command_line(pid) if a.startswith(("--kube-api-qps=", "--kube-api-burst="))]
    return " ".join(flags) or "its defaults (--kube-api-qps=20 --kube-api-burst=30)"


def run_facts(argv: list[str]) -> dict[str, Any]:
    """What a reader needs to trace the figures back: command, commit, versions, machine, date."""
    import kubernetes

    from helpers import kube
    from helpers.cluster import gobuild

    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")), platform.processor(),
    )  # fmt: skip
    memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    go = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=False)
    server = kubernetes.client.VersionApi(kube.connect()).get_code().git_version
    return {
        "command": shlex.join(["benchmarks/run_all", *argv]),
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "backend": backend(),
        "controller_manager_pacing": controller_manager_pacing(),
        "kubernetes": server,
        "client_go": gobuild.BENCHMARK_PROGRAMS.version(),
        "go": go.stdout.strip(),
        "python": platform.python_version(),
        "kubernetes_python_client": metadata.version("kubernetes"),
        "orjson": metadata.version("orjson"),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(memory_kib / 2**20),
        "load": {"start": loadavg()},
        "steps": {},
    }


def own_cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for (the measuring processes)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class Steps:
    """Times each step into ``results["run"]["steps"]`` and saves the results after it.

    Beside each step's wall time, the CPU time it cost: the local control
    plane's processes (``cluster_cpu``), and the benchmark's own processes
    (``benchmark_cpu``). On a machine shared with other work, their sum over
    the cores says how long the step needs on an idle one, wherever the
    machine rather than a client's pacing sets the pace.
    """

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results
        self.started = time.monotonic()
        self._cpu = (control_plane_cpu_seconds(), own_cpu_seconds())

    def done(self, name: str, since: float) -> None:
        run = self.results["run"]
        cluster, own = control_plane_cpu_seconds(), own_cpu_seconds()
        step = {"seconds": round(time.monotonic() - since, 1),
                "benchmark_cpu": round(own - self._cpu[1], 1)}  # fmt: skip
        if cluster is not None and self._cpu[0] is not None:
            step["cluster_cpu"] = round(cluster - self._cpu[0], 1)
        self._cpu = (cluster, own)
        run["steps"][name] = step
        run["load"][f"after {name}"] = loadavg()
        run["seconds"] = round(time.monotonic() - self.started, 1)
        save(self.results)


def measure(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    from helpers import kube
    from helpers.cluster import gobuild

    results: dict[str, Any] = {"run": run_facts(argv)}
    steps = Steps(results)
    api = kube.connect()

    started = time.monotonic()
    programs = gobuild.ensure_benchmark_programs()
    steps.done("Go programs built or found", started)
    configmaps = ConfigMaps(programs["configmaps"])
    go = programs["informerbench"]

    if not args.skip_controllers:
        started = time.monotonic()
        results["controllers"] = controller_bench.run(
            programs["sample-controller-paced"], args.pacing, args.foos, args.replicas,
            args.controller_repeat,
        )  # fmt: skip
        steps.done("controllers", started)

    started = time.monotonic()
    results["events"], replay = informer_bench.run_events(
        list(informer_bench.EVENTS_IMPLS), informer_bench.GO_EVENTS, True, args.events_repeat,
        args.events, go, configmaps, api,
    )  # fmt: skip
    results["event_updates"] = [vars(made) for made in replay.made]
    results["replay_fresh_seconds"] = informer_bench.REPLAY_FRESH_SECONDS
    steps.done("events", started)

    if args.profile:
        started = time.monotonic()
        results["profile"] = []
        for fast in (False, True):
            results["profile"] += profile("events", fast, "--since", replay.since(),
                                          "--events", str(args.events))  # fmt: skip
        steps.done("events profile", started)

    # One namespace grows from one count to the next: each object is made once (and deleted
    # once), the costliest part of the run after the controllers' paced runs.
    results["sync"] = []
    namespace = create_namespace(api, informer_bench.SYNC_NAMESPACE)
    for count in sorted({args.count, *args.scale}):
        started = time.monotonic()
        objects = configmaps.ensure(namespace, count)
        steps.done(f"{count:,} ConfigMaps made", started)
        started = time.monotonic()
        everything = count == args.count
        runs = informer_bench.sync_runs(
            namespace, objects,
            list(informer_bench.PYTHON_IMPLS) if everything else SCALE_PYTHON,
            informer_bench.GO_SYNC if everything else SCALE_GO,
            everything, go, then_updates=True,
        )  # fmt: skip
        results["sync"] += informer_bench.run_sync(runs, args.repeat, namespace, configmaps, count)
        steps.done(f"sync of {count:,}", started)
        if everything and args.profile:
            started = time.monotonic()
            for fast in (False, True):
                results["profile"] += profile("sync", fast, "--namespace", namespace)
            steps.done("sync profile", started)

    if not args.keep_objects:
        started = time.monotonic()
        remove = [informer_bench.EVENTS_NAMESPACE, informer_bench.SYNC_NAMESPACE]
        for name in remove:  # faster than the namespace controller alone (see configmaps -delete)
            configmaps.delete(name)
        remove_namespaces(api, remove, timeout=900)
        steps.done("namespaces deleted", started)
    return results


def profile(workload: str, fast: bool, *args: str) -> list[dict[str, Any]]:
    """benchmarks/profile_informer.py's summary of one workload."""
    command = [sys.executable, "-m", "benchmarks.profile_informer", workload, *args,
               *(["--fast-json"] if fast else [])]  # fmt: skip
    output = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    sys.stderr.write(output.stderr)
    if output.returncode != 0:
        raise SystemExit(f"{shlex.join(command)} failed")
    return [json.loads(line) for line in output.stdout.splitlines() if line.startswith("{")]


def save(results: dict[str, Any]) -> None:
    """Keep what is measured so far: a failure later must not lose it (see --render-only)."""
    RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")


def counts(text: str) -> list[int]:
    return [int(n) for n in text.split(",") if n]


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks/run_all", description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000,
                        help="objects of the sync table with every informer (10000)")  # fmt: skip
    parser.add_argument("--scale", default="10000,30000,100000", type=counts,
                        help="object counts of the other sync tables (with commas)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3, help="sync runs of each informer (3)")
    parser.add_argument("--events", type=int, default=informer_bench.EVENTS,
                        help=f"events replayed ({informer_bench.EVENTS})")  # fmt: skip
    parser.add_argument(
        "--events-repeat", type=int, default=5,
        help="events runs of each informer (5): each lasts about a second, so the machine's "
             "load moves it most",
    )  # fmt: skip
    parser.add_argument("--foos", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--controller-repeat", type=int, default=3,
                        help="controller runs of each controller at each pacing (3)")  # fmt: skip
    parser.add_argument(
        "--pacing", default="default,50",
        type=lambda text: [controller_bench.Pacing.parse(part) for part in text.split(",")],
        help="client pacings of the controller runs: 'default' or a QPS (default,50)",
    )  # fmt: skip
    parser.add_argument("--skip-controllers", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="add a cProfile of our informer in both workloads")  # fmt: skip
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite RESULTS.md and README.md from results.json")  # fmt: skip
    parser.add_argument(
        "--keep-objects", action="store_true",
        help="keep the benchmark namespaces and their ConfigMaps (a second run starts sooner)",
    )  # fmt: skip
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    if args.render_only:
        results = json.loads(RESULTS_JSON.read_text())
    else:
        refuse_clusters_not_the_courses()
        exit_on_sigterm()  # a stopped run still stops its controllers and informers
        results = measure(args, argv)
        results["run"]["load"]["end"] = loadavg()
        save(results)
    report.write(results)
    print(f"wrote {report.RESULTS_MD.relative_to(ROOT)}, {report.README.relative_to(ROOT)} "
          f"and {RESULTS_JSON.relative_to(ROOT)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
