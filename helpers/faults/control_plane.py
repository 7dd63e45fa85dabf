"""Breaking the local control plane on purpose, for failure drills.

The drills SIGKILL the API server (or another component) and start it again
with the command line kwokctl gave it, as a kubelet restarts a static Pod.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException

from helpers import kube
from helpers.cluster.identity import created_clusters, identity_of
from helpers.cluster.info import ClusterInfo, _course_record, describe
from helpers.cluster.local import LocalCluster, tail
from helpers.cluster.paths import CourseHome
from helpers.errors import CourseError


def local_cluster(
    kubeconfig: kube.KubeconfigArg = None, context: str | None = None
) -> LocalCluster:
    """The course's cluster, which must be the local control plane (kind has no such knobs).

    The one ``kubeconfig`` and ``context`` point at (default: as :func:`helpers.kube.connect`
    finds them), in the course home that started it (:func:`course_home_of`): its processes
    are the ones a drill stops.
    """
    info = describe(kubeconfig, context)
    if info.backend != "local":
        raise CourseError(
            f"This drill stops and starts the API server, which only the local control plane "
            f"lets the course do (this cluster is {info.backend}).",
            "run it on the course's local control plane (`make up` on a machine without Docker).",
        )
    return LocalCluster(*course_home_of(info))


def course_home_of(info: ClusterInfo) -> tuple[CourseHome, str]:
    """The course home that started the cluster ``info`` describes, and the cluster's name there.

    Read from files only. ``up`` writes the kubeconfig into ``<home>/clusters/<name>/``
    beside its record: that home, whatever ``CFS_HOME`` says and whatever the context is
    called. A kubeconfig written elsewhere (a copy, a merged ``~/.kube/config``) names
    ``CFS_HOME``'s cluster only if that one has the same server and CA; else a CourseError:
    a drill must not stop another cluster's API server.
    """
    record = _course_record(info.kubeconfig, info.context)
    if record is not None:
        _, home, name = record
        return home, name
    home = CourseHome.from_environment()
    _, identity = identity_of(info.kubeconfig, info.context)
    for name, created in created_clusters(home).items():
        if created == identity:
            return home, name
    raise CourseError(
        f"Context '{info.context}' ({info.server}) is in {info.kubeconfig}, which `up` did not "
        f"write, and no course home records it: not {home.root} (CFS_HOME or the default), so "
        "the drill cannot tell which processes are its API server's.",
        "point KUBECONFIG at the kubeconfig `up` wrote (`python -m helpers.cluster kubeconfig` "
        "prints it), or set CFS_HOME to the course folder that started this cluster.",
    )


API_SERVER = "kube-apiserver"
STARTS = 3
"""How often a drill starts the API server before it gives up: a kubelet restarts a static Pod
that exits, and so does a drill, twice at most (then the log says why it keeps exiting)."""
LOG_LINES_IN_ERRORS = 12
LEASE_HOLDERS = ("kube-controller-manager", "kube-scheduler")
"""The components that lead through a Lease of their own name in kube-system. Each renews it
every 2 s and exits once it could not for 10 s (``--leader-elect-retry-period`` and
``--leader-elect-renew-deadline``: component-base's defaults)."""
SETTLE_TIMEOUT = 30.0
"""How long :func:`revive_after_outage` waits for the lease holders to renew or exit (they
decide within 12 s of their last renewal)."""


def wait_until_api_ready(cluster: LocalCluster, timeout: float = 120) -> None:
    """Ask /readyz until it says ok: a starting process announces nothing we could wait on.

    /version answers before every path is installed (a Foo created then gets 503);
    /readyz waits for the post-start hooks, CRDs included. An API server that exits
    while we wait is started again, as a kubelet restarts a static Pod, at most
    :data:`STARTS` times in all; the error then quotes its log, and what /readyz
    last answered, so a failed drill says why.
    """
    deadline = time.monotonic() + timeout
    starts, last = 1, "nothing yet"
    while True:
        try:
            answer = kube.raw_get(kube.connect(cluster.kubeconfig, probe_timeout=2), "/readyz")
            if answer == "ok":
                return
            last = f"/readyz answered {answer[:200]!r}"
        except (CourseError, ApiException, urllib3.exceptions.HTTPError) as exc:
            last = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        if API_SERVER in cluster.dead_components():
            if starts >= STARTS:
                raise _not_ready(cluster, f"it exited {starts} times after starting")
            cluster.start_component(API_SERVER)
            starts += 1
        if time.monotonic() >= deadline:
            raise _not_ready(cluster, f"within {timeout:.0f} s; last: {last}")
        time.sleep(0.25)


def _not_ready(cluster: LocalCluster, why: str) -> CourseError:
    log = cluster.log_file(API_SERVER)
    lines = tail(log, LOG_LINES_IN_ERRORS) if log.exists() else ["(no log)"]
    return CourseError(
        f"The API server was not ready after starting again ({why}). The end of its log:\n  "
        + "\n  ".join(line[:300] for line in lines),
        f"read the whole log: `python -m helpers.cluster logs --component {API_SERVER}`.",
    )


def kill_component(cluster: LocalCluster, component: str) -> None:
    """SIGKILL ``component`` and return once it has exited (its port is free again).

    A signal is delivered asynchronously: a new API server started at once can
    find the old one still holding its port, fail to bind, and exit. "Exited"
    includes a zombie: a component restarted by another process (the test run
    that ran an earlier drill) stays a zombie until that parent reaps it, with
    its sockets already closed, so waiting for the number to vanish would wait
    in vain.
    """
    cluster.stop_component(component, grace=0)


def restart_api_server(
    cluster: LocalCluster, while_down: Callable[[], None] = lambda: None, *, graceful: bool = False
) -> None:
    """Kill kube-apiserver (SIGKILL; ``graceful``: SIGTERM and wait), run ``while_down``, start
    it again, wait for /readyz, and revive what gave up meanwhile."""
    if graceful:
        cluster.stop_component(API_SERVER)
    else:
        kill_component(cluster, API_SERVER)
    try:
        while_down()
    finally:
        cluster.start_component(API_SERVER)
        wait_until_api_ready(cluster)
        revive_after_outage(cluster, since=datetime.now(UTC))


def revive_after_outage(
    cluster: LocalCluster, since: datetime, timeout: float = SETTLE_TIMEOUT
) -> list[str]:
    """Start again what gave up while the API server was away, as a kubelet would; return it.

    ``since``: when the API server answered again. A lease holder that has not
    renewed its lease since then has not decided yet: it renews within 2 s, or
    exits at its renew deadline, which can come seconds after /readyz said ok.
    Reviving at once would miss that exit and leave the cluster without a
    scheduler for good (CI saw kube-scheduler exit 3 s after a drill started
    the API server again, and every Deployment after it kept its Pods
    Pending). So this first waits until each of :data:`LEASE_HOLDERS` has
    renewed after ``since`` or exited, then starts every dead component.
    """
    deadline = time.monotonic() + timeout
    leases = kubernetes.client.CoordinationV1Api(kube.connect(cluster.kubeconfig))
    undecided = list(LEASE_HOLDERS)
    while True:
        dead = cluster.dead_components()
        undecided = [
            name for name in undecided if name not in dead and not _renewed(leases, name, since)
        ]
        if not undecided:
            return cluster.revive()
        if time.monotonic() >= deadline:
            raise CourseError(
                f"{', '.join(undecided)} neither renewed its leader lease nor exited within "
                f"{timeout:.0f} s after the API server came back.",
                "look at its log: `python -m helpers.cluster logs --component "
                f"{undecided[0]}`, then `make up` starts what is missing.",
            )
        time.sleep(0.25)  # a lease renewal and a process exit announce themselves to nobody


def _renewed(leases: kubernetes.client.CoordinationV1Api, name: str, since: datetime) -> bool:
    """Has ``name`` renewed its lease in kube-system after ``since``? (No such lease: nothing
    to wait for; no answer: not yet.)"""
    try:
        lease = leases.read_namespaced_lease(name, "kube-system", _request_timeout=5)
    except ApiException as exc:
        return exc.status == 404
    except urllib3.exceptions.HTTPError:
        return False
    renewed = lease.spec.renew_time if lease.spec else None
    return renewed is not None and renewed >= since
