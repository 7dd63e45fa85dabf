"""What the benchmarks need from the cluster: their namespaces, the API server's CPU, the objects.

Every namespace a benchmark makes carries the course's labels
(:data:`helpers.namespaces.COURSE_LABELS`), so :func:`remove_namespaces`, through
:func:`helpers.namespaces.delete_namespace`, deletes what the benchmarks made and
leaves alone a namespace of the same name that someone else made.

The ConfigMaps are made and updated by benchmarks/go's ``configmaps`` program
(:class:`ConfigMaps`): unthrottled Go requests, so the API server sets the pace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers import kube, namespaces
from helpers.waiting import wait_for


def create_namespace(api: kubernetes.client.ApiClient, name: str) -> str:
    """Namespace ``name`` with the course's labels; one the course made already is kept as it is.

    Kept, so that ``--keep-objects`` saves the next run from filling it again.
    A namespace of that name without the course's labels is someone else's:
    :func:`helpers.namespaces.not_ours` says so, and nothing is touched.
    """
    core = kubernetes.client.CoreV1Api(api)
    try:
        found = core.read_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
    else:
        if not namespaces.is_the_courses(found):
            raise namespaces.not_ours(name)
        if found.metadata.deletion_timestamp is None:
            return name
        wait_for(
            core.list_namespace, lambda found: name not in found,
            what=f"the old namespace {name} to be deleted", timeout=900,
            field_selector=f"metadata.name={name}",
        )  # fmt: skip
    core.create_namespace({"metadata": {"name": name, "labels": dict(namespaces.COURSE_LABELS)}})
    return name


def remove_namespaces(api: kubernetes.client.ApiClient, names: list[str], timeout: float) -> None:
    """Delete the benchmarks' namespaces (those the course made) and wait until they are gone."""
    core = kubernetes.client.CoreV1Api(api)
    deleted = []
    for name in dict.fromkeys(names):
        outcome = namespaces.delete_namespace(api, name)
        print(f"namespace {name} {outcome}", flush=True)
        if outcome == "is being deleted":
            deleted.append(name)
    wait_for(
        core.list_namespace, lambda found: not set(deleted) & set(found),
        what=f"namespaces {', '.join(deleted)} to be deleted", timeout=timeout,
    )  # fmt: skip


# -- the API server's CPU -------------------------------------------------------------


def control_plane_pids() -> dict[str, int]:
    """The local control plane's processes by component; empty on kind or another cluster."""
    from helpers.cluster.backends import local_cluster
    from helpers.home import DEFAULT_CLUSTER_NAME, CourseHome

    cluster = local_cluster(CourseHome.from_environment(), DEFAULT_CLUSTER_NAME)
    return {} if cluster is None else cluster.running()


def api_server_pid() -> int | None:
    """The local control plane's kube-apiserver process; None on kind or another cluster."""
    return control_plane_pids().get("kube-apiserver")


def control_plane_cpu_seconds() -> float | None:
    """CPU time the local control plane's processes have used so far; None if not local."""
    pids = control_plane_pids()
    return sum(cpu_seconds(pid) for pid in pids.values()) if pids else None


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


Measure = Callable[[], dict[str, Any]]
"""One run of one informer (or reader): it returns that run's row."""


def with_server_cpu(pid: int | None, measure: Measure) -> dict[str, Any]:
    """``measure()``'s row, plus the API server's CPU seconds while it ran (when known)."""
    if pid is None:
        return measure()
    before = cpu_seconds(pid)
    row = measure()
    return {**row, "server_cpu_seconds": round(cpu_seconds(pid) - before, 3)}


# -- the objects ------------------------------------------------------------------------


@dataclass(frozen=True)
class Updates:
    """What a round of updates left behind (``configmaps -update``'s answer).

    ``since`` is the collection's resourceVersion before the first update: a
    watch from it replays them all. ``last_key`` holds ``last_value`` once the
    last of them has been applied, and the last is made after all the others
    have finished, so a cache that shows it has applied every one.
    """

    since: str
    updates: int
    objects: int
    last_key: str
    last_value: str
    seconds: float


def go_environment(**extra: str) -> dict[str, str]:
    """The environment for a Go program: ours, with the kubeconfig the Python side reads.

    client-go reads only ``$KUBECONFIG`` (and ~/.kube/config); our clients fall
    back to the course's kubeconfig when it is unset, so name it for the Go side.
    """
    environment = {**os.environ, **extra}
    environment.setdefault("KUBECONFIG", str(kube.default_kubeconfig()))
    return environment


@dataclass(frozen=True)
class ConfigMaps:
    """benchmarks/go's ``configmaps`` program: it makes and updates the benchmarks' ConfigMaps."""

    program: Path

    def _run(self, *args: str) -> dict[str, Any]:
        output = subprocess.run(
            [str(self.program), *args],
            capture_output=True,
            text=True,
            check=False,
            env=go_environment(),
        )
        if output.returncode != 0:
            raise RuntimeError(f"configmaps {' '.join(args)} failed: {output.stderr.strip()}")
        return json.loads(output.stdout)

    def ensure(self, namespace: str, count: int) -> int:
        """Make sure cm-00000 ... exist, ``count`` of them; how many ConfigMaps the namespace holds.

        The total includes ``kube-root-ca.crt``, which the controller manager adds to
        every namespace a moment after it is made: counted before it arrives, the
        total is one short of what an informer started afterwards lists, so it is
        waited for first.
        """
        wait_for(
            kubernetes.client.CoreV1Api(kube.connect()).list_namespaced_config_map,
            lambda found: "kube-root-ca.crt" in found,
            what=f"kube-root-ca.crt in {namespace}", timeout=60, namespace=namespace,
        )  # fmt: skip
        found = self._run("-namespace", namespace, "-create", str(count))
        print(f"{namespace}: {found['objects']} ConfigMaps ({found['created']} made now in "
              f"{found['seconds']} s)", file=sys.stderr, flush=True)  # fmt: skip
        return found["objects"]

    def delete(self, namespace: str) -> int:
        """Delete the benchmark's ConfigMaps of ``namespace``, side by side; how many."""
        found = self._run("-namespace", namespace, "-delete")
        print(f"{namespace}: {found['deleted']} ConfigMaps deleted in {found['seconds']} s",
              file=sys.stderr, flush=True)  # fmt: skip
        return found["deleted"]

    def update(self, namespace: str, updates: int, objects: int, token: str) -> Updates:
        """``updates`` updates spread over the first ``objects`` ConfigMaps."""
        found = self._run("-namespace", namespace, "-update", str(updates),
                          "-objects", str(objects), "-token", token)  # fmt: skip
        return Updates(found["since"], found["updates"], objects, found["last_key"],
                       found["last_value"], found["seconds"])  # fmt: skip
