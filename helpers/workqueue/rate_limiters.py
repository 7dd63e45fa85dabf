"""Rate limiters: how long to wait before retrying an item.

client-go counterpart: ``util/workqueue/default_rate_limiters.go``.

Why several small ones: each answers a different worry. Per-item exponential
backoff stops one broken object from hot-looping; a token bucket caps the total
retry rate when *everything* fails at once (an API outage); ``MaxOfRateLimiter``
combines them, and the controller default is exactly that combination.

Every limiter has the same three methods: ``when(item)`` records a failure and
returns the delay in seconds, ``forget(item)`` clears the item's history after a
success, ``num_requeues(item)`` says how many failures are on record. They are
called from many worker threads, so each one guards its state with a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Protocol

from helpers.clock import Clock, RealClock


class RateLimiter(Protocol):
    """client-go: ``TypedRateLimiter``."""

    def when(self, item: Hashable) -> float:
        """Record a failure of ``item``; return how many seconds to wait."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded); its next failure starts afresh."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of ``item`` are on record."""
        ...


class ItemExponentialFailureRateLimiter:
    """``base * 2**failures``, capped at ``max_delay`` (client-go: same name).

    The cap also catches the arithmetic overflowing: after ~1000 failures
    ``2.0**n`` no longer fits in a float, and the answer is simply the cap.
    """

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self._base = base_delay
        self._max = max_delay
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            exponent = self._failures.get(item, 0)
            self._failures[item] = exponent + 1
        try:
            backoff = self._base * 2.0**exponent
        except OverflowError:
            return self._max
        return min(backoff, self._max)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """One token bucket shared by all items (client-go: ``BucketRateLimiter``).

    The bucket holds up to ``burst`` tokens and refills at ``qps`` per second of
    clock time. Each ``when`` takes a token, even one not there yet: the delay is
    how long until it will be. Items are not tracked, so ``num_requeues`` is 0.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        self._qps = qps
        self._burst = float(burst)
        self._clock: Clock = clock if clock is not None else RealClock()
        self._tokens = float(burst)  # starts full
        self._last: float | None = None
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            now = self._clock.now()
            if self._last is not None:
                refill = (now - self._last) * self._qps
                self._tokens = min(self._burst, self._tokens + refill)
            self._last = now
            self._tokens -= 1
            return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class ItemFastSlowRateLimiter:
    """``fast_delay`` for the first ``max_fast_attempts`` failures, then ``slow_delay``.

    client-go: ``ItemFastSlowRateLimiter``; useful for "retry quickly a few
    times, then settle into polling".
    """

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self._fast = fast_delay
        self._slow = slow_delay
        self._max_fast = max_fast_attempts
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            self._failures[item] = self._failures.get(item, 0) + 1
            return self._fast if self._failures[item] <= self._max_fast else self._slow

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class MaxOfRateLimiter:
    """The longest delay any of ``limiters`` asks for (client-go: same name).

    Every limiter is asked on every failure, so all of them keep counting.
    """

    def __init__(self, *limiters: RateLimiter) -> None:
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self._limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


class WithMaxWaitRateLimiter:
    """Caps another limiter's delay at ``max_wait`` (client-go: same name)."""

    def __init__(self, limiter: RateLimiter, max_wait: float) -> None:
        self._limiter = limiter
        self._max_wait = max_wait

    def when(self, item: Hashable) -> float:
        return min(self._limiter.when(item), self._max_wait)

    def forget(self, item: Hashable) -> None:
        self._limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self._limiter.num_requeues(item)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's ``DefaultControllerRateLimiter``: per-item 5 ms..1000 s, overall 10 qps.

    The bucket (10 qps, burst 100) only matters when many items fail together.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10, burst=100, clock=clock),
    )


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter:
    """client-go's ``DefaultItemBasedRateLimiter``: per-item backoff 1 ms..1000 s."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)
