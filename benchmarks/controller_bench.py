"""N Foos to N available Deployments: our FooController beside sample-controller.

Not a timed test: the numbers go to benchmarks/RESULTS.md (``benchmarks/run_all``).
For each controller, run as a process: start it, wait until it logs that its
workers run (its caches have synced), create N Foos at once in a fresh
namespace (each asking for R replicas), and time until every Foo's
``status.availableReplicas`` is R. The chain is the same for both: the
controller creates a Deployment per Foo, kube-controller-manager makes its
ReplicaSet and Pods, the scheduler places them on the kwok nodes, kwok marks
them Ready, the Deployment reports them available, and the controller copies
that into the Foo's status. Only the controller differs.

Equal terms, stated in RESULTS.md: both run 2 workers (sample-controller's
``controller.Run(ctx, 2)``) and the same workqueue rate limiter (per item 5 ms
doubling to 1000 s, overall 50/s with burst 300: sample-controller's, which
``helpers.controller.foo_rate_limiter`` copies). Client pacing: client-go's
defaults, which sample-controller does not change: its rest.Config leaves QPS at
zero, so each API group's REST client gets its own 5/10 bucket (core/v1 for
Events, apps/v1 for Deployments, samplecontroller.k8s.io for Foos); our
program paces per API group the same way (``--kube-api-qps`` and
``--kube-api-burst`` are per API group). Both record Events from a thread of
their own. ``--ours-pacing`` runs ours at other paces too (default: 5/10 only).

The cluster's two kwok workers hold 110 Pods each, so N x R stays under 220.
Needs the local control plane (``make up``; KUBECONFIG as
``python -m helpers.cluster kubeconfig`` prints).

Run: PYTHONPATH=. .venv/bin/python benchmarks/controller_bench.py --foos 200 --replicas 1
         [--sample-controller PATH] [--repeat 1]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import kubernetes

from helpers import kube
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
POD_CAPACITY = 220
"""Pods the two kwok workers hold (110 each)."""
STARTED = "Started workers"
"""What both controllers log once their caches have synced and their workers run."""
CONVERGE_SECONDS = 900.0


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


def wait_until_gone(core: kubernetes.client.CoreV1Api, namespace: str) -> None:
    """Until the namespace and its Pods are gone, so the next run finds the nodes empty."""

    def absent(namespaces: dict[str, Any]) -> bool:
        return namespace not in namespaces

    wait_for(core.list_namespace, absent, what=f"namespace {namespace} deleted", timeout=300)


def run_once(
    command: list[str], name: str, foos: int, replicas: int, namespaced: bool
) -> dict[str, Any]:
    """Start one controller, hand it ``foos`` Foos, and time until all are available."""
    api = kube.connect()
    core = kubernetes.client.CoreV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    namespace = f"cbench-{name.split()[0]}-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    log_file = Path(tempfile.mkstemp(prefix=f"cbench-{name.split()[0]}-", suffix=".log")[1])
    with log_file.open("w") as log:
        process = subprocess.Popen(
            [*command, "--kubeconfig", str(kube.default_kubeconfig())]
            + (["--namespace", namespace] if namespaced else []),
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    try:
        wait_for_line(log_file, STARTED, process, timeout=120)
        started = time.monotonic()

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
    finally:
        stop_process(process)
        core.delete_namespace(namespace)
        wait_until_gone(core, namespace)
    return {
        "controller": name,
        "foos": foos,
        "replicas": replicas,
        "create_seconds": round(created, 2),
        "wall_seconds": round(wall, 2),
        "log": str(log_file),
    }


def pacing(text: str) -> tuple[float, int]:
    """``5/10`` as (QPS 5.0, burst 10)."""
    qps, _, burst = text.partition("/")
    try:
        return float(qps), int(burst)
    except ValueError:
        raise argparse.ArgumentTypeError(f"pacing is QPS/BURST, like 5/10, not {text!r}") from None


def controllers(
    sample_controller: Path | None, ours_pacing: list[tuple[float, int]]
) -> dict[str, tuple[list[str], bool]]:
    """Each controller's command line, and whether it takes ``--namespace``."""
    found: dict[str, tuple[list[str], bool]] = {}
    for qps, burst in ours_pacing:
        found[f"ours (QPS {qps:g}, burst {burst})"] = (
            [sys.executable, "-m", "helpers.program", "--workers", "2",
             "--kube-api-qps", str(qps), "--kube-api-burst", str(burst)],
            True,
        )  # fmt: skip
    if sample_controller is not None:
        # Its workers (2), limiter and client pacing are fixed in its main.go.
        found["sample-controller"] = ([str(sample_controller)], False)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--foos", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--sample-controller", type=Path, help="the built Go binary")
    parser.add_argument(
        "--ours-pacing", default="5/10",
        type=lambda text: [pacing(part) for part in text.split(",")],
        help="our clients' QPS/burst (each client's), one run each: 5/10,10/20 runs two",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.foos * args.replicas > POD_CAPACITY:
        parser.error(
            f"{args.foos} Foos x {args.replicas} replicas is more Pods than the two kwok "
            f"workers hold ({POD_CAPACITY}); lower --foos or --replicas."
        )
    for _ in range(args.repeat):
        for name, (command, namespaced) in controllers(
            args.sample_controller, args.ours_pacing
        ).items():
            row = run_once(command, name, args.foos, args.replicas, namespaced)
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
