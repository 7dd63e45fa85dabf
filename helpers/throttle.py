"""Client-side rate limiting: every request waits for a token (client-go ``rest.Config`` QPS/Burst).

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

Not a client-go port in every detail: client-go also throttles watch
re-connections through the same bucket and logs requests that waited long
("Waited for ... due to client-side throttling"); we do the first, not the
second.
"""

from __future__ import annotations

import threading
from typing import Any

import kubernetes

from helpers.clock import Clock, RealClock
from helpers.workqueue.rate_limiters import BucketRateLimiter

DEFAULT_QPS = 5.0
"""client-go's default when a rest.Config leaves QPS at zero."""

DEFAULT_BURST = 10
"""client-go's default when a rest.Config leaves Burst at zero."""


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


def throttle(
    api: kubernetes.client.ApiClient,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
    *,
    clock: Clock | None = None,
) -> Throttle:
    """Make every request ``api`` sends wait for a token of a new :class:`Throttle`; return it.

    It wraps the client's REST layer, so every API call, list and watch goes
    through it, as in client-go.
    """
    limit = Throttle(qps, burst, clock=clock)
    rest = api.rest_client
    send = rest.request

    def request(*args: Any, **kwargs: Any) -> Any:
        limit.wait()
        return send(*args, **kwargs)

    rest.request = request
    return limit
