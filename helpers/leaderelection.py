"""Leader election on a Lease: only one copy of the controller works at a time.

client-go counterpart: ``tools/leaderelection`` (``LeaderElector``,
``LeaderElectionConfig``, ``LeaderCallbacks``, ``RunOrDie``) and
``tools/leaderelection/resourcelock/leaselock.go`` (``LeaseLock``).

Why: a controller runs as two or more replicas so that one can take over when
another dies, but two copies syncing the same Foo at once would fight. The
replicas agree on a leader through one ``coordination.k8s.io/v1`` Lease object:
the leader writes its name and a fresh ``renewTime`` into it every
``retry_period``; the others read it and wait.

The rules, as client-go has them:

* Every write carries the resourceVersion we last read, so two candidates
  that both think the Lease is free cannot both take it: the second write gets
  409 Conflict (optimistic concurrency).
* A candidate never trusts the holder's clock. It notes, on its *own*
  monotonic clock, when it last saw the record change, and takes over only
  after ``leaseDurationSeconds`` without a change. Clock skew between machines
  does not matter; only the *rate* of clocks does.
* A leader that cannot renew within ``renew_deadline`` gives up (stops
  leading) before anyone else may take over (``lease_duration``), so there is a
  margin of ``lease_duration - renew_deadline`` for it to stop working.
* ``release_on_cancel``: a leader told to stop writes an empty holder with a
  1 s duration, so a standby takes over at its next try instead of waiting out
  the lease.
* Retries are jittered (``wait.JitterUntil``: ``retry_period`` plus up to
  1.2 times as much again), so candidates do not all ask at the same instant.

How this differs from client-go:

* Callbacks run on the elector's thread, not in goroutines of their own:
  ``on_started_leading`` must start its work (in threads it owns) and return;
  its ``leading`` StopEvent is set when leadership ends.
* ``run`` takes a :class:`~helpers.clock.StopEvent` instead of a context, and
  every API call has a timeout (the time left before ``renew_deadline``, while
  renewing), where client-go cancels the request's context.
* No Coordinated Leader Election (LeaseCandidate objects), no event recorder,
  no global metrics: the program wires ``leader_election_master_status``
  through the callbacks.
* Like client-go, there is no fencing: a leader that stalls for longer than the
  margin above can still write after another has taken over.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException

from helpers.apierrors import explain
from helpers.clock import Clock, RealClock, StopEvent

log = logging.getLogger("helpers.leaderelection")

LEASE_DURATION = 15.0
"""Seconds a candidate waits, after it last saw the record change, before taking over."""
RENEW_DEADLINE = 10.0
"""Seconds a leader keeps trying to renew before it gives up leading."""
RETRY_PERIOD = 2.0
"""Seconds between tries (to acquire, jittered; to renew, not)."""
JITTER_FACTOR = 1.2
"""A try to acquire waits ``retry_period * (1 + random() * JITTER_FACTOR)``."""
RELEASED_LEASE_SECONDS = 1
"""The duration written when a leader releases the Lease (client-go writes 1 s too)."""
REQUEST_TIMEOUT = 10.0
"""Seconds one Lease request may take while acquiring (renewals use the time left)."""


@dataclass(frozen=True)
class LeaderElectionRecord:
    """What a Lease's spec says about its holder (client-go ``LeaderElectionRecord``).

    The two times are the holder's wall clock, written for people reading the
    Lease; the election itself never compares them with ours.
    """

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease_spec(cls, spec: dict[str, Any] | None) -> LeaderElectionRecord:
        spec = spec or {}
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_lease_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }


def micro_time(moment: datetime | None = None) -> str:
    """A ``metav1.MicroTime``: RFC 3339 in UTC with microseconds."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- the lock: one Lease object -------------------------------------------------------------


class LeaseClient(Protocol):
    """Three calls on one Lease, raw dicts in and out; errors are ``ApiException``."""

    def read(self, namespace: str, name: str, timeout: float) -> dict[str, Any]: ...

    def create(self, namespace: str, lease: dict[str, Any], timeout: float) -> dict[str, Any]: ...

    def replace(self, namespace: str, lease: dict[str, Any], timeout: float) -> dict[str, Any]: ...


