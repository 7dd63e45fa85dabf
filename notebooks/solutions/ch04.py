"""Solutions to chapter 04's exercises. Try them yourself first!"""

from __future__ import annotations

from collections.abc import Callable

from helpers.workqueue import (
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)

# After get(), "a" is in processing. add("a") only marks it dirty; add("c") queues c behind b;
# add("b") is a duplicate of a waiting key. So two keys wait, [b, c], and done("a") puts the
# dirty "a" at the back of the line.
answer_1 = (2, ["b", "c", "a"])

# Three quick retries, then never less than 10 s, and from the 9th failure on an exponential
# backoff (0.05 s * 2**8 = 12.8 s) capped at a minute: the larger of two limiters.
limiter_2 = MaxOfRateLimiter(
    ItemFastSlowRateLimiter(0.2, 10.0, 3),
    ItemExponentialFailureRateLimiter(0.05, 60.0),
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
