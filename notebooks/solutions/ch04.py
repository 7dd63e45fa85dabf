"""Solutions to chapter 04's exercises. Try them yourself first!"""

from __future__ import annotations

from collections.abc import Callable

from helpers.clock import Clock
from helpers.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)

# After get(), "a" is in processing. add("a") only marks it dirty; add("c") queues c behind b;
# add("b") is a duplicate of a waiting key. So two keys wait, [b, c], and done("a") puts the
# dirty "a" at the back of the line.
answer_1 = (2, ["b", "c", "a"])


# The first table: 0.02 s doubling with each failure of one key, capped at 5 s: per-item
# exponential backoff. The second: ten keys failing together wait only their own 0.02 s (a burst
# of 10 tokens), then each waits 0.25 s more than the one before (4 tokens a second): a bucket
# shared by all keys. The team's limiter takes the larger of the two, as client-go's default does.
def make_limiter_2(clock: Clock) -> MaxOfRateLimiter:
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.02, 5.0),
        BucketRateLimiter(qps=4, burst=10, clock=clock),
    )


def process_with_retries(
    queue: RateLimitingQueue[str], sync: Callable[[str], None], max_retries: int
) -> bool:
    """Sync one key; retry a failure with backoff at most ``max_retries`` times, then drop it."""
    key, shutdown = queue.get()
    if shutdown:
        return False
    try:
        sync(key)
    except Exception:
        if queue.num_requeues(key) < max_retries:
            queue.add_rate_limited(key)
        else:
            queue.forget(key)  # give up; a later change to the object enqueues it afresh
    else:
        queue.forget(key)
    finally:
        queue.done(key)
    return True
