"""Leader election, pure logic: client-go's leaderelection_test.go scenarios on a fake clock.

The Lease lives in a :class:`MemoryLeases` store with the API server's rules
for one object (404 when missing, 409 AlreadyExists on a second create, 409
Conflict on a stale resourceVersion), so the elector's own logic is tested
without a cluster. tests/test_leaderelection_cluster.py does the same against
the real API server, and tests/test_program_leader.py with real processes.
"""

from __future__ import annotations

import copy
import random
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from helpers.clock import FakeClock, StopEvent
from helpers.leaderelection import (
    JITTER_FACTOR,
    LeaderCallbacks,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    jittered,
)

GUARD = 5.0
"""Real seconds before a wait that should succeed is declared a failure."""


@dataclass
class MemoryLeases:
    """One Lease with the API server's concurrency rules; records every call."""

    lease: dict[str, Any] | None = None
    version: int = 0
    actions: list[str] = field(default_factory=list)
    conflicts_to_inject: int = 0
    unreachable: set[str] = field(default_factory=set)  # identities whose calls fail
    # Identities whose calls hang until their timeout has passed on ``clock``, then fail
    # (a silent network: only the client's timeout ends the request).
    hanging: set[str] = field(default_factory=set)
    clock: FakeClock | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, identity: str) -> MemoryLeaseClient:
        return MemoryLeaseClient(self, identity)

    def put(self, spec: dict[str, Any] | None) -> None:
        """Make the Lease hold ``spec`` (as someone else's write would)."""
        with self.lock:
            self.version += 1
            self.lease = {
                "metadata": {
                    "name": "bar",
                    "namespace": "foo",
                    "resourceVersion": str(self.version),
                },
                "spec": spec,
            }

    @property
    def record(self) -> LeaderElectionRecord:
        assert self.lease is not None
        return LeaderElectionRecord.from_lease_spec(self.lease.get("spec"))


@dataclass
class MemoryLeaseClient:
    store: MemoryLeases
    identity: str

    def _enter(self, verb: str) -> None:
        self.store.actions.append(verb)
        if self.identity in self.store.unreachable:
            raise ConnectionRefusedError("connection refused")

    def _hang(self, verb: str, timeout: float) -> None:
        """If our network is silent: wait out ``timeout`` on the fake clock, then fail."""
        if self.identity not in self.store.hanging:
            return
        clock = self.store.clock
        assert clock is not None, "set store.clock to make requests hang"
        self.store.actions.append(f"{verb} (hangs {timeout:g}s)")
        parked = threading.Condition()
        with parked:
            clock.wait_until(parked, lambda: False, clock.now() + timeout)
        raise TimeoutError(f"read timed out after {timeout:g}s")

    def read(self, namespace: str, name: str, timeout: float) -> dict[str, Any]:
        self._hang("get", timeout)
        with self.store.lock:
            self._enter("get")
            if self.store.lease is None:
                raise ApiException(status=404, reason="Not Found")
            return copy.deepcopy(self.store.lease)

    def create(self, namespace: str, lease: dict[str, Any], timeout: float) -> dict[str, Any]:
        self._hang("create", timeout)
        with self.store.lock:
            self._enter("create")
            if self.store.lease is not None:
                raise ApiException(status=409, reason="AlreadyExists")
            self.store.version += 1
            self.store.lease = copy.deepcopy(lease)
            self.store.lease["metadata"]["resourceVersion"] = str(self.store.version)
            return copy.deepcopy(self.store.lease)

    def replace(self, namespace: str, lease: dict[str, Any], timeout: float) -> dict[str, Any]:
        self._hang("update", timeout)
        with self.store.lock:
            self._enter("update")
            current = self.store.lease
            if current is None:
                raise ApiException(status=404, reason="Not Found")
            sent = lease["metadata"].get("resourceVersion")
            if self.store.conflicts_to_inject or sent != current["metadata"]["resourceVersion"]:
                self.store.conflicts_to_inject = max(0, self.store.conflicts_to_inject - 1)
                self.store.version += 1  # someone else's write landed first
                current["metadata"]["resourceVersion"] = str(self.store.version)
                raise ApiException(status=409, reason="Conflict")
            self.store.version += 1
            self.store.lease = copy.deepcopy(lease)
            self.store.lease["metadata"]["resourceVersion"] = str(self.store.version)
            return copy.deepcopy(self.store.lease)


