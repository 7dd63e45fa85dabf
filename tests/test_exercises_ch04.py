"""Chapter 04's checks say "not attempted", "wrong" and "correct" when they should.

No cluster: the checks run answers against real queues and rate limiters.
"""

from __future__ import annotations

from collections.abc import Callable

from helpers.exercises import ch04
from helpers.workqueue import (
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
    default_controller_rate_limiter,
)
from notebooks.solutions import ch04 as solutions


def test_exercise_1() -> None:
    assert ch04.check_1(None).state == "not attempted yet"
    counted_the_held_key = ch04.check_1((3, ["b", "c", "a"]))
    assert counted_the_held_key.state == "wrong" and "len()" in counted_the_held_key.detail
    first_in_first_out = ch04.check_1((2, ["a", "b", "c"]))
    assert first_in_first_out.state == "wrong" and "done()" in first_in_first_out.detail
    assert ch04.check_1("b, c, a").state == "wrong"  # type: ignore[arg-type]
    assert ch04.check_1(solutions.answer_1).correct


def test_exercise_2() -> None:
    assert ch04.check_2(None).state == "not attempted yet"
    exponential_only = ch04.check_2(ItemExponentialFailureRateLimiter(0.2, 60.0))
    assert exponential_only.state == "wrong" and "failure 2" in exponential_only.detail
    fast_slow_only = ch04.check_2(ItemFastSlowRateLimiter(0.2, 10.0, 3))
    assert fast_slow_only.state == "wrong" and "failure 9" in fast_slow_only.detail
    assert ch04.check_2(solutions.limiter_2).correct
    fresh = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(0.2, 10.0, 3), ItemExponentialFailureRateLimiter(0.05, 60.0)
    )
    assert ch04.check_2(fresh).correct


class _SharedCount:
    """A limiter that forgets nothing per key: one counter for every key."""

    def __init__(self) -> None:
        self.n = 0

    def when(self, item: object) -> float:
        self.n += 1
        return ch04.SCHEDULE_2[min(self.n, len(ch04.SCHEDULE_2)) - 1]

    def forget(self, item: object) -> None:
        self.n = 0

    def num_requeues(self, item: object) -> int:
        return self.n


def test_exercise_2_wants_a_schedule_per_key() -> None:
    verdict = ch04.check_2(_SharedCount())
    assert verdict.state == "wrong" and "per key" in verdict.detail


Worker = Callable[[RateLimitingQueue[str], Callable[[str], None], int], bool]


def retries_forever(queue: RateLimitingQueue[str], sync: Callable[[str], None], _: int) -> bool:
    """The chapter's worker: never gives up."""
    key, shutdown = queue.get()
    if shutdown:
        return False
    try:
        sync(key)
    except Exception:
        queue.add_rate_limited(key)
    else:
        queue.forget(key)
    finally:
        queue.done(key)
    return True


def no_done_on_failure(queue: RateLimitingQueue[str], sync: Callable[[str], None], n: int) -> bool:
    key, shutdown = queue.get()
    if shutdown:
        return False
    try:
        sync(key)
    except Exception:
        if queue.num_requeues(key) < n:
            queue.add_rate_limited(key)
        return True
    queue.forget(key)
    queue.done(key)
    return True


def lets_errors_out(queue: RateLimitingQueue[str], sync: Callable[[str], None], _: int) -> bool:
    key, shutdown = queue.get()
    if shutdown:
        return False
    try:
        sync(key)
    finally:
        queue.done(key)
    return True


def test_exercise_3() -> None:
    assert ch04.check_3(None).state == "not attempted yet"
    forever = ch04.check_3(retries_forever)
    assert forever.state == "wrong" and "'broken'" in forever.detail
    stuck = ch04.check_3(no_done_on_failure)
    assert stuck.state == "wrong" and "done()" in stuck.detail
    raised = ch04.check_3(lets_errors_out)
    assert raised.state == "wrong" and "RuntimeError" in raised.detail
    assert ch04.check_3(solutions.process_with_retries).correct


def test_answers_copied_from_the_chapter_are_wrong() -> None:
    """What chapter 04 printed is not an answer: the placeholder's example, the schedule itself,
    the default limiter whose delays the chapter printed, the chapter's own worker."""
    assert ch04.check_1((3, ["a", "b", "c"])).state == "wrong"  # the example in the cell
    # The dedup demo printed "after done(), the queue hands out ['shop/db', 'shop/web']".
    assert ch04.check_1((2, ["shop/db", "shop/web"])).state == "wrong"
    assert ch04.check_2(ch04.SCHEDULE_2).state == "wrong"  # type: ignore[arg-type]
    verdict = ch04.check_2(default_controller_rate_limiter())
    assert verdict.state == "wrong" and "failure 1 waits 0.005 s" in verdict.detail
    assert ch04.check_3(retries_forever).state == "wrong"  # the chapter's process_next_work_item
