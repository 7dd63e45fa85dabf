"""N Foos to N available Deployments: our FooController beside sample-controller.

Not a timed test: ``benchmarks/run_all`` records the rows in benchmarks/results.json.
For each controller, run as a process: start it, wait until it logs that its
workers run (its caches have synced), create N Foos at once in a fresh
namespace (each asking for R replicas), and time until every Foo's
``status.availableReplicas`` is R. The chain is the same for both: the
controller creates a Deployment per Foo, kube-controller-manager makes its
ReplicaSet and Pods, the scheduler places them on the kwok nodes, kwok marks
them Ready, the Deployment reports them available, and the controller copies
that into the Foo's status. Only the controller differs. Both watch the run's
namespace only (ours: ``--namespace``; sample-controller-paced: ``-namespace``,
informer factories made with client-go's ``informers.WithNamespace``), so
neither caches another run's objects.

Both run 2 workers and sample-controller's workqueue rate limiter
(``helpers.controller.foo_rate_limiter`` copies it), at one client pacing for
both per run:

``default``
    Neither sets its pacing. client-go gives each REST client a token bucket
    of its own (``rest.DefaultQPS``, ``rest.DefaultBurst``), one per API group
    for sample-controller (core/v1 for Events, apps/v1 for Deployments,
    samplecontroller.k8s.io for Foos); our program paces per API group the
    same way, at helpers.throttle's defaults.
``50`` (any number)
    ``--kube-api-qps 50`` for ours, and the same QPS for sample-controller's
    clients; the burst stays at each one's default.

sample-controller runs as ``sample-controller-paced`` (helpers.cluster.gobuild):
its own controller.go with a main.go that takes the two pacing flags. Each row
records what ran: the workers and the QPS and burst, from the controllers' own
log lines where they print them ("Starting workers", sample-controller's
"Client pacing"), else from the command line.

The Foos are created once every client token bucket of the controller is full
again (``Pacing.refill_seconds``: burst / QPS after "Started workers", 2 s at
the default pacing), the same client state on both sides as both connections
are warm. The informers' first requests take tokens from the buckets the syncs
then use, and not as many on each side: ours lists and then watches (2 requests
an informer), sample-controller streams its first list (1 request: a watch with
``sendInitialEvents=true``, client-go's ``WatchListClient``, on by default since
1.35; its requests at ``-v=6`` show it). Created at once, the Foos found ours
a token or two behind in its Foo bucket: its 400th sync came 0.27-0.50 s after
sample-controller's, and 0.09-0.18 s before it once both buckets were full
(benchmarks/sync_timeline.py; RESULTS.md has the runs).

Every Deployment also waits on kube-controller-manager, whose deployment and
ReplicaSet controllers each send at most so many requests a second. The course's
cluster raises their pace from 20 to 100 (``CONTROLLER_MANAGER_ARGS`` in
helpers/cluster/local.py, and kind-config.yaml): at 20, 200 Foos took 47-48 s
at QPS 50 for either controller, the time kube-controller-manager needed; at
100 they take 12-13 s and the controllers set it. run_all records the flags it
ran with.

The cluster's two kwok workers hold 110 Pods each, so N x R stays under 220.
Needs the local control plane (``make up``; KUBECONFIG as
``python -m helpers.cluster kubeconfig`` prints).

Run: .venv/bin/python -m benchmarks.controller_bench --foos 200 [--pacing default,50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes

from benchmarks.cluster import control_plane_cpu_seconds, cpu_seconds, create_namespace
from benchmarks.guard import refuse_clusters_not_the_courses
from benchmarks.informer_bench import rotated
from benchmarks.stopping import exit_on_sigterm
from helpers import kube, namespaces
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.throttle import DEFAULT_BURST, DEFAULT_QPS
from helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
POD_CAPACITY = 220
"""Pods the two kwok workers hold (110 each)."""
STARTED = "Started workers"
"""What both controllers log once their caches have synced and their workers run."""
WORKERS = re.compile(r'Starting workers"? count=(\d+)')
"""Both log the number of workers as they start them (ours: ``count=2``; klog: ``count=2``)."""
CLIENT_PACING = re.compile(r'"Client pacing" qps=([\d.]+) burst=(\d+) perAPIGroup=(\d+)')
"""sample-controller-paced's report of its REST clients' rate limiter."""
SYNCED = "Successfully synced"
"""What both controllers log after each sync that succeeded."""
SYNCED_KEY = re.compile(r'Successfully synced"?\s+(?:objectName=")?([^\s"/]+/[^\s"]+)')
"""The key in both logs' sync lines (ours: ``synced ns/foo``; klog: ``objectName="ns/foo"``)."""
CONVERGE_SECONDS = 900.0
WORKER_COUNT = 2
"""sample-controller's ``controller.Run(ctx, 2)``; ours is given the same."""