@dataclass
class Timeline:
    """What the callbacks reported, with the fake clock's time."""

    clock: FakeClock
    events: list[tuple[float, str, str]] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def callbacks(self, who: str) -> LeaderCallbacks:
        return LeaderCallbacks(
            on_started_leading=lambda _leading: self._note(who, "started"),
            on_stopped_leading=lambda: self._note(who, "stopped"),
            on_new_leader=lambda holder: self._note(who, f"new leader {holder!r}"),
        )

    def _note(self, who: str, what: str) -> None:
        with self.changed:
            self.events.append((self.clock.now(), who, what))
            self.changed.notify_all()

    def wait_for(self, who: str, what: str) -> float:
        with self.changed:
            assert self.changed.wait_for(lambda: self.when(who, what) is not None, GUARD), (
                f"{who} never reported {what!r}: {self.events}"
            )
        when = self.when(who, what)
        assert when is not None
        return when

    def running(self) -> int:
        """Electors between their first callback and "stopped", their last act."""
        with self.changed:
            who = {w for _, w, _ in self.events}
            return len(who - {w for _, w, e in self.events if e == "stopped"})

    def when(self, who: str, what: str) -> float | None:
        return next((t for t, w, e in self.events if w == who and e == what), None)


def elector(
    store: MemoryLeases,
    identity: str,
    clock: FakeClock,
    callbacks: LeaderCallbacks | None = None,
    **config: Any,
) -> LeaderElector:
    lock = LeaseLock(store.client(identity), "foo", "bar", identity)
    callbacks = callbacks or LeaderCallbacks(lambda _l: None, lambda: None)
    config.setdefault("lease_duration", 10.0)
    config.setdefault("renew_deadline", 5.0)
    config.setdefault("retry_period", 1.0)
    return LeaderElector(lock, callbacks, clock=clock, rng=random.Random(7), **config)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1000.0)


@pytest.fixture
def store() -> MemoryLeases:
    return MemoryLeases()


# --- tryAcquireOrRenew: leaderelection_test.go testTryAcquireOrRenew -----------------------


def test_acquire_from_no_object(store: MemoryLeases, clock: FakeClock) -> None:
    le = elector(store, "baz", clock)
    assert le.try_acquire_or_renew(1.0)
    assert store.actions == ["get", "create"]
    assert store.record.holder_identity == "baz"
    assert store.record.lease_duration_seconds == 10
    assert store.record.leader_transitions == 0


def test_acquire_from_object_without_spec(store: MemoryLeases, clock: FakeClock) -> None:
    store.put(None)
    le = elector(store, "baz", clock)
    assert le.try_acquire_or_renew(1.0)
    assert store.actions == ["get", "update"]
    assert (store.record.holder_identity, store.record.leader_transitions) == ("baz", 1)


def test_acquire_from_led_object_with_the_lease_duration_seconds(
    store: MemoryLeases, clock: FakeClock
) -> None:
    """The holder's record says 3 s: we wait 3 s *of our clock* from when we first saw it."""
    store.put({"holderIdentity": "bing", "leaseDurationSeconds": 3, "renewTime": "2000-01-01"})
    le = elector(store, "baz", clock)
    assert not le.try_acquire_or_renew(1.0)
    clock.step(2.9)
    assert not le.try_acquire_or_renew(1.0)  # the record did not change, 2.9 s < 3 s
    clock.step(0.2)
    assert le.try_acquire_or_renew(1.0)
    assert store.actions == ["get", "get", "get", "update"]
    assert (store.record.holder_identity, store.record.leader_transitions) == ("baz", 1)


def test_acquire_from_unled_object(store: MemoryLeases, clock: FakeClock) -> None:
    store.put({})
    le = elector(store, "baz", clock)
    assert le.try_acquire_or_renew(1.0)
    assert store.record.holder_identity == "baz"


def test_acquire_from_led_unacked_object(store: MemoryLeases, clock: FakeClock) -> None:
    """We saw bing's record long ago and it never changed since: bing is gone."""
    store.put({"holderIdentity": "bing", "leaseDurationSeconds": 10})
    le = elector(store, "baz", clock)
    le.observed_record = store.record
    le.observed_time = clock.now() - 1000 * 3600
    assert le.try_acquire_or_renew(1.0)
    assert (store.record.holder_identity, store.record.leader_transitions) == ("baz", 1)


