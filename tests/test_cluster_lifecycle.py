"""``up`` is idempotent and revives before it replaces; ``down`` stops everything, needing nothing.

These start local clusters of their own through the real command line, in a
course folder under the test's tmp_path that shares the built binaries (see
the ``course_home`` fixture), so the cluster the rest of the suite uses is
never touched. A cluster starts in about 5 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import psutil
import pytest

from helpers import kube
from helpers.cluster import processes
from helpers.cluster.backends import recorded_backend
from helpers.cluster.local import LocalCluster
from helpers.home import CourseHome
from tests.leftovers import strays

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


def running(pid: int) -> bool:
    """A process runs as ``pid`` (a zombie, dead and not yet collected by its parent, does not)."""
    return processes.identify(pid) is not None


def cli(
    home: CourseHome, *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "helpers.cluster", *args, "--name", NAME],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=600,
        env={**(env or os.environ), "CFS_HOME": str(home.root)},
    )  # fmt: skip
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture
def cluster(course_home: CourseHome) -> Iterator[LocalCluster]:
    local = LocalCluster(course_home, NAME)
    yield local
    cli(course_home, "down")
    assert not strays(course_home), "processes left running after down"


def ready_nodes(local: LocalCluster) -> list[str]:
    api = kube.connect(local.kubeconfig)
    nodes = kubernetes.client.CoreV1Api(api).list_node().items
    return sorted(
        node.metadata.name
        for node in nodes
        if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
    )


def test_up_twice_is_idempotent_and_down_stops_everything(cluster: LocalCluster) -> None:
    home = cluster.home
    first = cli(home, "up", "--backend", "local")
    assert "starting the control plane" in first.stderr
    pids = cluster.running()
    assert set(pids) == COMPONENTS
    assert ready_nodes(cluster) == [f"{NAME}-control-plane", f"{NAME}-worker", f"{NAME}-worker2"]

    second = cli(home, "up", "--backend", "local")
    assert "already running; nothing to start" in second.stdout
    assert "starting the control plane" not in second.stderr
    assert cluster.running() == pids

    down = cli(home, "down")
    assert "is gone (5 processes stopped)" in down.stdout
    assert not any(running(pid) for pid in pids.values())
    assert not strays(home)
    assert not cluster.kwok_dir.exists()
    assert not home.cluster_dir(NAME).exists()


def test_down_needs_neither_go_nor_the_built_binaries(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """After a Go upgrade or a wiped cache, `make down` must not build anything first."""
    home = cluster.home
    cli(home, "up", "--backend", "local")
    pids = cluster.processes()
    shared_cache = home.bin_cache.resolve()
    home.bin_cache.unlink()
    home.bin_cache.mkdir()  # an empty cache: nothing built
    only_python = tmp_path / "path"
    only_python.mkdir()
    (only_python / "python3").symlink_to(sys.executable)
    try:
        down = cli(home, "down", env={**os.environ, "PATH": str(only_python)}, check=False)
    finally:
        home.bin_cache.rmdir()
        home.bin_cache.symlink_to(shared_cache)
    assert down.returncode == 0, down.stdout + down.stderr
    assert "building" not in down.stderr
    assert "is gone (5 processes stopped)" in down.stdout
    assert not any(running(pid) for pid in pids.values())
    assert not strays(home)
    assert not cluster.kwok_dir.exists()


def test_readyz_sees_a_frozen_etcd_that_version_does_not(cluster: LocalCluster) -> None:
    cli(cluster.home, "up", "--backend", "local")
    etcd = psutil.Process(cluster.processes()["etcd"])
    etcd.suspend()  # SIGSTOP: alive, and answering nobody
    try:
        kube.connect(cluster.kubeconfig)  # /version still answers
        # The API server probes etcd in the background and /readyz reports the last
        # probe, so the first answer after the freeze may still be "ok"; a probe times
        # out within seconds. Nothing announces it: ask again until then.
        deadline = time.monotonic() + 30
        while (problem := cluster.health_problem()) is None and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        etcd.resume()
    assert problem is not None, "a cluster whose etcd is frozen was called healthy for 30 s"
    assert "not ready" in problem
    assert "etcd" in problem


def test_components_that_died_are_revived_and_the_learners_work_kept(
    cluster: LocalCluster,
) -> None:
    """A laptop that slept: kube-controller-manager and kube-scheduler gave up their leases."""
    home = cluster.home
    cli(home, "up", "--backend", "local")
    core = kubernetes.client.CoreV1Api(kube.connect(cluster.kubeconfig))
    core.create_namespaced_config_map("default", {"metadata": {"name": "learners-work"}})
    before = cluster.processes()
    for component in ("kube-controller-manager", "kube-scheduler"):
        os.kill(before[component], signal.SIGKILL)
        psutil.Process(before[component]).wait(10)

    again = cli(home, "up")

    assert "started kube-controller-manager, kube-scheduler again" in again.stdout
    assert "deleting" not in again.stdout
    assert "already running" in again.stdout
    after = cluster.processes()
    assert set(after) == COMPONENTS
    assert all(running(pid) for pid in after.values())
    for component in ("etcd", "kube-apiserver", "kwok-controller"):
        assert after[component] == before[component], f"{component} was restarted"
    core = kubernetes.client.CoreV1Api(kube.connect(cluster.kubeconfig))
    assert core.read_namespaced_config_map("learners-work", "default").metadata.name


def test_a_cluster_reviving_cannot_fix_is_replaced_and_says_what_is_lost(
    cluster: LocalCluster,
) -> None:
    home = cluster.home
    cli(home, "up", "--backend", "local")
    old = cluster.processes()
    os.kill(old["kube-apiserver"], signal.SIGKILL)
    psutil.Process(old["kube-apiserver"]).wait(10)
    (cluster.kwok_dir / "bin" / "kube-apiserver").unlink()  # nothing left to start it from

    again = cli(home, "up")  # auto: the recorded backend is local

    assert "kube-apiserver not running" in again.stdout
    assert "restarting its components did not help" in again.stdout
    assert "what was created in it is lost" in again.stdout
    new = cluster.processes()
    assert set(new) == COMPONENTS
    assert not any(running(pid) for pid in old.values()), "old processes left running"
    assert len(ready_nodes(cluster)) == 3


def test_a_corrupt_state_file_does_not_hide_a_running_cluster(cluster: LocalCluster) -> None:
    home = cluster.home
    cli(home, "up", "--backend", "local")
    pids = cluster.processes()
    home.state_file(NAME).write_text("{}")  # say, an editor saved an empty object

    down = cli(home, "down")

    assert "nothing to stop" not in down.stdout
    assert "is gone (5 processes stopped)" in down.stdout
    assert not any(running(pid) for pid in pids.values())
    assert not strays(home)


@pytest.mark.parametrize("garbage", ['{"backend": "lo', "null", "[]", "{}", '{"backend": 7}'])
def test_a_corrupt_state_file_falls_back_to_kwokctls_folder(
    course_home: CourseHome, garbage: str
) -> None:
    course_home.cluster_dir(NAME).mkdir(parents=True)
    course_home.state_file(NAME).write_text(garbage)
    (course_home.kwok_workdir / "clusters" / NAME).mkdir(parents=True)

    assert recorded_backend(course_home, NAME) == "local"


def test_two_clusters_started_at_once_each_get_their_own_ports_and_etcd(
    course_home: CourseHome, tmp_path: Path
) -> None:
    """kwokctl picks free ports; two creates at once used to pick the same ones, and one
    API server silently stored its objects in the other cluster's etcd."""
    other = CourseHome(tmp_path / "other-home")
    other.root.mkdir()
    if course_home.bin_cache.is_symlink():
        other.bin_cache.symlink_to(course_home.bin_cache.resolve())
    homes = [course_home, other]
    results: dict[int, subprocess.CompletedProcess[str]] = {}

    def up(index: int) -> None:
        results[index] = cli(homes[index], "up", check=False)

    starters = [threading.Thread(target=up, args=(i,), name=f"up-{i}") for i in (0, 1)]
    try:
        for thread in starters:
            thread.start()
        for thread in starters:
            thread.join(600)
        for index, result in sorted(results.items()):
            assert result.returncode == 0, f"cluster {index}: {result.stdout}{result.stderr}"
        apis = [kube.connect(LocalCluster(home, NAME).kubeconfig) for home in homes]
        cores = [kubernetes.client.CoreV1Api(api) for api in apis]
        cores[0].create_namespace({"metadata": {"name": "only-in-the-first"}})
        names = {ns.metadata.name for ns in cores[1].list_namespace().items}
        assert "only-in-the-first" not in names, "the two clusters share one etcd"
        assert all(len(ready_nodes(LocalCluster(home, NAME))) == 3 for home in homes)
    finally:
        for home in homes:
            cli(home, "down", check=False)
        assert not strays(course_home) and not strays(other)
