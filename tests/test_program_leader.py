"""Leader election between real controller processes, on the real cluster.

Two ``python -m helpers.program --leader-elect`` processes share one Lease. The
tests check what leader election promises: exactly one leads; when the leader
is killed (SIGKILL) the other takes over after the lease runs out; when it is
stopped (SIGTERM) it releases the Lease and the other takes over at its next
try; an API server restart is survived, or the leader exits and a restarted
process carries on; and, from the processes' own logs, never two leaders at once.

Two tests use client-go's default durations (15 s lease, 10 s renew deadline,
2 s retry) and print the failover times they measure; the API server drills use
other durations, chosen for what each drill must show.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator

import kubernetes
import pytest

from helpers.cluster.info import describe
from helpers.cluster.local import LocalCluster
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.faults import control_plane
from helpers.leaderelection import JITTER_FACTOR, LEASE_DURATION, RETRY_PERIOD
from helpers.program import SHUTDOWN_TIMEOUT
from helpers.waiting import wait_for
from tests.program_harness import (
    ControllerRun,
    assert_never_two_leaders,
    first_to_log,
    program_args,
)

pytestmark = pytest.mark.cluster

STARTED = r"started leading .* \(monotonic ([\d.]+)\)"
WORST_RETRY = RETRY_PERIOD * (1 + JITTER_FACTOR)
"""The longest a candidate waits between two tries (client-go's jittered retry)."""


@pytest.fixture
def runs() -> Iterator[list[ControllerRun]]:
    """The processes a test starts, all stopped (SIGKILL if need be) at the end."""
    started: list[ControllerRun] = []
    yield started
    for run in started:
        run.stop()


def start_pair(namespace: str, runs: list[ControllerRun], **kwargs) -> list[ControllerRun]:
    condition = threading.Condition()  # one for both: wait for whichever logs first
    for name in ("a", "b"):
        runs.append(
            ControllerRun(
                program_args(namespace, identity=name, **kwargs), name=name, condition=condition
            )
        )
    return runs


def lease_holder(api: kubernetes.client.ApiClient, namespace: str) -> tuple[str, int]:
    lease = kubernetes.client.CoordinationV1Api(api).read_namespaced_lease(
        "foo-controller", namespace
    )
    return lease.spec.holder_identity or "", lease.spec.lease_transitions or 0


def assert_controller_works(api: kubernetes.client.ApiClient, namespace: str, name: str) -> None:
    """A new Foo gets its Deployment: some process is leading and its workers run."""
    kubernetes.client.CustomObjectsApi(api).create_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body(name, name, 1)
    )
    wait_for(
        kubernetes.client.AppsV1Api(api).list_namespaced_deployment,
        lambda deployments: name in deployments,
        what=f"Deployment {name}",
        timeout=30,
        namespace=namespace,
    )


def test_one_leader_and_sigkill_failover_with_default_durations(
    api: kubernetes.client.ApiClient, namespace: str, runs: list[ControllerRun]
) -> None:
    a, b = start_pair(namespace, runs)
    leader = first_to_log(runs, "started leading", 30)
    standby = b if leader is a else a
    standby.wait_for_line(rf"new leader: {leader.name}$", 30)
    assert lease_holder(api, namespace) == (leader.name, 0)
    assert_controller_works(api, namespace, "before-kill")
    assert not standby.has_line("started leading"), "two leaders"

    killed_at = leader.signal(signal.SIGKILL)
    assert leader.wait(10) == -signal.SIGKILL
    took_over = float(standby.wait_for_line(STARTED, 2 * LEASE_DURATION).group(1))
    failover = took_over - killed_at
    print(f"\nSIGKILL failover with default durations: {failover:.1f} s")
    # The standby saw the last renewal at most one jittered retry after it happened (and the
    # leader renewed at most one retry period before the kill); it takes over at its first
    # try after LeaseDuration without a change.
    # That is the lower bound, which the mechanism guarantees. The upper one only says it did
    # take over after about one lease: its tries and requests get a busy machine's slack.
    assert LEASE_DURATION - RETRY_PERIOD - 1 <= failover < 2 * LEASE_DURATION
    assert lease_holder(api, namespace) == (standby.name, 1)
    assert_never_two_leaders(runs)
    assert_controller_works(api, namespace, "after-kill")


