"""How client-go paces a client: a token per request, and the server's Retry-After obeyed.

client-go puts a token bucket in front of every REST client: ``QPS`` tokens a
second, up to ``Burst`` saved up (5 and 10 unless the program says otherwise;
sample-controller does not). A request that finds the bucket empty waits for
its token before it is sent. Besides protecting the API server, this sets the
pace of a controller's retries: a key whose status write keeps failing with
409 Conflict (its cached copy is stale) is retried as fast as the workqueue's
per-item backoff allows (5 ms, 10 ms, 20 ms...), and without a client-side
limit those retries reach the API server as fast as they are made.

The bucket is chapter 04's :class:`~helpers.workqueue.rate_limiters.BucketRateLimiter`
(one token bucket in the course, not two): ``when()`` reserves the next token
and says how long until it is there.

The second habit of client-go's REST client: an answer of 429 or 5xx that
carries a ``Retry-After`` header (a restarting API server that has not yet
installed every path answers 503 with one; an overloaded one 429) is retried inside
the same request after that many seconds, up to 10 times. The caller never
sees those answers, so a reflector does not count them as errors and its
backoff does not grow while an API server restarts, and a worker does not
fail the sync and requeue the key.

Not a client-go port in every detail: client-go logs requests that waited long
("Waited for ... due to client-side throttling"), and a context cancels its
Retry-After waits; a request of ours waits them out.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.clock import Clock, RealClock
from helpers.workqueue.rate_limiters import BucketRateLimiter

DEFAULT_QPS = 5.0
"""client-go's default when a rest.Config leaves QPS at zero."""

DEFAULT_BURST = 10
"""client-go's default when a rest.Config leaves Burst at zero."""

DISCOVERY_BURST = 300
"""The burst of client-go's discovery client when a rest.Config leaves Burst at zero."""

DISCOVERY = "discovery"
"""The bucket of the discovery requests (:func:`api_group`)."""

MAX_RETRIES = 10
"""How many Retry-After answers one request obeys (client-go ``rest.Request``'s default)."""


def retry_after(err: ApiException) -> int | None:
    """Seconds the server asked us to wait before a retry, if it did (client-go ``checkWait``)."""
    if err.status != 429 and not 500 <= (err.status or 0) <= 599:
        return None
    value = (err.headers or {}).get("Retry-After")
    if value is None:
        return None
    try:
        seconds = int(value)
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


class Throttle:
    """A token bucket that requests wait on; counts how many waited and for how long."""

    def __init__(
        self, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST, *, clock: Clock | None = None
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"a throttle needs qps > 0 and burst >= 1 (got {qps}, {burst})")
        self.qps, self.burst = qps, burst
        self._clock: Clock = clock if clock is not None else RealClock()
        self._bucket = BucketRateLimiter(qps, burst, clock=self._clock)
        self._lock = threading.Lock()  # guards the counters
        self.requests = 0
        self.waited = 0
        self.seconds_waited = 0.0
        self.retried = 0  # answers with Retry-After that were retried

    def wait(self) -> float:
        """Take a token, waiting until it is there; returns the seconds waited."""
        delay = self._bucket.when(None)  # reserves the token, even one not there yet
        with self._lock:
            self.requests += 1
            if delay > 0:
                self.waited += 1
                self.seconds_waited += delay
        if delay > 0:
            alone = threading.Condition()  # nobody notifies it: the wait ends at its deadline
            with alone:
                self._clock.wait_until(alone, lambda: False, self._clock.now() + delay)
        return delay

    def note_retry(self) -> None:
        with self._lock:
            self.retried += 1

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this throttle's clock (a Retry-After)."""
        alone = threading.Condition()
        with alone:
            self._clock.wait_until(alone, lambda: False, self._clock.now() + seconds)


def throttle(
    api: kubernetes.client.ApiClient,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
    *,
    max_retries: int = MAX_RETRIES,
    clock: Clock | None = None,
) -> Throttle:
    """Pace every request ``api`` sends as client-go does; return the :class:`Throttle`.

    Each attempt waits for a token; an answer with Retry-After is retried after
    it, up to ``max_retries`` times. It wraps the client's REST layer, so every
    API call, list and watch goes through it. One bucket for all requests: a
    clientset built from a ``rest.Config`` that sets ``QPS`` (kube-controller-manager's).
    """
    limit = Throttle(qps, burst, clock=clock)
    _pace(api, lambda url: limit, max_retries)
    return limit


def throttle_per_group(
    api: kubernetes.client.ApiClient,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
    *,
    discovery_burst: int = DISCOVERY_BURST,
    max_retries: int = MAX_RETRIES,
    clock: Clock | None = None,
) -> dict[str, Throttle]:
    """Pace ``api`` with one bucket per API group; return the buckets, by group, as they come.

    What sample-controller gets: its ``rest.Config`` leaves ``QPS`` at zero, so
    ``kubernetes.NewForConfig`` makes no shared limiter and each API group's REST
    client (``core/v1``, ``apps/v1``, ``samplecontroller.k8s.io/v1alpha1``) makes
    its own 5/10 bucket (client-go ``rest.RESTClientForConfigAndClient``). The
    clientset's discovery client makes one more, with a burst of 300
    (``discovery.setDiscoveryDefaults``): a discovery request (``/version``,
    ``/apis/<group>/<version>``, see :func:`api_group`) spends none of a group's
    tokens, so a startup check of the Foo API leaves the status writes all 10.
    """
    buckets: dict[str, Throttle] = {}
    lock = threading.Lock()

    def bucket(url: str) -> Throttle:
        group = api_group(url)
        with lock:
            if group not in buckets:
                size = discovery_burst if group == DISCOVERY else burst
                buckets[group] = Throttle(qps, size, clock=clock)
            return buckets[group]

    _pace(api, bucket, max_retries)
    return buckets


def api_group(url: str) -> str:
    """The API group a request goes to: "" for ``/api/v1/...``, "apps" for ``/apis/apps/...``.

    :data:`DISCOVERY` for what client-go asks through its discovery client:
    ``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>``, ``/apis/<group>/<version>``
    (the resources they serve), and any path outside ``/api`` and ``/apis``
    (``/version``).
    """
    parts = urllib.parse.urlsplit(url).path.rstrip("/").split("/")
    if len(parts) > 1 and parts[1] == "api":
        return "" if len(parts) > 3 else DISCOVERY
    if len(parts) > 1 and parts[1] == "apis":
        return parts[2] if len(parts) > 4 else DISCOVERY
    return DISCOVERY


def _pace(
    api: kubernetes.client.ApiClient, bucket: Callable[[str], Throttle], max_retries: int
) -> None:
    """Wrap ``api``'s REST layer: each attempt waits on ``bucket(url)``; Retry-After obeyed."""
    rest = api.rest_client
    send = rest.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        limit = bucket(url)
        for attempt in range(max_retries + 1):
            limit.wait()
            try:
                return send(method, url, *args, **kwargs)
            except ApiException as err:
                seconds = retry_after(err)
                if seconds is None or attempt == max_retries:
                    raise
                limit.note_retry()
                limit.sleep(seconds)
        raise AssertionError("unreachable: the last attempt returns or raises")

    rest.request = request
