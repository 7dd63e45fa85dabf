"""Leader election against the real API server, in this process (electors on threads).

tests/test_leaderelection.py checks the elector's logic on a fake clock and an in-memory
Lease; these tests check what only the API server can: a stale resourceVersion really gets
409 Conflict, a Lease is really created, renewed and released, and a holder's timestamps
(written by another machine's clock) are really not trusted. A 10 s lease with an 8 s renew
deadline keeps a holder leading on a loaded machine (a renewal may take seconds there); the
0.5 s retry keeps the tests short. Their time bounds separate what the mechanism does from
what a broken one would (a retry against a whole lease), with room for a busy machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers.clock import StopEvent
from helpers.leaderelection import (
    RELEASED_LEASE_SECONDS,
    LeaderCallbacks,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    micro_time,
)
from helpers.waiting import wait_for

pytestmark = pytest.mark.cluster

LEASE, RENEW, RETRY = 10.0, 8.0, 0.5


class Recorder:
    """What each elector's callbacks said, with the monotonic time; waits on a Condition."""

    def __init__(self) -> None:
        self.events: list[tuple[float, str, str]] = []
        self.changed = threading.Condition()

    def callbacks(self, who: str) -> LeaderCallbacks:
        return LeaderCallbacks(
            on_started_leading=lambda _leading: self._note(who, "started"),
            on_stopped_leading=lambda: self._note(who, "stopped"),
            on_new_leader=lambda holder: self._note(who, f"new leader {holder!r}"),
        )

    def _note(self, who: str, what: str) -> None:
        with self.changed:
            self.events.append((time.monotonic(), who, what))
            self.changed.notify_all()

    def when(self, who: str, what: str) -> float | None:
        return next((t for t, w, e in self.events if (w, e) == (who, what)), None)

    def wait_for(self, who: str, what: str, timeout: float = 30) -> float:
        with self.changed:
            assert self.changed.wait_for(lambda: self.when(who, what) is not None, timeout), (
                f"{who} never reported {what!r}: {self.events}"
            )
            return self.when(who, what)  # type: ignore[return-value]


@pytest.fixture
def electors() -> Iterator[list[tuple[threading.Thread, StopEvent]]]:
    started: list[tuple[threading.Thread, StopEvent]] = []
    yield started
    for _, stop in started:
        stop.set()
    for thread, _ in started:
        thread.join(30)
        assert not thread.is_alive()


def start(
    api: kubernetes.client.ApiClient,
    namespace: str,
    who: str,
    recorder: Recorder,
    electors: list[tuple[threading.Thread, StopEvent]],
) -> tuple[LeaderElector, StopEvent]:
    lock = LeaseLock.on_cluster(api, namespace, "elected", who)
    elector = LeaderElector(
        lock,
        recorder.callbacks(who),
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
        release_on_cancel=True,
    )
    stop = StopEvent()
    thread = threading.Thread(target=elector.run, args=(stop,), name=f"elector-{who}")
    electors.append((thread, stop))
    thread.start()
    return elector, stop


def read_lease(api: kubernetes.client.ApiClient, namespace: str) -> kubernetes.client.V1Lease:
    return kubernetes.client.CoordinationV1Api(api).read_namespaced_lease("elected", namespace)


def test_a_stale_resource_version_gets_409(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """Two locks read the same Lease; the second write, based on an old read, is refused."""
    first = LeaseLock.on_cluster(api, namespace, "race", "first")
    second = LeaseLock.on_cluster(api, namespace, "race", "second")
    first.create(LeaderElectionRecord(lease_duration_seconds=3))
    first.get()
    second.get()
    now = micro_time()
    first.update(LeaderElectionRecord("first", 3, now, now))
    with pytest.raises(ApiException) as refused:
        second.update(LeaderElectionRecord("second", 3, now, now))
    assert refused.value.status == 409
    assert second.get().holder_identity == "first"


def test_create_renew_release(
    api: kubernetes.client.ApiClient, namespace: str, electors: list
) -> None:
    recorder = Recorder()
    _, stop = start(api, namespace, "alone", recorder, electors)
    recorder.wait_for("alone", "started")
    lease = read_lease(api, namespace)
    assert (lease.spec.holder_identity, lease.spec.lease_duration_seconds) == ("alone", LEASE)
    first_renewal = lease.spec.renew_time
    version = lease.metadata.resource_version
    # A renewal is due every retry period: watch the Lease change.
    wait_for(
        kubernetes.client.CoordinationV1Api(api).list_namespaced_lease,
        lambda leases: leases["elected"]["metadata"]["resourceVersion"] != version,
        what="a renewal of the Lease",
        timeout=10 * RETRY,
        namespace=namespace,
    )
    assert read_lease(api, namespace).spec.renew_time > first_renewal

    stop.set()
    recorder.wait_for("alone", "stopped")
    electors[0][0].join(30)
    released = read_lease(api, namespace).spec
    assert not released.holder_identity
    assert released.lease_duration_seconds == RELEASED_LEASE_SECONDS
    assert [e for _, _, e in recorder.events] == ["new leader 'alone'", "started", "stopped"]


def test_a_released_lease_is_taken_at_the_next_try(
    api: kubernetes.client.ApiClient, namespace: str, electors: list
) -> None:
    recorder = Recorder()
    _, stop_a = start(api, namespace, "a", recorder, electors)
    recorder.wait_for("a", "started")
    start(api, namespace, "b", recorder, electors)
    recorder.wait_for("b", "new leader 'a'")
    assert recorder.when("b", "started") is None
    stop_a.set()
    stopped = recorder.wait_for("a", "stopped")
    took_over = recorder.wait_for("b", "started") - stopped
    # A released Lease is taken at b's next try (at most RETRY * (1 + JITTER_FACTOR) = 1.1 s,
    # plus a GET and an UPDATE); an unreleased one only after a whole LEASE. Half a lease tells
    # the two apart and leaves a loaded machine's requests seconds.
    assert took_over < LEASE / 2, took_over
    assert read_lease(api, namespace).spec.lease_transitions == 1


def test_the_holders_timestamps_are_not_trusted(
    api: kubernetes.client.ApiClient, namespace: str, electors: list
) -> None:
    """A Lease renewed "an hour ago" by someone's wrong clock is not free: a candidate waits
    its leaseDurationSeconds from when *it* first saw the record, on its own clock."""
    an_hour_ago = micro_time(datetime.now(UTC) - timedelta(hours=1))
    holder = LeaseLock.on_cluster(api, namespace, "elected", "skewed")
    holder.create(LeaderElectionRecord("skewed", int(LEASE), an_hour_ago, an_hour_ago))
    recorder = Recorder()
    began = time.monotonic()
    start(api, namespace, "careful", recorder, electors)
    recorder.wait_for("careful", "new leader 'skewed'")
    waited = recorder.wait_for("careful", "started") - began
    # Not at once: at least the record's duration, counted on our clock from when we first saw
    # it (after `began`). Trusting the holder's timestamp would have started at once; the upper
    # bound (a whole second lease) only says that it did start.
    assert LEASE <= waited < 2 * LEASE, waited
    assert read_lease(api, namespace).spec.lease_transitions == 1