def test_sigterm_hands_over_at_once_with_default_durations(
    api: kubernetes.client.ApiClient, namespace: str, runs: list[ControllerRun]
) -> None:
    a, b = start_pair(namespace, runs)
    leader = first_to_log(runs, "started leading", 30)
    standby = b if leader is a else a
    standby.wait_for_line(rf"new leader: {leader.name}$", 30)

    term_at = leader.signal(signal.SIGTERM)
    assert leader.wait(30) == 0
    exited_in = time.monotonic() - term_at
    assert leader.has_line("released lease")
    took_over = float(standby.wait_for_line(STARTED, LEASE_DURATION).group(1))
    handover = took_over - term_at
    print(f"\nSIGTERM: exit in {exited_in:.1f} s, handover in {handover:.1f} s")
    # Nothing in flight: the workers stop at once, not after --shutdown-timeout (20 s). The
    # standby takes over at its next try (at most WORST_RETRY, 2.4 s, plus two requests), not
    # after a whole lease (15 s). Half of each tells them apart with room for a busy machine.
    assert exited_in < SHUTDOWN_TIMEOUT / 2
    assert handover < LEASE_DURATION / 2
    assert lease_holder(api, namespace) == (standby.name, 1)
    assert_never_two_leaders(runs)
    assert_controller_works(api, namespace, "after-handover")


# --- the API server goes away ----------------------------------------------------------------


def restart_api_server(
    cluster: LocalCluster, while_down: Callable[[], None] = lambda: None
) -> None:
    """Stop kube-apiserver as a kubelet would (SIGTERM), run ``while_down``, start it again."""
    control_plane.restart_api_server(cluster, while_down, graceful=True)


def local_cluster() -> LocalCluster:
    if describe().backend != "local":
        pytest.skip("stopping the API server needs the local control plane")
    return control_plane.local_cluster()


def test_leader_survives_a_short_api_server_restart(
    api: kubernetes.client.ApiClient, namespace: str, runs: list[ControllerRun]
) -> None:
    """Back within the renew deadline: the leader renews again and nothing changes hands."""
    cluster = local_cluster()
    # A renew deadline longer than a restart takes here (a few seconds), with margin.
    a, b = start_pair(namespace, runs, durations=(45, 30, 2))
    leader = first_to_log(runs, "started leading", 30)
    standby = b if leader is a else a
    standby.wait_for_line(rf"new leader: {leader.name}$", 30)

    restart_api_server(cluster)
    assert_controller_works(api, namespace, "after-restart")
    assert leader.process.poll() is None and standby.process.poll() is None
    assert not leader.has_line("stopped leading")
    assert lease_holder(api, namespace) == (leader.name, 0)
    assert_never_two_leaders(runs)


def test_leader_that_cannot_renew_exits_and_a_restarted_process_carries_on(
    api: kubernetes.client.ApiClient, namespace: str, runs: list[ControllerRun]
) -> None:
    """Down longer than the renew deadline: the leader stops leading and exits 1 (nobody
    else could have taken over yet); we restart it, as a Deployment would, and after the
    API server is back exactly one process leads and the Foos are synced again."""
    cluster = local_cluster()
    durations = (6, 4, 1)  # lease, renew deadline, retry: a quick loss for this drill
    a, b = start_pair(namespace, runs, durations=durations)
    leader = first_to_log(runs, "started leading", 30)
    standby = b if leader is a else a
    standby.wait_for_line(rf"new leader: {leader.name}$", 30)

    def leader_gives_up() -> None:
        leader.wait_for_line("leader election lost", 30)  # shows the log if it never comes
        assert leader.wait(30) == 1  # lost the lease: exit code 1

    restart_api_server(cluster, leader_gives_up)
    again = ControllerRun(
        program_args(namespace, identity=leader.name, durations=durations),
        name=f"{leader.name}-restarted",
        condition=standby.changed,
    )
    runs.append(again)
    new_leader = first_to_log([standby, again], "started leading", 60)
    assert_controller_works(api, namespace, "after-outage")
    assert lease_holder(api, namespace)[0] == new_leader.name.removesuffix("-restarted")
    timeline = assert_never_two_leaders(runs)
    assert len(timeline) == 2, timeline