def test_acquire_from_empty_led_acked_object(store: MemoryLeases, clock: FakeClock) -> None:
    """An empty holder (a released Lease) is free at once, however fresh."""
    store.put({"holderIdentity": "", "leaseDurationSeconds": 10})
    le = elector(store, "baz", clock)
    le.observed_time = clock.now() + 1000 * 3600
    assert le.try_acquire_or_renew(1.0)
    assert store.record.holder_identity == "baz"


def test_dont_acquire_from_led_acked_object(store: MemoryLeases, clock: FakeClock) -> None:
    # Upstream's record has no duration and relies on the real clock moving between two
    # reads of it; we give the record its duration instead, which is what it means.
    store.put({"holderIdentity": "bing", "leaseDurationSeconds": 10})
    le = elector(store, "baz", clock)
    assert not le.try_acquire_or_renew(1.0)
    assert store.actions == ["get"]
    assert le.get_leader() == "bing" and not le.is_leader()


def test_holders_timestamps_are_never_trusted(store: MemoryLeases, clock: FakeClock) -> None:
    """A renewTime far in the past (a skewed clock) does not make the lease look expired."""
    store.put({"holderIdentity": "bing", "leaseDurationSeconds": 10, "renewTime": "1970-01-01"})
    le = elector(store, "baz", clock)
    assert not le.try_acquire_or_renew(1.0)
    clock.step(9)
    store.put(dict(store.lease["spec"], renewTime="1970-01-02"))  # bing renews
    assert not le.try_acquire_or_renew(1.0)
    clock.step(9)  # 18 s since we first saw bing, 9 s since bing renewed
    assert not le.try_acquire_or_renew(1.0)
    clock.step(1.5)
    assert le.try_acquire_or_renew(1.0)


def test_renew_already_acquired_object(store: MemoryLeases, clock: FakeClock) -> None:
    """TestFastPathLeaderElection: a leader with a valid lease writes without reading."""
    le = elector(store, "baz", clock)
    assert le.try_acquire_or_renew(1.0)
    acquired = store.record.acquire_time
    clock.step(1)
    store.actions.clear()
    assert le.try_acquire_or_renew(1.0)
    assert store.actions == ["update"]
    assert store.record.acquire_time == acquired  # a renewal keeps the acquire time
    assert store.record.leader_transitions == 0


def test_fast_path_falls_back_to_slow_path(store: MemoryLeases, clock: FakeClock) -> None:
    """A 409 on the optimistic write: read again, and renew if the Lease is still ours."""
    le = elector(store, "baz", clock)
    assert le.try_acquire_or_renew(1.0)
    store.actions.clear()
    store.conflicts_to_inject = 1
    assert le.try_acquire_or_renew(1.0)
    assert store.actions == ["update", "get", "update"]
    assert store.record.holder_identity == "baz"


def test_a_conflict_means_someone_else_wrote(store: MemoryLeases, clock: FakeClock) -> None:
    """Two candidates read the same free Lease; only the first write wins."""
    store.put({})
    first, second = elector(store, "a", clock), elector(store, "b", clock)
    first.lock.get()
    second.lock.get()
    first.lock.update(LeaderElectionRecord("a", 10))
    with pytest.raises(ApiException) as raised:
        second.lock.update(LeaderElectionRecord("b", 10))
    assert raised.value.status == 409
    assert store.record.holder_identity == "a"


# --- release: TestReleaseLeaseLeases, TestReleaseRetriesOnConflict ---------------------------


def test_release_acquired_lock(store: MemoryLeases, clock: FakeClock) -> None:
    le = elector(store, "baz", clock)
    assert le.try_acquire_or_renew(1.0)
    assert le.release()
    record = store.record
    assert (record.holder_identity, record.lease_duration_seconds) == ("", 1)
    assert record.leader_transitions == 0
    assert not le.is_leader()


def test_release_when_not_leader_writes_nothing(store: MemoryLeases, clock: FakeClock) -> None:
    store.put({"holderIdentity": "bing", "leaseDurationSeconds": 10})
    le = elector(store, "baz", clock)
    assert le.release()
    assert store.actions == ["get"]
    assert store.record.holder_identity == "bing"


