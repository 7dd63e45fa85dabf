"""Breaking the local control plane on purpose, for the drills in tests/.

The drills SIGKILL the API server (or another component) and start it again
with the command line kwokctl gave it, as a kubelet restarts a static Pod.
"""

from __future__ import annotations

import time

import urllib3
from kubernetes.client.exceptions import ApiException

from helpers import kube
from helpers.cluster.info import describe
from helpers.cluster.local import LocalCluster
from helpers.cluster.paths import CourseHome
from helpers.errors import CourseError


def local_cluster() -> LocalCluster:
    """The course's cluster, which must be the local control plane (kind has no such knobs)."""
    info = describe()
    assert info.backend == "local", "these drills need the local control plane"
    return LocalCluster(CourseHome.from_environment(), info.context.removeprefix("kwok-"))


def wait_until_api_ready(cluster: LocalCluster, timeout: float = 120) -> None:
    """Ask /readyz until it says ok: a starting process announces nothing we could wait on.

    /version answers before every path is installed (a Foo created then gets 503);
    /readyz waits for the post-start hooks, CRDs included.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if kube.raw_get(kube.connect(cluster.kubeconfig, probe_timeout=2), "/readyz") == "ok":
                return
        except (CourseError, ApiException, urllib3.exceptions.HTTPError):
            pass
        assert time.monotonic() < deadline, f"the API server was not ready within {timeout:.0f} s"
        time.sleep(0.25)
