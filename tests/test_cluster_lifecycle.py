"""``up`` is idempotent, ``down`` leaves nothing behind, a broken cluster is replaced.

These start their own local cluster (named ``cfs-lifecycle``, beside the one
the rest of the suite uses) through the real command line, with the binaries
``make test`` already built.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest

from helpers import kube
from helpers.cluster.local import LocalCluster, process_alive
from helpers.cluster.paths import CourseHome

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[1]
NAME = "cfs-lifecycle"
COMPONENTS = {
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok-controller",
}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "helpers.cluster", *args, "--name", NAME],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    local = LocalCluster(CourseHome.from_environment(), NAME)
    yield local
    cli("down")


def ready_nodes(local: LocalCluster) -> list[str]:
    api = kube.connect(local.kubeconfig)
    nodes = kubernetes.client.CoreV1Api(api).list_node().items
    return sorted(
        node.metadata.name
        for node in nodes
        if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
    )


def test_up_twice_is_idempotent_and_down_stops_everything(cluster: LocalCluster) -> None:
    first = cli("up", "--backend", "local")
    assert "starting the control plane" in first.stderr
    pids = cluster.processes()
    assert set(pids) == COMPONENTS
    assert all(process_alive(pid) for pid in pids.values())
    assert ready_nodes(cluster) == [f"{NAME}-control-plane", f"{NAME}-worker", f"{NAME}-worker2"]

    second = cli("up", "--backend", "local")
    assert "already running; nothing to start" in second.stdout
    assert "starting the control plane" not in second.stderr
    assert cluster.processes() == pids

    down = cli("down")
    assert "is gone (5 processes stopped)" in down.stdout
    assert not any(process_alive(pid) for pid in pids.values())
    assert not cluster.kwok_dir.exists()
    assert not cluster.home.cluster_dir(NAME).exists()


def test_broken_cluster_is_detected_and_replaced(cluster: LocalCluster) -> None:
    cli("up", "--backend", "local")
    old = cluster.processes()
    os.kill(old["kube-apiserver"], signal.SIGKILL)

    again = cli("up")  # auto: the recorded backend is local
    assert "found a broken cluster" in again.stdout
    assert "kube-apiserver not running" in again.stdout
    new = cluster.processes()
    assert set(new) == COMPONENTS
    assert not any(process_alive(pid) for pid in old.values()), "old processes left running"
    assert len(ready_nodes(cluster)) == 3
