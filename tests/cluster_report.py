"""What the cluster looked like when a test failed: printed with the failure, for CI logs.

A test that times out waiting for a Pod says only that it waited. The cause is
elsewhere: a component that exited, a node that went NotReady or tainted, a
Pod the scheduler could not place, a ReplicaSet whose creates were refused.
CI keeps only what the run printed, and the cluster's logs are gone once
``make test`` stops it, so :func:`cluster_report` gathers those facts while the
cluster still runs, and ``conftest.py`` attaches them to every failing test that
used the cluster (or a notebook).

Everything here is best effort: a report that cannot be made says why in one
line, and never turns one failure into two.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import kubernetes

from helpers import kube
from helpers.cluster.backends import local_cluster
from helpers.cluster.local import LocalCluster, tail
from helpers.home import DEFAULT_CLUSTER_NAME, CourseHome

RECENT_SECONDS = 300
"""Warning Events younger than this are listed (a chapter's waits are 30 s)."""
LOG_LINES_SCANNED = 400
LOG_LINES_SHOWN = 12


def cluster_report() -> str:
    """Components, nodes, Pods that are not Ready, recent Warning Events, log errors."""
    parts = [
        _section("components", _components),
        _section("nodes", _nodes),
        _section("pods that are not Ready", _unready_pods),
        _section(f"Warning Events of the last {RECENT_SECONDS} s", _warning_events),
        _section("errors in the component logs", _log_errors),
    ]
    return "\n".join(parts)


def _section(title: str, gather: Callable[[], list[str]]) -> str:
    try:
        lines = gather() or ["(none)"]
    except Exception as exc:  # a report must never fail the run a second time
        lines = [f"(could not look: {type(exc).__name__}: {exc})"]
    return "\n".join([f"-- {title}", *("   " + line for line in lines)])


def _local_cluster() -> LocalCluster | None:
    return local_cluster(CourseHome.from_environment(), DEFAULT_CLUSTER_NAME)


def _components() -> list[str]:
    cluster = _local_cluster()
    if cluster is None:
        return ["not the local control plane: its processes are not ours to list"]
    problem = cluster.health_problem()
    running = cluster.running()
    return [f"running: {', '.join(sorted(running)) or 'nothing'}", f"health: {problem or 'ok'}"]


def _api() -> kubernetes.client.ApiClient:
    return kube.connect(probe_timeout=3)


def _nodes() -> list[str]:
    lines = []
    for node in kubernetes.client.CoreV1Api(_api()).list_node(_request_timeout=5).items:
        ready = _condition(node.status.conditions, "Ready")
        taints = [f"{t.key}:{t.effect}" for t in node.spec.taints or []]
        lines.append(f"{node.metadata.name}: Ready={ready} taints={taints or 'none'}")
    return lines


def _condition(conditions: list[Any] | None, kind: str) -> str:
    for condition in conditions or []:
        if condition.type == kind:
            return condition.status
    return "?"


def _unready_pods() -> list[str]:
    lines = []
    pods = kubernetes.client.CoreV1Api(_api()).list_pod_for_all_namespaces(_request_timeout=5)
    for pod in pods.items:
        if _condition(pod.status.conditions, "Ready") == "True":
            continue
        where = pod.spec.node_name or "not scheduled"
        scheduled = _condition(pod.status.conditions, "PodScheduled")
        lines.append(
            f"{pod.metadata.namespace}/{pod.metadata.name}: {pod.status.phase}, {where}, "
            f"PodScheduled={scheduled}, deleting={pod.metadata.deletion_timestamp is not None}"
        )
    return lines[:30]


def _warning_events() -> list[str]:
    since = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=RECENT_SECONDS)
    events = kubernetes.client.CoreV1Api(_api()).list_event_for_all_namespaces(
        field_selector="type=Warning", _request_timeout=5
    )
    lines = []
    for event in events.items:
        when = event.last_timestamp or event.event_time or event.metadata.creation_timestamp
        if when is not None and when < since:
            continue
        about = event.involved_object
        lines.append(
            f"{about.kind} {event.metadata.namespace}/{about.name}: {event.reason}: "
            f"{event.message} (x{event.count or 1})"
        )
    return lines[-30:]


def _log_errors() -> list[str]:
    cluster = _local_cluster()
    if cluster is None:
        return ["not the local control plane: no component logs here"]
    lines = []
    for log in sorted((cluster.kwok_dir / "logs").glob("*.log")):
        errors = [line for line in tail(log, LOG_LINES_SCANNED) if line[:1] in ("E", "F")]
        lines.extend(f"{log.stem}: {line[:300]}" for line in errors[-LOG_LINES_SHOWN:])
    return lines
