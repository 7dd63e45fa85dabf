"""Rate limiters, checked against client-go's default_rate_limiters_test.go.

Delays are float seconds. Doubling a float is exact, so the exponential
sequences compare with ``==``; anything that subtracts uses ``pytest.approx``.
"""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from helpers.clock import FakeClock
from helpers.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)

MS = 0.001
MINUTE = 60.0
HOUR = 3600.0


def test_item_exponential_failure_rate_limiter__TestItemExponentialFailureRateLimiter() -> None:
    """default_rate_limiters_test.go::TestItemExponentialFailureRateLimiter."""
    limiter = ItemExponentialFailureRateLimiter(1 * MS, 1.0)
    assert [limiter.when("one") for _ in range(5)] == [1 * MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS]
    assert limiter.num_requeues("one") == 5

    assert [limiter.when("two") for _ in range(2)] == [1 * MS, 2 * MS]
    assert limiter.num_requeues("two") == 2

    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 1 * MS
    assert limiter.num_requeues("two") == 2  # forgetting one item leaves the others alone


def test_item_exponential_overflow__TestItemExponentialFailureRateLimiterOverFlow() -> None:
    """default_rate_limiters_test.go::TestItemExponentialFailureRateLimiterOverFlow."""
    limiter = ItemExponentialFailureRateLimiter(1 * MS, 1000.0)
    for _ in range(5):
        limiter.when("one")
    assert limiter.when("one") == 32 * MS
    for _ in range(1000):
        limiter.when("overflow1")
    assert limiter.when("overflow1") == 1000.0

    limiter = ItemExponentialFailureRateLimiter(1 * MINUTE, 1000 * HOUR)
    for _ in range(2):
        limiter.when("two")
    assert limiter.when("two") == 4 * MINUTE
    for _ in range(1000):
        limiter.when("overflow2")
    assert limiter.when("overflow2") == 1000 * HOUR


def test_item_exponential_failure_rate_limiter_beyond_float_range() -> None:
    """Past 2**1023 the power itself overflows; the answer is still the cap, not an error."""
    limiter = ItemExponentialFailureRateLimiter(1 * MS, 1000.0)
    for _ in range(1100):
        limiter.when("x")
    assert limiter.when("x") == 1000.0


def test_item_fast_slow_rate_limiter__TestItemFastSlowRateLimiter() -> None:
    """default_rate_limiters_test.go::TestItemFastSlowRateLimiter."""
    limiter = ItemFastSlowRateLimiter(5 * MS, 10.0, 3)
    assert [limiter.when("one") for _ in range(5)] == [5 * MS, 5 * MS, 5 * MS, 10.0, 10.0]
    assert limiter.num_requeues("one") == 5

    assert [limiter.when("two") for _ in range(2)] == [5 * MS, 5 * MS]
    assert limiter.num_requeues("two") == 2

    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


def test_max_of_rate_limiter__TestMaxOfRateLimiter() -> None:
    """default_rate_limiters_test.go::TestMaxOfRateLimiter."""
    limiter = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(5 * MS, 3.0, 3),
        ItemExponentialFailureRateLimiter(1 * MS, 1.0),
    )
    assert [limiter.when("one") for _ in range(5)] == [5 * MS, 5 * MS, 5 * MS, 3.0, 3.0]
    assert limiter.num_requeues("one") == 5

    assert [limiter.when("two") for _ in range(2)] == [5 * MS, 5 * MS]
    assert limiter.num_requeues("two") == 2

    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


class StepRateLimiter:
    """``base`` for the first ``threshold`` calls (any item), then ``slow``."""

    def __init__(self, base: float, slow: float, threshold: int) -> None:
        self.base, self.slow, self.threshold, self.count = base, slow, threshold, 0

    def when(self, item: Hashable) -> float:
        self.count += 1
        return self.base if self.count <= self.threshold else self.slow

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


def test_with_max_wait_rate_limiter__TestWithMaxWaitRateLimiter() -> None:
    """default_rate_limiters_test.go::TestWithMaxWaitRateLimiter - 1000 s capped to 500 s."""
    limiter = WithMaxWaitRateLimiter(StepRateLimiter(5 * MS, 1000.0, 100), 500.0)
    assert [limiter.when(i) for i in range(100)] == [5 * MS] * 100
    assert [limiter.when(i) for i in range(100, 200)] == [500.0] * 100


def test_bucket_rate_limiter_burst_then_qps() -> None:
    """default_rate_limiters.go BucketRateLimiter: burst tokens free, then 1/qps apart."""
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [limiter.when(i) for i in range(100)] == [0.0] * 100
    assert limiter.when("a") == pytest.approx(0.1)
    assert limiter.when("b") == pytest.approx(0.2)  # one bucket for all items
    clock.step(1.0)  # ten tokens back: pays the debt of two, leaves eight
    assert [limiter.when(i) for i in range(8)] == [0.0] * 8
    assert limiter.when("c") == pytest.approx(0.1)
    clock.step(3600.0)  # refill stops at the burst size
    assert [limiter.when(i) for i in range(100)] == [0.0] * 100
    assert limiter.when("d") == pytest.approx(0.1)
    assert limiter.num_requeues("a") == 0


def test_default_controller_rate_limiter() -> None:
    """DefaultControllerRateLimiter = MaxOf(Exp(5 ms, 1000 s), Bucket(10 qps, burst 100))."""
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    # One failing item: per-item backoff rules, the bucket has plenty.
    assert [limiter.when("foo") for _ in range(4)] == [5 * MS, 10 * MS, 20 * MS, 40 * MS]
    assert limiter.num_requeues("foo") == 4
    # Everything failing at once: the shared bucket takes over after its burst.
    delays = [limiter.when(f"item-{i}") for i in range(100)]
    assert delays[:96] == [5 * MS] * 96
    assert delays[96:] == pytest.approx([0.1, 0.2, 0.3, 0.4])
    limiter.forget("foo")
    assert limiter.num_requeues("foo") == 0


def test_default_item_based_rate_limiter() -> None:
    """DefaultItemBasedRateLimiter = ItemExponential(1 ms, 1000 s)."""
    limiter = default_item_based_rate_limiter()
    assert [limiter.when("foo") for _ in range(3)] == [1 * MS, 2 * MS, 4 * MS]
    for _ in range(100):
        limiter.when("foo")
    assert limiter.when("foo") == 1000.0
