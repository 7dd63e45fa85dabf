"""409 Conflicts under API server restarts: our Foo controller beside sample-controller.

Not a timed test: the numbers go to benchmarks/RESULTS.md. A write from a stale
cached Foo gets 409 Conflict; the controller requeues the key and wins once its
cache has caught up. So the conflicts a controller collects while the API
server is killed and restarted measure how long its caches stay stale.

The drill, the same for each controller, run as a process with 2 workers in a
namespace of its own: create N Foos, then R times: SIGKILL kube-apiserver, start
it again, wait for /readyz, scale every Foo; finally wait until every Foo
reports its replicas. Conflicts are counted from the controller's log (both
log each failed sync with the API server's message, "the object has been
modified").

sample-controller is the upstream Go program (k8s.io/sample-controller at the
cluster's version), built by the caller; give its path with --sample-controller.
Needs the local control plane (``make up``; KUBECONFIG as
``python -m helpers.cluster kubeconfig`` prints).

Our program paces its client as client-go does by default (``--kube-api-qps 5
--kube-api-burst 10``, Retry-After obeyed), so both run with the same pacing.

Run: .venv/bin/python -m benchmarks.conflict_drill [--foos 20] [--restarts 3]
         [--sample-controller PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import kubernetes

from benchmarks.cluster import create_namespace
from benchmarks.controller_bench import STARTED, stop_process, wait_for_line
from benchmarks.guard import refuse_clusters_not_the_courses
from benchmarks.stopping import exit_on_sigterm
from helpers import kube, namespaces
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.faults.control_plane import local_cluster, restart_api_server
from helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
CONFLICT = "the object has been modified"
CONVERGE_SECONDS = 300.0


def replicas_after(round_: int, before: int) -> int:
    return 1 + (before + round_) % 3


def drill(command: list[str], name: str, foos: int, restarts: int) -> dict[str, object]:
    """Run one controller through the drill; its conflicts, syncs failed and wall time."""
    api = kube.connect()
    custom = kubernetes.client.CustomObjectsApi(api)
    cluster = local_cluster()
    namespace = create_namespace(api, f"drill-{name}-{uuid.uuid4().hex[:6]}")
    log_file = Path(tempfile.mkstemp(prefix=f"drill-{name}-", suffix=".log")[1])
    started = time.monotonic()
    with log_file.open("w") as log:
        process = subprocess.Popen(
            [*command, "--kubeconfig", str(kube.default_kubeconfig())]
            + (["--namespace", namespace] if name == "ours" else []),
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    replicas = {f"foo-{i:02}": 1 + i % 3 for i in range(foos)}
    try:
        wait_for_line(log_file, STARTED, process, timeout=60)
        for foo, count in replicas.items():
            body = foo_body(foo, f"{foo}-d", count)
            custom.create_namespaced_custom_object(
                FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, body
            )
        for round_ in range(restarts):
            restart_api_server(cluster)
            api = kube.connect()  # the old pooled connections died with the server
            custom = kubernetes.client.CustomObjectsApi(api)
            for foo in replicas:
                replicas[foo] = replicas_after(round_, replicas[foo])
                patch = {"spec": {"replicas": replicas[foo]}}
                custom.patch_namespaced_custom_object(
                    FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo, patch
                )

        def converged(objects: dict) -> bool:
            return all(
                ((objects.get(foo) or {}).get("status") or {}).get("availableReplicas") == want
                for foo, want in replicas.items()
            )

        wait_for(
            custom.list_namespaced_custom_object, converged, what="every Foo's replicas",
            timeout=CONVERGE_SECONDS, group=FOO_GROUP, version=FOO_VERSION,
            namespace=namespace, plural=FOO_PLURAL,
        )  # fmt: skip
        wall = time.monotonic() - started
    finally:
        stop_process(process)
        cluster.revive()
        namespaces.delete_namespace(kube.connect(), namespace)
    lines = log_file.read_text(errors="replace").splitlines()
    mine = [line for line in lines if namespace in line or name == "ours"]
    return {
        "controller": name,
        "foos": foos,
        "restarts": restarts,
        "conflicts": sum(1 for line in mine if CONFLICT in line),
        "wall_seconds": round(wall, 1),
        "log": str(log_file),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--foos", type=int, default=20)
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--sample-controller", type=Path, help="the built Go binary")
    parser.add_argument("--only-sample-controller", action="store_true")
    args = parser.parse_args()
    refuse_clusters_not_the_courses()  # before the first request
    exit_on_sigterm()  # a stopped drill still stops its controller
    controllers = {}
    if not args.only_sample_controller:
        controllers["ours"] = [sys.executable, "-m", "helpers.program", "--workers", "2"]
    if args.sample_controller:
        controllers["sample-controller"] = [str(args.sample_controller)]
    for _ in range(args.repeat):
        for name, command in controllers.items():
            print(json.dumps(drill(command, name, args.foos, args.restarts)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
