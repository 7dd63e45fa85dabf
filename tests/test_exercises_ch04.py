"""Chapter 04's checks say "not attempted", "wrong" and "correct" when they should.

No cluster: the checks run answers against real queues and rate limiters.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import redirect_stdout

from helpers.exercises import ch04
from helpers.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
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
    assert ch04.check_2(lambda clock: None).state == "not attempted yet"
    exponential_only = ch04.check_2(lambda clock: ItemExponentialFailureRateLimiter(0.02, 5.0))
    assert exponential_only.state == "wrong" and "many keys" in exponential_only.detail
    bucket_only = ch04.check_2(lambda clock: BucketRateLimiter(4, 10, clock=clock))
    assert bucket_only.state == "wrong" and "again and again" in bucket_only.detail
    real_time = ch04.check_2(
        lambda clock: MaxOfRateLimiter(
            ItemExponentialFailureRateLimiter(0.02, 5.0), BucketRateLimiter(4, 10)
        )
    )
    assert real_time.state == "wrong" and "clock" in real_time.detail
    assert ch04.check_2(lambda clock: "a limiter").state == "wrong"  # type: ignore[arg-type,return-value]
    assert ch04.check_2(solutions.make_limiter_2).correct


class _ReplayedTables:
    """The cheat a learner found: replay the printed delays, per key, with forget. It is right
    wherever the tables looked, and nowhere else."""

    ONE_KEY = (0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.0, 5.0, 5.0, 5.0)
    MANY_KEYS = (0.02,) * 10 + (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)

    def __init__(self, by_key: bool) -> None:
        self.by_key = by_key
        self.failures: dict[object, int] = {}
        self.calls = 0

    def when(self, item: object) -> float:
        self.failures[item] = self.failures.get(item, 0) + 1
        self.calls += 1
        if self.by_key:
            return self.ONE_KEY[min(self.failures[item], len(self.ONE_KEY)) - 1]
        return self.MANY_KEYS[min(self.calls, len(self.MANY_KEYS)) - 1]

    def forget(self, item: object) -> None:
        self.failures.pop(item, None)

    def num_requeues(self, item: object) -> int:
        return self.failures.get(item, 0)


def test_exercise_2_a_replayed_table_is_wrong() -> None:
    """What the chapter printed (exercise 2's two tables, the default limiter whose code it
    shows) is not an answer: the check probes keys, times and forget() the tables never saw."""
    out = io.StringIO()
    with redirect_stdout(out):
        ch04.show_2()
    printed = out.getvalue()
    assert ", ".join(f"{d:g}" for d in _ReplayedTables.ONE_KEY) in printed
    assert ", ".join(f"{d:g}" for d in _ReplayedTables.MANY_KEYS) in printed
    one_key = ch04.check_2(lambda clock: _ReplayedTables(by_key=True))
    assert one_key.state == "wrong" and "many keys" in one_key.detail
    many_keys = ch04.check_2(lambda clock: _ReplayedTables(by_key=False))
    assert many_keys.state == "wrong"
    default = ch04.check_2(lambda clock: default_controller_rate_limiter(clock=clock))
    assert default.state == "wrong" and "waited 0.005 s" in default.detail


class _AlwaysZero:
    def when(self, item: object) -> float:
        return 0.0

    def forget(self, item: object) -> None:
        pass

    def num_requeues(self, item: object) -> int:
        return 0


def test_exercise_2_an_always_zero_limiter_is_wrong() -> None:
    assert ch04.check_2(lambda clock: _AlwaysZero()).state == "wrong"


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
    """What chapter 04 printed is not an answer: the placeholder's example, the chapter's own
    worker (exercise 2's tables: test_exercise_2_a_replayed_table_is_wrong)."""
    assert ch04.check_1((3, ["a", "b", "c"])).state == "wrong"  # the example in the cell
    # The dedup demo printed "after done(), the queue hands out ['shop/db', 'shop/web']".
    assert ch04.check_1((2, ["shop/db", "shop/web"])).state == "wrong"
    assert ch04.check_3(retries_forever).state == "wrong"  # the chapter's process_next_work_item
