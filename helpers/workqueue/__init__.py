"""The workqueue: what a controller's event handlers feed and its workers drain.

client-go counterpart: ``k8s.io/client-go/util/workqueue``,
https://github.com/kubernetes/client-go/tree/v0.36.3/util/workqueue
One module per idea, each layer adding one concept to the one below:

- ``queue``: ``Queue`` - dedup, fair order, one worker per key, shutdown;
- ``delaying``: ``DelayingQueue`` - ``add_after``;
- ``rate_limiting``: ``RateLimitingQueue`` - ``add_rate_limited``, ``forget``;
- ``rate_limiters``: the backoff policies and client-go's defaults;
- ``metrics``: depth, adds, latencies, stuck work, retries (named queues only).
"""

from helpers.workqueue.delaying import DelayingQueue
from helpers.workqueue.metrics import NoopMetrics, QueueMetrics, render_prometheus
from helpers.workqueue.queue import Queue
from helpers.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from helpers.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "NoopMetrics",
    "Queue",
    "QueueMetrics",
    "RateLimiter",
    "RateLimitingQueue",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
    "render_prometheus",
]
