"""The failure drills restart the API server wherever the previous drill was run from.

``make test`` runs drills from the pytest process (tests/) and then from a
notebook's kernel (chapter 09). The API server the first drill started again is
a child of the pytest process; when a kernel kills it, it stays a zombie until
pytest reaps it, which pytest does not do while it waits for the kernel. A drill
that waited for the process number to vanish waited in vain, gave up, and left
the cluster without an API server for every cell after it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import kubernetes
import pytest

from helpers import kube
from helpers.cluster.info import describe
from helpers.faults.control_plane import local_cluster, restart_api_server

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
