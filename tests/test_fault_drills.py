"""The failure drills restart the API server wherever the previous drill was run from.

``make test`` ran drills from the pytest process (tests/) and then from a
notebook's kernel (chapter 09's restart drill; since issue 36 chapter 09b makes
its 410 with an expired watch instead, and no chapter restarts the API server,
but a learner's kernel still may). The API server the first drill started again is
a child of the pytest process; when a kernel kills it, it stays a zombie until
pytest reaps it, which pytest does not do while it waits for the kernel. A drill
that waited for the process number to vanish waited in vain, gave up, and left
the cluster without an API server for every cell after it.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import kubernetes
import pytest
import yaml

from helpers import kube
from helpers.cluster.identity import identity_of
from helpers.cluster.info import describe
from helpers.cluster.local import LocalCluster
from helpers.cluster.paths import CourseHome
from helpers.errors import CourseError
from helpers.faults.control_plane import (
    API_SERVER,
    STARTS,
    kill_component,
    local_cluster,
    restart_api_server,
    revive_after_outage,
    wait_until_api_ready,
)
from tests.test_course_cluster_only import CA_PEM

pytestmark = pytest.mark.cluster

DRILL = (
    "from helpers.faults.control_plane import local_cluster, restart_api_server\n"
    "restart_api_server(local_cluster())"
)


def test_a_drill_in_another_process_restarts_an_api_server_we_started(
    api: kubernetes.client.ApiClient,
) -> None:
    if describe().backend != "local":
        pytest.skip("the drills stop and start the local control plane's API server")
    cluster = local_cluster()
    restart_api_server(cluster)  # the API server is now this process's child
    ours = cluster.running()["kube-apiserver"]
    started = time.monotonic()
    drill = subprocess.run(
        [sys.executable, "-c", DRILL], env=os.environ, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    took = time.monotonic() - started
    assert drill.returncode == 0, f"the second drill failed after {took:.0f} s:\n{drill.stderr}"
    assert cluster.running()["kube-apiserver"] != ours
    assert kube.raw_get(api, "/readyz") == "ok"


def test_an_api_server_that_exits_after_starting_is_started_again(
    api: kubernetes.client.ApiClient,
) -> None:
    """As a kubelet restarts a static Pod: the drill waits for /readyz, not for one process.

    CI saw a drill wait 120 s on refused connections after starting the API server
    again; whatever made that process exit, the drill now starts it again.
    """
    if describe().backend != "local":
        pytest.skip("the drills stop and start the local control plane's API server")
    cluster = local_cluster()
    kill_component(cluster, API_SERVER)
    cluster.start_component(API_SERVER)
    kill_component(cluster, API_SERVER)  # it exits before it was ever ready
    try:
        wait_until_api_ready(cluster, timeout=90)
    finally:
        cluster.revive()  # whatever happened: the API server above all
    revive_after_outage(cluster, since=datetime.now(UTC))  # and what gives up after it
    assert API_SERVER not in cluster.dead_components()
    assert kube.raw_get(api, "/readyz") == "ok"


SCHEDULER = "kube-scheduler"


def frozen_scheduler(cluster: LocalCluster) -> tuple[int, datetime]:
    """Freeze kube-scheduler (SIGSTOP): alive, and renewing nothing after the time returned."""
    pid = cluster.running()[SCHEDULER]
    os.kill(pid, signal.SIGSTOP)
    return pid, datetime.now(UTC)  # taken after the freeze: a renewal is stamped by its sender


def end_frozen(cluster: LocalCluster, pid: int) -> None:
    """Kill the frozen scheduler if it still runs, and start kube-scheduler again if it is dead."""
    if cluster.running().get(SCHEDULER) == pid:
        kill_component(cluster, SCHEDULER)  # SIGKILL ends a frozen process too
    cluster.revive()


def test_a_lease_holder_that_gives_up_after_the_api_server_is_back_is_started_again() -> None:
    """CI saw kube-scheduler exit 3 s after a drill started the API server again, once the
    drill had revived what was dead: every Deployment after it kept its Pods Pending.

    Here kube-scheduler cannot renew its lease (frozen) and is killed 2 s into the
    recovery, as it would exit at its renew deadline: the recovery waits for that
    exit and starts it again. Reviving at once would find it alive and start nothing.
    """
    if describe().backend != "local":
        pytest.skip("the drills stop and start the local control plane's components")
    cluster = local_cluster()
    pid, since = frozen_scheduler(cluster)
    exits = threading.Timer(2.0, os.kill, (pid, signal.SIGKILL))
    exits.start()
    try:
        revived = revive_after_outage(cluster, since)
    finally:
        exits.join()
        end_frozen(cluster, pid)
    assert revived == [SCHEDULER]
    assert cluster.running()[SCHEDULER] != pid


def test_a_lease_holder_that_neither_renews_nor_exits_is_named() -> None:
    if describe().backend != "local":
        pytest.skip("the drills stop and start the local control plane's components")
    cluster = local_cluster()
    pid, since = frozen_scheduler(cluster)
    try:
        with pytest.raises(CourseError) as failed:
            revive_after_outage(cluster, since, timeout=3)
    finally:
        end_frozen(cluster, pid)
    assert str(failed.value).startswith(
        "kube-scheduler neither renewed its leader lease nor exited within 3 s"
    ), str(failed.value)
    assert "python -m helpers.cluster logs --component kube-scheduler" in str(failed.value)


class ExitsEveryTime(LocalCluster):
    """A cluster whose API server exits whenever it is started (its log says why)."""

    starts = 0

    def dead_components(self) -> list[str]:
        return [API_SERVER]

    def start_component(self, component: str) -> int:
        self.starts += 1
        return 0


def test_an_api_server_that_keeps_exiting_is_reported_with_its_log(tmp_path: Path) -> None:
    cluster = ExitsEveryTime(CourseHome(tmp_path), "drill")
    logs = cluster.kwok_dir / "logs"
    logs.mkdir(parents=True)
    (logs / f"{API_SERVER}.log").write_text("I starting\nE1204 failed to listen: address in use\n")
    started = time.monotonic()
    with pytest.raises(CourseError) as failed:
        wait_until_api_ready(cluster, timeout=60)
    assert time.monotonic() - started < 30, "it gives up once the process keeps exiting"
    assert cluster.starts == STARTS - 1  # the drill's own start, then two more
    assert f"it exited {STARTS} times" in str(failed.value)
    assert "failed to listen: address in use" in str(failed.value)


def recorded_cluster(
    root: Path, name: str, context: str, server: str = "https://127.0.0.1:6443"
) -> Path:
    """``<root>/clusters/<name>/kubeconfig`` and state.json as ``up --backend local`` writes them,
    the cluster's identity (server and CA) included."""
    folder = root / "clusters" / name
    folder.mkdir(parents=True)
    kubeconfig = folder / "kubeconfig"
    ca = base64.b64encode(CA_PEM.encode()).decode()
    kubeconfig.write_text(yaml.safe_dump({
        "current-context": context,
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": server,
                                               "certificate-authority-data": ca}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))  # fmt: skip
    _, identity = identity_of(kubeconfig, context)
    state = {"backend": "local", "context": context, "server": identity.server,
             "ca_sha256": identity.ca_sha256}  # fmt: skip
    (folder / "state.json").write_text(json.dumps(state))
    return kubeconfig