def wait_for_line(path: Path, text: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    """Until the controller's log has ``text`` (a process announces it nowhere else)."""
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        if process.poll() is not None:
            raise RuntimeError(f"the controller exited before its workers started: see {path}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {text!r} in {path} after {timeout:.0f} s")
        time.sleep(0.05)


def stop_process(process: subprocess.Popen[bytes], grace: float = 30) -> None:
    """SIGTERM, as the kubelet does; SIGKILL if it has not exited after ``grace`` seconds."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass(frozen=True)
class Pacing:
    """A client pacing both controllers run at: client-go's default, or a QPS of one's choice."""

    qps: float | None = None

    @classmethod
    def parse(cls, text: str) -> Pacing:
        if text == "default":
            return cls()
        try:
            qps = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"a pacing is 'default' or a QPS such as 50, not {text!r}"
            ) from None
        if qps <= 0:
            raise argparse.ArgumentTypeError(f"a QPS must be above 0, not {text!r}")
        return cls(qps)

    @property
    def name(self) -> str:
        return "default" if self.qps is None else f"QPS {self.qps:g}"

    def ours(self) -> list[str]:
        return [] if self.qps is None else ["--kube-api-qps", f"{self.qps:g}"]

    def sample_controller(self) -> list[str]:
        return [] if self.qps is None else ["-kube-api-qps", f"{self.qps:g}"]

    def refill_seconds(self) -> float:
        """How long a token bucket takes to gain its whole burst (both keep the default burst)."""
        return DEFAULT_BURST / (self.qps or DEFAULT_QPS)


@dataclass(frozen=True)
class Controller:
    """How to start one controller, and how to read what it ran with."""

    name: str
    command: list[str]  # both take --namespace and then watch that namespace only (Go's flag
    # package reads -namespace and --namespace alike)

    def ran_with(self, log: str, pacing: Pacing) -> dict[str, Any]:
        """Workers and client pacing, as the log says (else as the command line set them).

        Also ``syncs``: how many syncs succeeded (both log each one), which
        says whether the two did the same amount of work, and ``syncs_per_foo``
        (:func:`syncs_per_foo`), which says where the syncs went.
        """
        workers = WORKERS.search(log)
        found: dict[str, Any] = {
            "workers": int(workers.group(1)) if workers else None,
            "syncs": log.count(SYNCED),
            "syncs_per_foo": syncs_per_foo(log),
        }
        reported = CLIENT_PACING.search(log)
        if reported:
            found |= {"qps": float(reported.group(1)), "burst": int(reported.group(2)),
                      "token_buckets": int(reported.group(3))}  # fmt: skip
        elif self.name == "ours":
            found |= {"qps": pacing.qps or DEFAULT_QPS, "burst": DEFAULT_BURST}
        return found


def syncs_per_foo(log: str) -> dict[str, int]:
    """How many Foos a controller synced once, twice, ...: ``{"2": 169, "3": 30}``.

    A Foo is synced once for its creation, and again for each change to it or to
    its Deployment that found its key no longer queued; the counts show whether a
    run needed a third round of syncs (see benchmarks/RESULTS.md, "Why QPS 50 runs
    come in two speeds"). Keys are strings, as JSON has them.
    """
    per_key = Counter(SYNCED_KEY.findall(log))
    return {str(syncs): foos for syncs, foos in sorted(Counter(per_key.values()).items())}


def controllers(sample_controller: Path | None, pacing: Pacing) -> list[Controller]:
    """Ours, and sample-controller when its binary is given, at ``pacing``."""
    ours = [sys.executable, "-m", "helpers.program", "--workers", str(WORKER_COUNT)]
    found = [Controller("ours", [*ours, *pacing.ours()])]
    if sample_controller is not None:
        command = [str(sample_controller), *pacing.sample_controller()]
        found.append(Controller("sample-controller", command))
    return found


def clear(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """Delete ``namespace``, and wait until its Pods and Foos are gone (not the namespace itself).

    The next run needs the kwok nodes free (their 220 Pods) and no Foo of this
    run left (sample-controller-paced watches every namespace when it is not
    given one, as in benchmarks/conflict_drill.py); it does not need the
    namespace object gone. Waiting for that would cost every run half a minute:
    the namespace controller lets a namespace go only once its Pods' grace
    period (30 s) has passed. So, the controller being stopped, the Foos are
    deleted first, then the namespace, then its Pods at once (grace period 0;
    nothing can make new ones in a namespace being deleted); the namespace
    finishes on its own, and :func:`run` waits for all of them at the end.

    A namespace the course did not make (without its labels) is someone else's:
    :func:`helpers.namespaces.not_ours` is raised before anything in it is
    deleted, and again if the namespace was replaced before its own delete.
    """
    core = kubernetes.client.CoreV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    if not namespaces.is_the_courses(core.read_namespace(namespace)):
        raise namespaces.not_ours(namespace)
    custom.delete_collection_namespaced_custom_object(FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL)
    if namespaces.delete_namespace(api, namespace).startswith("was left alone"):
        raise namespaces.not_ours(namespace)  # replaced since the check: its Pods are not ours
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_for(core.list_namespaced_pod, lambda pods: not pods, what=f"no Pods in {namespace}",
             timeout=300, namespace=namespace)  # fmt: skip
    wait_for(
        custom.list_namespaced_custom_object, lambda foos: not foos,
        what=f"no Foos in {namespace}", timeout=300, group=FOO_GROUP, version=FOO_VERSION,
        namespace=namespace, plural=FOO_PLURAL,
    )  # fmt: skip


def run_once(
    controller: Controller,
    pacing: Pacing,
    foos: int,
    replicas: int,
    logs: Path,
    settle: float | None = None,
) -> dict[str, Any]:
    """Start one controller, hand it ``foos`` Foos, and time until all are available.

    The Foos are created ``settle`` seconds after the controller's workers
    started (default: ``pacing.refill_seconds()``, when its buckets are full).
    """
    api = kube.connect()
    custom = kubernetes.client.CustomObjectsApi(api)
    namespace = create_namespace(
        api, f"cbench-{controller.name.split('-')[0]}-{uuid.uuid4().hex[:6]}"
    )
    log_file = logs / f"{namespace}.log"
    launched = time.monotonic()
    with log_file.open("w") as log:
        process = subprocess.Popen(
            [*controller.command, "--kubeconfig", str(kube.default_kubeconfig()),
             "--namespace", namespace],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    try:
        wait_for_line(log_file, STARTED, process, timeout=120)
        startup = time.monotonic() - launched
        # A timed wait: neither controller tells how full its buckets are, and
        # the time they take to refill is what a token bucket promises.
        settle = pacing.refill_seconds() if settle is None else settle
        time.sleep(settle)
        started = time.monotonic()
        cpu_at_start, plane_at_start = cpu_seconds(process.pid), control_plane_cpu_seconds()

        def create(i: int) -> None:
            body = foo_body(f"foo-{i:03}", f"foo-{i:03}-d", replicas)
            custom.create_namespaced_custom_object(
                FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, body
            )

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(create, range(foos)))
        created = time.monotonic() - started

        def available(objects: dict[str, Any]) -> bool:
            return len(objects) == foos and all(
                ((foo.get("status") or {}).get("availableReplicas")) == replicas
                for foo in objects.values()
            )

        wait_for(
            custom.list_namespaced_custom_object, available, what="every Foo available",
            timeout=CONVERGE_SECONDS, group=FOO_GROUP, version=FOO_VERSION,
            namespace=namespace, plural=FOO_PLURAL,
        )  # fmt: skip
        wall = time.monotonic() - started
        cpu = cpu_seconds(process.pid) - cpu_at_start
        plane_at_end = control_plane_cpu_seconds()
        plane_cpu = (
            None if plane_at_start is None or plane_at_end is None
            else plane_at_end - plane_at_start
        )  # fmt: skip
    finally:
        stopping = time.monotonic()
        process.kill()  # the run is over: how it ends is not measured, so it is not waited for
        process.wait()
        clear(api, namespace)
    return {
        "namespace": namespace,
        "controller": controller.name,
        "pacing": pacing.name,
        **controller.ran_with(log_file.read_text(errors="replace"), pacing),
        "foos": foos,
        "replicas": replicas,
        "create_seconds": round(created, 2),
        "wall_seconds": round(wall, 2),
        # CPU time over the same window: the controller's process, and the local control
        # plane's processes (None on another cluster); both share the machine's cores.
        "cpu_seconds": round(cpu, 2),
        "control_plane_cpu_seconds": None if plane_cpu is None else round(plane_cpu, 1),
        "startup_seconds": round(startup, 2),
        "settle_seconds": round(settle, 2),
        "cleanup_seconds": round(time.monotonic() - stopping, 2),
    }


def run(sample_controller: Path | None, pacings: list[Pacing], foos: int, replicas: int,
        repeat: int) -> list[dict[str, Any]]:  # fmt: skip
    """Every controller at every pacing, ``repeat`` times, the controllers' order alternating.

    The logs go to a temporary folder, kept (and named on stderr) only if a
    run fails.
    """
    rows = []
    made: list[str] = []
    logs = Path(tempfile.mkdtemp(prefix="controller-bench-"))
    for pacing in pacings:
        for repetition in range(repeat):
            for controller in rotated(controllers(sample_controller, pacing), repetition):
                try:
                    row = run_once(controller, pacing, foos, replicas, logs)
                except BaseException:
                    print(f"controller_bench: the logs are in {logs}", file=sys.stderr)
                    raise
                row["repeat"] = repetition
                made.append(row.pop("namespace"))
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
    core = kubernetes.client.CoreV1Api(kube.connect())
    wait_for(
        core.list_namespace, lambda found: not set(made) & set(found),
        what="the controller runs' namespaces deleted", timeout=300,
    )  # fmt: skip
    for log in logs.iterdir():
        log.unlink()
    logs.rmdir()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--foos", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--pacing", default="default,50",
        type=lambda text: [Pacing.parse(part) for part in text.split(",")],
        help="client pacings, each run by both: 'default' or a QPS (default: default,50)",
    )  # fmt: skip
    parser.add_argument(
        "--sample-controller", type=Path,
        help="sample-controller-paced (default: built by helpers.cluster.gobuild)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    refuse_clusters_not_the_courses()  # before the first request
    exit_on_sigterm()  # a stopped run still stops its controller and deletes its namespace
    if args.foos * args.replicas > POD_CAPACITY:
        parser.error(
            f"{args.foos} Foos x {args.replicas} replicas is more Pods than the two kwok "
            f"workers hold ({POD_CAPACITY}); lower --foos or --replicas."
        )
    if args.sample_controller is None:
        from helpers.cluster import gobuild

        args.sample_controller = gobuild.ensure_benchmark_programs()["sample-controller-paced"]
    rows = run(args.sample_controller, args.pacing, args.foos, args.replicas, args.repeat)
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
