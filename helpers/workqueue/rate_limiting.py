"""A delaying queue that asks a rate limiter how long to wait.

client-go counterpart: ``util/workqueue/rate_limiting_queue.go``
(``RateLimitingInterface``, ``NewRateLimitingQueueWithConfig``).

Why a separate layer: the queue knows *how* to wait (``add_after``), the limiter
knows *how long* (backoff policy). A worker only says "this failed"
(``add_rate_limited``) or "this succeeded" (``forget``).
"""

from __future__ import annotations

from helpers.clock import Clock
from helpers.workqueue.delaying import HEARTBEAT, DelayingQueue
from helpers.workqueue.metrics import UPDATE_PERIOD
from helpers.workqueue.queue import T
from helpers.workqueue.rate_limiters import RateLimiter


class RateLimitingQueue(DelayingQueue[T]):
    """client-go: ``rateLimitingType``."""

    def __init__(
        self,
        rate_limiter: RateLimiter,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics_update_period: float = UPDATE_PERIOD,
        heartbeat: float = HEARTBEAT,
    ) -> None:
        self.rate_limiter = rate_limiter
        super().__init__(
            name, clock=clock, metrics_update_period=metrics_update_period, heartbeat=heartbeat
        )

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay the limiter chooses (this counts as a failure)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Clear ``item``'s failure history. It does not dequeue: ``done`` is still owed."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