@pytest.mark.parametrize("context", ["kwok-x", "my-laptop"])
def test_a_drill_acts_on_the_home_of_the_cluster_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, context: str
) -> None:
    """Nothing is stopped here: which processes a drill would stop is chosen from files alone.

    The kubeconfig names a cluster 'x' of course home A; CFS_HOME names home B, which has a
    cluster 'x' of its own. The drill must stop A's API server, whatever CFS_HOME says or the
    context is called."""
    given = recorded_cluster(tmp_path / "a", "x", context)
    recorded_cluster(tmp_path / "b", "x", "kwok-x")
    monkeypatch.setenv("CFS_HOME", str(tmp_path / "b"))
    monkeypatch.setenv("KUBECONFIG", str(given))
    cluster = local_cluster()
    assert (cluster.home.root, cluster.name) == ((tmp_path / "a").resolve(), "x")
    assert cluster.kwok_dir == (tmp_path / "a").resolve() / "kwok" / "clusters" / "x"


def test_a_kubeconfig_up_did_not_write_is_matched_by_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of the kubeconfig (say, merged into ~/.kube/config) has no record beside it: the
    drill acts on CFS_HOME's cluster only if that one has the same server and CA."""
    recorded = recorded_cluster(tmp_path / "home", "course", "kwok-course")
    copy = tmp_path / "elsewhere" / "config"
    copy.parent.mkdir()
    copy.write_text(recorded.read_text())
    monkeypatch.setenv("CFS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(copy))
    cluster = local_cluster()
    assert (cluster.home.root, cluster.name) == ((tmp_path / "home").resolve(), "course")
    monkeypatch.setenv("CFS_HOME", str(tmp_path / "another-home"))
    recorded_cluster(tmp_path / "another-home", "course", "kwok-course", "https://10.0.0.9:6443")
    with pytest.raises(CourseError, match="no course home records it"):
        local_cluster()