def test_release_retries_on_conflict(store: MemoryLeases, clock: FakeClock) -> None:
    le = elector(store, "baz", clock)
    assert le.try_acquire_or_renew(1.0)
    store.actions.clear()
    store.conflicts_to_inject = 1
    assert le.release()
    assert store.actions == ["get", "update", "get", "update"]
    assert store.record.holder_identity == ""


# --- configuration: TestLeaderElectionConfigValidation --------------------------------------


@pytest.mark.parametrize(
    ("lease", "renew", "retry", "message"),
    [
        (10, 10, 1, "leaseDuration must be greater than renewDeadline"),
        (15, 2.4, 2, "renewDeadline must be greater than retryPeriod*JitterFactor"),
        (15, 10, 0, "must be positive"),
        (15, 10, -1, "must be positive"),
    ],
)
def test_config_validation(lease: float, renew: float, retry: float, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        LeaderElector(
            LeaseLock(MemoryLeases().client("x"), "foo", "bar", "x"),
            LeaderCallbacks(lambda _l: None, lambda: None),
            lease_duration=lease,
            renew_deadline=renew,
            retry_period=retry,
        )


def test_lock_needs_an_identity() -> None:
    with pytest.raises(ValueError, match="identity"):
        LeaseLock(MemoryLeases().client(""), "foo", "bar", "")


def test_jitter_stays_within_its_bounds() -> None:
    rng = random.Random(1)
    waits = [jittered(2.0, JITTER_FACTOR, rng) for _ in range(1000)]
    assert 2.0 <= min(waits) < 2.1
    assert 4.3 < max(waits) <= 2.0 * (1 + JITTER_FACTOR)


# --- run: the loops, on a fake clock ------------------------------------------------------


@pytest.fixture
def running() -> Iterator[list[tuple[threading.Thread, StopEvent]]]:
    """Elector threads started by a test; stopped and joined afterwards."""
    started: list[tuple[threading.Thread, StopEvent]] = []
    yield started
    for _, stop in started:
        stop.set()
    for thread, _ in started:
        thread.join(GUARD)
        assert not thread.is_alive()


def start(le: LeaderElector, running: list[tuple[threading.Thread, StopEvent]]) -> StopEvent:
    stop = StopEvent()
    thread = threading.Thread(target=le.run, args=(stop,), name=f"elector-{le.lock.identity}")
    running.append((thread, stop))
    thread.start()
    return stop


def step_until(
    clock: FakeClock, done: Any, timeline: Timeline, *, step: float = 0.1, limit: float = 60
) -> float:
    """Step the clock in small increments until ``done()``, each time only once every
    running elector is parked again (has finished reacting to the last step). An elector
    runs from its first callback until its "stopped" callback, its last act."""
    began = clock.now()
    while not done():
        assert clock.now() - began < limit, "the condition never came true"
        give_up = time.monotonic() + GUARD
        # An elector may report "stopped" while we wait: count again after each wake-up.
        while not clock.wait_for_waiters(timeline.running(), 0.05):
            assert time.monotonic() < give_up, f"electors not parked: {timeline.events}"
        clock.step(step)
    return clock.now() - began


def test_one_leader_and_handover_on_release(
    store: MemoryLeases, clock: FakeClock, running: list
) -> None:
    timeline = Timeline(clock)
    a = elector(store, "a", clock, timeline.callbacks("a"), release_on_cancel=True)
    b = elector(store, "b", clock, timeline.callbacks("b"), release_on_cancel=True)
    stop_a = start(a, running)
    timeline.wait_for("a", "started")
    start(b, running)
    timeline.wait_for("b", "new leader 'a'")
    step_until(clock, lambda: clock.now() > 1030, timeline)  # 30 s: a renews, b keeps waiting
    assert timeline.when("b", "started") is None
    renewals = [action for action in store.actions if action == "update"]
    assert len(renewals) >= 10

    stop_a.set()  # a releases the Lease on its way out
    stopped = timeline.wait_for("a", "stopped")
    assert store.record.holder_identity in ("", "b")
    step_until(clock, lambda: timeline.when("b", "started") is not None, timeline)
    took_over = timeline.wait_for("b", "started") - stopped
    assert took_over <= 1.0 * (1 + JITTER_FACTOR) + 0.2  # one jittered retry, not a lease
    assert store.record.leader_transitions == 1


def test_partitioned_leader_stops_before_anyone_takes_over(
    store: MemoryLeases, clock: FakeClock, running: list
) -> None:
    """The leader loses the API server: it gives up after renew_deadline; the other
    takes over only after lease_duration without seeing the record change."""
    timeline = Timeline(clock)
    a = elector(store, "a", clock, timeline.callbacks("a"))
    b = elector(store, "b", clock, timeline.callbacks("b"))
    start(a, running)
    timeline.wait_for("a", "started")
    start(b, running)
    timeline.wait_for("b", "new leader 'a'")
    step_until(clock, lambda: clock.now() > 1005, timeline)
    last_renewal = store.record
    store.unreachable.add("a")
    cut_at = clock.now()
    step_until(clock, lambda: timeline.when("b", "started") is not None, timeline)
    a_stopped = timeline.wait_for("a", "stopped")
    b_started = timeline.wait_for("b", "started")
    assert a_stopped < b_started, "two leaders at once"
    assert a_stopped - cut_at <= 5.0 + 1.0 + 0.2  # renew_deadline (+ the round it began in)
    assert b_started - cut_at >= 10.0 - 1.0  # lease_duration, less a's last renew period
    assert store.record.holder_identity == "b"
    assert store.record.leader_transitions == last_renewal.leader_transitions + 1


def test_a_leader_that_fails_to_renew_within_its_renew_deadline_leads_on(
    store: MemoryLeases, clock: FakeClock, running: list
) -> None:
    """A round of renewals tries every retry_period until renew_deadline has passed (client-go's
    renew polls until its deadline): two lost tries are not the end of leading."""
    timeline = Timeline(clock)
    a = elector(store, "a", clock, timeline.callbacks("a"))
    start(a, running)
    timeline.wait_for("a", "started")
    step_until(clock, lambda: clock.now() > 1005, timeline)
    store.unreachable.add("a")
    cut_at = clock.now()
    step_until(clock, lambda: clock.now() > cut_at + 2.5, timeline)  # within renew_deadline, 5 s
    store.unreachable.discard("a")
    step_until(clock, lambda: clock.now() > cut_at + 10, timeline)
    assert timeline.when("a", "stopped") is None, f"a stopped leading: {store.actions[-8:]}"
    assert store.record.holder_identity == "a"


def test_a_failed_renewal_does_not_release_the_lease(
    store: MemoryLeases, clock: FakeClock, running: list
) -> None:
    """Ours releases only when told to stop. client-go's renew calls release whenever its
    loop ends, after a failed round too (its release reads the Lease first, so its write
    carries a fresh resourceVersion); chapter 08 says so beside renew."""
    timeline = Timeline(clock)
    a = elector(store, "a", clock, timeline.callbacks("a"), release_on_cancel=True)
    released: list[float] = []
    a.release = lambda: bool(released.append(clock.now())) or True  # type: ignore[method-assign]
    start(a, running)
    timeline.wait_for("a", "started")
    step_until(clock, lambda: clock.now() > 1005, timeline)
    store.unreachable.add("a")
    step_until(clock, lambda: timeline.when("a", "stopped") is not None, timeline)
    assert released == []


def test_leader_whose_requests_hang_stops_before_anyone_takes_over(
    store: MemoryLeases, clock: FakeClock, running: list
) -> None:
    """A silent network, not a refused one: each of the leader's requests waits out its
    timeout. A renewal try spends the time left before renew_deadline once in all (client-go
    gives the whole try one context), not once per request; else the leader would still
    lead when the other takes over."""
    store.clock = clock
    timeline = Timeline(clock)
    a = elector(store, "a", clock, timeline.callbacks("a"))
    b = elector(store, "b", clock, timeline.callbacks("b"))
    start(a, running)
    timeline.wait_for("a", "started")
    start(b, running)
    timeline.wait_for("b", "new leader 'a'")
    step_until(clock, lambda: clock.now() > 1005, timeline)
    store.hanging.add("a")
    cut_at = clock.now()
    step_until(clock, lambda: timeline.when("b", "started") is not None, timeline)
    a_stopped = timeline.wait_for("a", "stopped")
    b_started = timeline.wait_for("b", "started")
    assert a_stopped < b_started, f"two leaders at once: {store.actions[-6:]}"
    assert a_stopped - cut_at <= 5.0 + 1.0 + 0.2  # renew_deadline (+ the round it began in)
    assert b_started - cut_at >= 10.0 - 1.0


def test_one_try_spends_its_timeout_once(store: MemoryLeases, clock: FakeClock) -> None:
    """The fast-path write hangs for the whole timeout: no GET follows with a fresh one."""
    store.clock = clock
    le = elector(store, "baz", clock)
    assert le.try_acquire_or_renew(1.0)
    store.hanging.add("baz")
    began = clock.now()
    done = threading.Event()
    stepper = threading.Thread(target=step_while_parked, args=(clock, 0.5, done))
    stepper.start()
    try:
        assert not le.try_acquire_or_renew(5.0)
    finally:
        done.set()
        stepper.join(GUARD)
    took = clock.now() - began
    assert took <= 5.0 + 0.5, f"one try took {took:g}s: {store.actions}"
    assert store.actions[-1] == "update (hangs 5s)"


def step_while_parked(clock: FakeClock, step: float, done: threading.Event) -> None:
    """Step the clock by ``step`` whenever a thread waits on it, until ``done``."""
    while not done.is_set():
        if clock.wait_for_waiters(1, 0.05):
            clock.step(step)


def test_callbacks_in_order(store: MemoryLeases, clock: FakeClock, running: list) -> None:
    timeline = Timeline(clock)
    a = elector(store, "a", clock, timeline.callbacks("a"), release_on_cancel=True)
    stop = start(a, running)
    timeline.wait_for("a", "started")
    stop.set()
    timeline.wait_for("a", "stopped")
    assert [what for _, _, what in timeline.events] == ["new leader 'a'", "started", "stopped"]


def test_stopped_leading_is_called_even_if_never_leading(
    store: MemoryLeases, clock: FakeClock, running: list
) -> None:
    """As client-go's deferred OnStoppedLeading: a program may exit there either way."""
    store.put({"holderIdentity": "bing", "leaseDurationSeconds": 10})
    timeline = Timeline(clock)
    stop = start(elector(store, "baz", clock, timeline.callbacks("baz")), running)
    timeline.wait_for("baz", "new leader 'bing'")
    stop.set()
    timeline.wait_for("baz", "stopped")
    assert timeline.when("baz", "started") is None


def test_check_fails_for_a_leader_that_stopped_renewing(
    store: MemoryLeases, clock: FakeClock
) -> None:
    """HealthzAdaptor: a leader past its lease plus the tolerance is unhealthy."""
    le = elector(store, "baz", clock)
    assert le.check(20) is None  # not a leader: healthy
    assert le.try_acquire_or_renew(1.0)
    clock.step(29)
    assert le.check(20) is None
    clock.step(2)
    assert le.check(20) == "failed election to renew leadership on lease foo/bar"


class _RecordingCore:
    """What the lease worker's ``work`` calls on a CoreV1Api: patches, recorded."""

    def __init__(self, leading: StopEvent, stop_after: int) -> None:
        self.patches: list[dict[str, Any]] = []
        self.leading, self.stop_after = leading, stop_after

    def patch_namespaced_config_map(self, name: str, namespace: str, body: dict) -> None:
        assert (name, namespace) == ("work", "ns")
        self.patches.append(body)
        if len(self.patches) == self.stop_after:
            self.leading.set()  # leadership ends: the loop stops before its next write


def test_the_lease_workers_work_writes_its_own_entry_until_leadership_ends() -> None:
    """Chapter 08's worker: every write merges {its name: its count}; none after the end."""
    from helpers import lease_worker

    leading = StopEvent()
    core = _RecordingCore(leading, stop_after=3)
    worker = threading.Thread(target=lease_worker.work, args=(core, "ns", "one", leading))
    worker.start()
    worker.join(GUARD)
    assert not worker.is_alive()
    assert core.patches == [{"data": {"one": "1"}}, {"data": {"one": "2"}}, {"data": {"one": "3"}}]