class KubeLeaseClient:
    """:class:`LeaseClient` on the API server: GET, POST and PUT of raw JSON."""

    def __init__(self, api: kubernetes.client.ApiClient) -> None:
        self.api = api

    def read(self, namespace: str, name: str, timeout: float) -> dict[str, Any]:
        return self._call("GET", f"{_leases(namespace)}/{name}", None, timeout)

    def create(self, namespace: str, lease: dict[str, Any], timeout: float) -> dict[str, Any]:
        return self._call("POST", _leases(namespace), lease, timeout)

    def replace(self, namespace: str, lease: dict[str, Any], timeout: float) -> dict[str, Any]:
        path = f"{_leases(namespace)}/{lease['metadata']['name']}"
        return self._call("PUT", path, lease, timeout)

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None, timeout: float
    ) -> dict[str, Any]:
        response = self.api.call_api(
            path,
            method,
            body=body,
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=max(timeout, 0.1),
        )
        try:
            return json.loads(response.data)
        finally:
            response.release_conn()


def _leases(namespace: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


class LeaseLock:
    """The Lease ``namespace/name`` as a lock for ``identity`` (client-go ``LeaseLock``).

    It remembers the Lease as last read or written, so that :meth:`update`
    sends that resourceVersion: if anyone wrote in between, the API server
    answers 409 Conflict and nothing changes.
    """

    def __init__(self, client: LeaseClient, namespace: str, name: str, identity: str) -> None:
        if not identity:
            raise ValueError("a lock needs a non-empty identity")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._lease: dict[str, Any] | None = None

    @classmethod
    def on_cluster(
        cls, api: kubernetes.client.ApiClient, namespace: str, name: str, identity: str
    ) -> LeaseLock:
        return cls(KubeLeaseClient(api), namespace, name, identity)

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get(self, timeout: float = REQUEST_TIMEOUT) -> LeaderElectionRecord:
        """The record in the Lease; ``ApiException`` 404 if there is no Lease."""
        self._lease = self.client.read(self.namespace, self.name, timeout)
        return LeaderElectionRecord.from_lease_spec(self._lease.get("spec"))

    def create(self, record: LeaderElectionRecord, timeout: float = REQUEST_TIMEOUT) -> None:
        """Create the Lease holding ``record``; 409 AlreadyExists if someone was faster."""
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_lease_spec(),
        }
        self._lease = self.client.create(self.namespace, lease, timeout)

    def update(self, record: LeaderElectionRecord, timeout: float = REQUEST_TIMEOUT) -> None:
        """Write ``record`` over the Lease we last saw; 409 Conflict if it changed since."""
        if self._lease is None:
            raise RuntimeError("lease not initialized, call get or create first")
        lease = dict(self._lease, spec=record.to_lease_spec())
        self._lease = self.client.replace(self.namespace, lease, timeout)


class ResourceLock(Protocol):
    """What the elector needs from a lock (client-go ``resourcelock.Interface``)."""

    identity: str

    def describe(self) -> str: ...

    def get(self, timeout: float = ...) -> LeaderElectionRecord: ...

    def create(self, record: LeaderElectionRecord, timeout: float = ...) -> None: ...

    def update(self, record: LeaderElectionRecord, timeout: float = ...) -> None: ...


# --- the elector ------------------------------------------------------------------------------


@dataclass
class LeaderCallbacks:
    """What to do when leadership starts, ends, or moves (client-go ``LeaderCallbacks``).

    ``on_started_leading(leading)`` must return promptly (start threads you own);
    ``leading`` is set when leadership ends. ``on_stopped_leading`` runs whenever
    :meth:`LeaderElector.run` returns, even if we never led, as in client-go.
    ``on_new_leader(identity)`` runs for every change of holder we observe, the
    first one included ("" when the Lease was released).
    """

    on_started_leading: Callable[[StopEvent], None]
    on_stopped_leading: Callable[[], None]
    on_new_leader: Callable[[str], None] | None = None


def jittered(duration: float, max_factor: float, rng: random.Random) -> float:
    """``duration`` plus up to ``max_factor`` times as much again (client-go ``wait.Jitter``)."""
    if max_factor <= 0.0:
        max_factor = 1.0
    return duration + rng.random() * max_factor * duration


