"""The course's cluster from a shell: ``python -m helpers.cluster up|down|status|...``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from kubernetes.client.exceptions import ApiException

from .. import kube
from ..apierrors import explain
from ..errors import CourseError
from ..home import DEFAULT_CLUSTER_NAME, CourseHome, check_cluster_name, remove_cluster_dir
from .backends import choose_backend, cluster_for, local_cluster, recorded_backend
from .build import ensure_all_built
from .local import LocalCluster

Runner = Callable[[CourseHome, argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    home = CourseHome.from_environment()
    try:
        check_cluster_name(args.name)  # a name is a folder's name: checked before any disk access
        return args.run(home, args)
    except CourseError as exc:
        print(f"error: {exc.problem}\nnext step: {exc.next_step}", file=sys.stderr)
        return 2
    except ApiException as exc:
        print(f"error: {explain(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; run `python -m helpers.cluster down` to clean up.", file=sys.stderr)
        return 130


def _up(home: CourseHome, args: argparse.Namespace) -> int:
    home.make_root()  # 0700 before anything is written in it (kind's logs, kwokctl's keys)
    backend = args.backend
    if backend == "auto":
        backend = recorded_backend(home, args.name) or choose_backend()
    cluster = cluster_for(
        backend, home, args.name, port=args.port, kubeconfig=args.kubeconfig, context=args.context
    )
    cluster.up()
    home.tighten()  # any backend: the kubeconfig it wrote, keys an older version left 0644
    print(f"==> ready. Notebooks use {cluster.kubeconfig}; in a shell:")
    print(f"    export KUBECONFIG={cluster.kubeconfig}")
    return 0


def _down(home: CourseHome, args: argparse.Namespace) -> int:
    backend = recorded_backend(home, args.name)
    if backend is None:
        leftover = home.cluster_dir(args.name)
        if leftover.exists() or leftover.is_symlink():
            remove_cluster_dir(home, args.name)  # only a folder holding the course's state file
            print(f"==> no cluster named '{args.name}' runs; removed its leftover {leftover}.")
        else:
            print(f"==> no cluster named '{args.name}'; nothing to stop.")
        return 0
    cluster_for(backend, home, args.name).down()
    return 0


def _status(home: CourseHome, args: argparse.Namespace) -> int:
    backend = recorded_backend(home, args.name)
    if backend is None:
        print(f"no cluster named '{args.name}' (start one with `make up`).")
        return 1
    path = home.kubeconfig(args.name)
    context, server = kube.describe_context(path, None)
    api = kube.connect(path, context)
    version = kube.probe(api, context, server, timeout=5)["git_version"]
    print(f"cluster:    {args.name} ({backend} backend)")
    print(f"context:    {context} at {server}")
    print(f"kubernetes: {version}")
    print(f"ready:      {kube.readiness_problem(api, timeout=10) or 'yes (/readyz)'}")
    if (cluster := local_cluster(home, args.name)) is not None:
        print(f"processes:  {_processes(cluster)}")
    from kubernetes.client import CoreV1Api

    for node in CoreV1Api(api).list_node().items:
        ready = next((c.status for c in node.status.conditions or [] if c.type == "Ready"), "?")
        print(f"node:       {node.metadata.name} Ready={ready}")
    print(f"kubeconfig: {path}")
    return 0


def _processes(cluster: LocalCluster) -> str:
    """All running, or which components exited (then, say, no controller makes Pods)."""
    dead = cluster.dead_components()
    if dead:
        return f"{', '.join(sorted(dead))} not running: `make up` starts them again"
    running = cluster.running()
    return f"all {len(running)} running ({', '.join(sorted(running))})"


def _logs(home: CourseHome, args: argparse.Namespace) -> int:
    backend = recorded_backend(home, args.name)
    if backend is None:
        raise CourseError(
            f"There is no cluster named '{args.name}', so there are no logs to show.",
            "start it with `python -m helpers.cluster up`.",
        )
    cluster_for(backend, home, args.name).logs(args.component, args.lines)
    return 0


def _kubeconfig(home: CourseHome, args: argparse.Namespace) -> int:
    print(home.kubeconfig(args.name))
    return 0


def _build(home: CourseHome, args: argparse.Namespace) -> int:
    for name, path in sorted(ensure_all_built(home).items()):
        print(f"{name:24} {path}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m helpers.cluster", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    def command(name: str, run: Runner, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(run=run)
        sub.add_argument("--name", default=DEFAULT_CLUSTER_NAME, help="cluster name")
        return sub

    up = command("up", _up, "start the course's cluster (idempotent) and install the Foo CRD")
    up.add_argument(
        "--backend",
        choices=["auto", "local", "kind", "existing"],
        default="auto",
        help="auto: kind if Docker and kind are there, else the local control plane",
    )
    up.add_argument("--port", type=int, default=0, help="API server port (local; default random)")
    up.add_argument("--kubeconfig", type=Path, help="source kubeconfig (existing backend)")
    up.add_argument("--context", help="source context (existing backend; default current)")
    command("down", _down, "stop the cluster and remove its state")
    logs = command("logs", _logs, "show the last lines of each control-plane component's log")
    logs.add_argument("--component", help="only this component (say kube-apiserver)")
    logs.add_argument("--lines", type=int, default=20, help="lines per component (default 20)")
    command("status", _status, "show which cluster the course uses and whether it is healthy")
    command("kubeconfig", _kubeconfig, "print the path of the kubeconfig notebooks use")
    command("build", _build, "build the local control plane's binaries (cached by version)")
    return parser


if __name__ == "__main__":
    sys.exit(main())
