"""The reflector's backoff, as apimachinery's own tests specify it.

Each test is named ``test_<what>__<UpstreamTest>`` where there is an upstream
test (k8s.io/apimachinery/pkg/util/wait/backoff_test.go, wait_test.go). Time
is a FakeClock and randomness a scripted source: nothing here sleeps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from helpers.backoff import Backoff, wait_or_stop
from helpers.clock import FakeClock, RealClock, StopEvent

GUARD = 5.0
"""Real seconds before a wait that should succeed is declared a failure."""


class Fixed:
    """A "random" source that always returns the same value."""

    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def delays(backoff: Backoff, n: int) -> list[float]:
    return [round(backoff.next_delay(), 9) for _ in range(n)]


def test_doubles_up_to_the_cap__TestBackoff_Step() -> None:
    """backoff_test.go TestBackoff_Step: Duration 1 s, Factor 2, Cap 3 s -> 1, 2, 3 s."""
    backoff = Backoff(initial=1.0, factor=2.0, jitter=0.0, cap=3.0, clock=FakeClock())
    assert delays(backoff, 4) == [1.0, 2.0, 3.0, 3.0]


def test_an_initial_delay_above_the_cap_is_handed_out_once__delay() -> None:
    """backoff.go delay(): the cap limits only the next duration. client-go's
    wait.Backoff{Duration: 5s, Factor: 2, Cap: 3s} steps 5s, 3s, 3s; so do we, and again
    after a reset or a calm spell."""
    clock = FakeClock()
    backoff = Backoff(initial=5.0, factor=2.0, jitter=0.0, cap=3.0, clock=clock)
    assert delays(backoff, 3) == [5.0, 3.0, 3.0]
    backoff.reset()
    assert delays(backoff, 2) == [5.0, 3.0]
    clock.step(backoff.reset_after + 1)
    assert delays(backoff, 2) == [5.0, 3.0]


def test_client_go_reflector_defaults() -> None:
    """reflector.go: 800 ms, x2, cap 30 s (without jitter the bases are exact)."""
    backoff = Backoff(jitter=0.0, clock=FakeClock())
    assert delays(backoff, 8) == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


def test_jitter_adds_up_to_jitter_times_base__TestBackoffStepWithResetJitter() -> None:
    """wait_test.go TestBackoffStepWithResetJitter: Duration 1, Jitter 1 -> values in [1, 2]."""
    backoff = Backoff(initial=1.0, factor=1.0, jitter=1.0, cap=10.0, clock=FakeClock())
    values = delays(backoff, 50)
    assert all(1.0 <= v < 2.0 for v in values)
    assert len(set(values)) > 1, "jitter should vary the delays"


def test_jitter_is_applied_after_the_cap() -> None:
    """reflector.go's comment: with the defaults the delay settles in [30, 60) s."""
    backoff = Backoff(clock=FakeClock(), rng=Fixed(0.5))
    values = delays(backoff, 9)
    assert values[:3] == [1.2, 2.4, 4.8]  # base * 1.5
    assert values[-1] == 45.0  # cap 30 + 0.5 * 30


def test_resets_after_a_calm_spell__TestBackoffStepWithResetExponential() -> None:
    """wait_test.go TestBackoffStepWithResetExponential: 1, 2, 4, 8, 10, 10, 10; later 1 again.

    Ours measures the calm spell from the last backoff (client-go: from the last reset).
    """
    clock = FakeClock()
    backoff = Backoff(initial=1.0, factor=2.0, jitter=0.0, cap=10.0, reset_after=10.0, clock=clock)
    assert delays(backoff, 7) == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]
    clock.step(10.0)  # exactly reset_after: not yet calm long enough
    assert backoff.next_delay() == 10.0
    clock.step(11.0)
    assert delays(backoff, 2) == [1.0, 2.0]


def test_failures_closer_than_reset_after_keep_growing() -> None:
    """Failures every 60 s never let the 120 s reset happen: the delay stays at the cap."""
    clock = FakeClock()
    backoff = Backoff(jitter=0.0, clock=clock)
    seen = []
    for _ in range(10):
        seen.append(backoff.next_delay())
        clock.step(60.0)
    assert seen[-1] == 30.0


def test_reset_starts_over() -> None:
    backoff = Backoff(initial=1.0, jitter=0.0, clock=FakeClock())
    delays(backoff, 3)
    backoff.reset()
    assert backoff.next_delay() == 1.0


def test_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="factor >= 1"):
        Backoff(factor=0.5)


def test_wait_returns_true_once_the_delay_has_passed() -> None:
    """The waiter parks on the fake clock and wakes exactly when the delay is stepped past."""
    clock = FakeClock()
    backoff = Backoff(initial=2.0, jitter=0.0, clock=clock)
    stop = StopEvent()
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(backoff.wait(stop)), name="waiter")
    waiter.start()
    assert clock.wait_for_waiters(1, timeout=GUARD)
    clock.step(1.9)
    assert clock.wait_for_waiters(1, timeout=GUARD), "woke up before the delay"
    assert result == []
    clock.step(0.1)
    waiter.join(GUARD)
    assert result == [True]


class ObservedClock(RealClock):
    """Real time, and an Event set when a thread starts waiting on it.

    ``parked`` is set while the waiter still holds the stop's Condition, so a
    ``stop.set()`` made after ``parked`` fires can only run once the waiter is
    inside ``Condition.wait``: the test interrupts a real wait, never the
    already-stopped shortcut.
    """

    def __init__(self) -> None:
        self.parked = threading.Event()

    def wait_until(
        self, cond: threading.Condition, predicate: Callable[[], bool], deadline: float | None
    ) -> bool:
        self.parked.set()
        return super().wait_until(cond, predicate, deadline)


def test_wait_returns_false_at_once_when_stopped() -> None:
    """A stop interrupts a 30 s wait in real time: this is how a reflector stops promptly."""
    clock = ObservedClock()
    backoff = Backoff(initial=30.0, jitter=0.0, clock=clock)
    stop = StopEvent()
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(backoff.wait(stop)), name="waiter")
    waiter.start()
    assert clock.parked.wait(GUARD), "the waiter never started its 30 s wait"
    interrupted = time.monotonic()
    stop.set()
    waiter.join(GUARD)
    assert result == [False]
    assert time.monotonic() - interrupted < 10  # the stop, not the 30 s wait (busy machine room)


def test_wait_on_a_fake_clock_is_also_woken_by_stop() -> None:
    clock = FakeClock()
    stop = StopEvent()
    result: list[bool] = []
    waiter = threading.Thread(
        target=lambda: result.append(wait_or_stop(stop, 100.0, clock)), name="waiter"
    )
    waiter.start()
    assert clock.wait_for_waiters(1, timeout=GUARD)
    stop.set()
    waiter.join(GUARD)
    assert result == [True]


def test_wait_with_stop_already_set_does_not_wait() -> None:
    stop = StopEvent()
    stop.set()
    assert Backoff(initial=30.0, clock=RealClock()).wait(stop) is False