class LeaderElector:
    """Campaign for a lock, keep it while alive, give it up when told (client-go ``LeaderElector``).

    Call :meth:`run` on a thread you own; it returns when ``stop`` is set or
    leadership is lost, after calling ``on_stopped_leading``. A lost
    leadership never comes back to the same :meth:`run`: client-go's programs
    exit then, and so does ours.
    """

    def __init__(
        self,
        lock: ResourceLock,
        callbacks: LeaderCallbacks,
        *,
        lease_duration: float = LEASE_DURATION,
        renew_deadline: float = RENEW_DEADLINE,
        retry_period: float = RETRY_PERIOD,
        release_on_cancel: bool = False,
        name: str = "",
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if min(lease_duration, renew_deadline, retry_period) <= 0:
            raise ValueError("leaseDuration, renewDeadline and retryPeriod must be positive")
        self.lock = lock
        self.callbacks = callbacks
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.name = name or lock.describe()
        self.clock: Clock = clock if clock is not None else RealClock()
        self.rng = rng if rng is not None else random.Random()
        # What we last saw in the lock, and when (our clock) we saw it change.
        self.observed_record = LeaderElectionRecord()
        self.observed_time = float("-inf")
        self._reported_leader: str | None = None

    # -- what others ask ---------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True if the record we last observed names us (client-go ``IsLeader``)."""
        return self.observed_record.holder_identity == self.lock.identity

    def get_leader(self) -> str:
        """The holder we last observed ("" for none)."""
        return self.observed_record.holder_identity

    def check(self, max_tolerable_expired: float) -> str | None:
        """None if healthy; else why (client-go ``Check``, behind ``/healthz``).

        A leader that has not renewed for longer than its lease plus the
        tolerance should have stopped leading; if it has not (a deadlock), the
        health check fails so that something restarts it.
        """
        if not self.is_leader():
            return None
        since = self.clock.now() - self.observed_time
        if since > self.lease_duration + max_tolerable_expired:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    # -- the loop ----------------------------------------------------------------------------

    def run(self, stop: StopEvent) -> None:
        """Acquire, then renew until ``stop`` or a failed renewal; then stop leading.

        client-go ``Run``. ``on_stopped_leading`` is called on the way out in
        every case (as client-go's deferred call), so a program can exit there.
        """
        leading = StopEvent()
        try:
            if not self.acquire(stop):
                return
            self.callbacks.on_started_leading(leading)
            self.renew(stop)
        finally:
            leading.set()
            self.callbacks.on_stopped_leading()

    def acquire(self, stop: StopEvent) -> bool:
        """Try until we hold the lock (True) or ``stop`` is set (False); jittered retries."""
        log.info("attempting to acquire leader lease %s...", self.lock.describe())
        while not stop.is_set():
            succeeded = self.try_acquire_or_renew(REQUEST_TIMEOUT)
            self.maybe_report_transition()
            if succeeded:
                log.info("successfully acquired lease %s", self.lock.describe())
                return True
            log.debug("failed to acquire lease %s", self.lock.describe())
            self._sleep(jittered(self.retry_period, JITTER_FACTOR, self.rng), stop)
        return False

    def renew(self, stop: StopEvent) -> None:
        """Renew every ``retry_period`` until ``stop``, or until a round misses its deadline.

        A round tries at once and then every ``retry_period`` until one try
        succeeds or ``renew_deadline`` has passed since the round began.
        Releases the lock on the way out if ``release_on_cancel``.
        """
        while not stop.is_set():
            deadline = self.clock.now() + self.renew_deadline
            renewed = self._renew_before(deadline, stop)
            self.maybe_report_transition()
            if not renewed:
                if not stop.is_set():
                    log.info("failed to renew lease %s: timed out", self.lock.describe())
                break
            log.debug("successfully renewed lease %s", self.lock.describe())
            self._sleep(self.retry_period, stop)
        # Only when told to stop: after a failed renewal the Lease may be someone else's by now
        # (client-go tries anyway, and its write then fails on the resourceVersion).
        if self.release_on_cancel and stop.is_set():
            self.release()

    def _renew_before(self, deadline: float, stop: StopEvent) -> bool:
        """client-go's ``PollUntilContextTimeout`` around ``tryAcquireOrRenew``."""
        while not stop.is_set():
            remaining = deadline - self.clock.now()
            if remaining <= 0:
                return False
            if self.try_acquire_or_renew(remaining):
                return True
            self._sleep(min(self.retry_period, max(0.0, deadline - self.clock.now())), stop)
        return False

    def release(self) -> bool:
        """Give the lock up, if we hold it: empty holder, 1 s lease (client-go ``release``).

        A 409 means our last renewal raced with this write: read again and
        retry, until ``renew_deadline`` has passed.
        """
        deadline = self.clock.now() + self.renew_deadline
        while (remaining := deadline - self.clock.now()) > 0:
            try:
                current = self.lock.get(remaining)
            except _REQUEST_ERRORS as err:
                log.error("error retrieving lease %s: %s", self.lock.describe(), _why(err))
                return False
            if not self.is_leader():
                return True
            now = micro_time()
            record = LeaderElectionRecord(
                lease_duration_seconds=RELEASED_LEASE_SECONDS,
                acquire_time=now,
                renew_time=now,
                leader_transitions=current.leader_transitions,
            )
            try:
                self.lock.update(record, deadline - self.clock.now())
            except _REQUEST_ERRORS as err:
                if isinstance(err, ApiException) and err.status == 409:
                    log.debug("conflict when releasing lease %s, retrying", self.lock.describe())
                    continue
                log.error("failed to release lease %s: %s", self.lock.describe(), _why(err))
                return False
            self._observe(record)
            log.info("released lease %s", self.lock.describe())
            return True
        return False

    # -- one try -----------------------------------------------------------------------------

    def try_acquire_or_renew(self, timeout: float) -> bool:
        """One attempt to take or keep the lock (client-go ``tryAcquireOrRenew``).

        Each request may take at most ``timeout`` seconds. False means: not
        ours (someone else holds a lease that has not expired for us), or a
        request failed (409 Conflict included: someone else wrote first).
        """
        now = micro_time()
        record = LeaderElectionRecord(
            holder_identity=self.lock.identity,
            lease_duration_seconds=int(self.lease_duration),
            acquire_time=now,
            renew_time=now,
        )

        # 1. The leader's fast path: write over the Lease as we last saw it.
        if self.is_leader() and self._lease_valid():
            mine = replace(
                record,
                acquire_time=self.observed_record.acquire_time,
                leader_transitions=self.observed_record.leader_transitions,
            )
            try:
                self.lock.update(mine, timeout)
            except _REQUEST_ERRORS as err:
                log.debug("failed to update lease optimistically, falling back: %s", _why(err))
            else:
                self._observe(mine)
                return True

        # 2. Read the Lease; create it if there is none.
        try:
            current = self.lock.get(timeout)
        except _REQUEST_ERRORS as err:
            if not (isinstance(err, ApiException) and err.status == 404):
                log.error("error retrieving lease %s: %s", self.lock.describe(), _why(err))
                return False
            try:
                self.lock.create(record, timeout)
            except _REQUEST_ERRORS as create_err:
                log.error("error initially creating lease %s: %s", self.name, _why(create_err))
                return False
            self._observe(record)
            return True

        # 3. Note when (on our clock) we saw the record change; someone else's
        #    lease that has not run out for us is theirs.
        if current != self.observed_record:
            self._observe(current)
        if current.holder_identity and self._lease_valid() and not self.is_leader():
            log.debug("lease is held by %s and has not yet expired", current.holder_identity)
            return False

        # 4. Take it (or keep it): the write fails with 409 if anyone wrote since our read.
        if self.is_leader():
            record = replace(
                record,
                acquire_time=current.acquire_time,
                leader_transitions=current.leader_transitions,
            )
        else:
            record = replace(record, leader_transitions=current.leader_transitions + 1)
        try:
            self.lock.update(record, timeout)
        except _REQUEST_ERRORS as err:
            log.error("failed to update lease %s: %s", self.lock.describe(), _why(err))
            return False
        self._observe(record)
        return True

    def maybe_report_transition(self) -> None:
        """Call ``on_new_leader`` if the holder we observe changed since we last reported."""
        holder = self.observed_record.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if self.callbacks.on_new_leader is not None:
            self.callbacks.on_new_leader(holder)

    # -- small pieces ------------------------------------------------------------------------

    def _observe(self, record: LeaderElectionRecord) -> None:
        self.observed_record = record
        self.observed_time = self.clock.now()

    def _lease_valid(self) -> bool:
        """Has the observed record changed within its own lease duration (our clock)?"""
        expires = self.observed_time + self.observed_record.lease_duration_seconds
        return expires > self.clock.now()

    def _sleep(self, seconds: float, stop: StopEvent) -> None:
        """Wait ``seconds`` on our clock, or until ``stop`` is set."""
        with stop.condition:
            self.clock.wait_until(stop.condition, stop.is_set, self.clock.now() + seconds)


_REQUEST_ERRORS = (ApiException, urllib3.exceptions.HTTPError, OSError)
"""What a Lease request can raise: an error answer, or no answer (refused, reset, timed out)."""


def _why(err: BaseException) -> str:
    return explain(err) if isinstance(err, ApiException) else f"{type(err).__name__}: {err}"
