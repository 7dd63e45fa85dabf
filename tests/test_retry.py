"""helpers.retry: client-go's RetryOnConflict on the course's Backoff, stepped on a fake clock.

The waits between tries are client-go's ``retry.DefaultRetry`` (10 ms, plus up to 10 %
jitter), there is no wait after the last try, and only a 409 is tried again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from helpers.clock import FakeClock, StopEvent
from helpers.retry import DEFAULT_STEPS, default_retry, retry_on_conflict


class Half:
    """A random source that always says 0.5: half of the jitter."""

    def random(self) -> float:
        return 0.5


def failing(clock: FakeClock, statuses: list[int]) -> tuple[Callable[[], str], list[float]]:
    """An update that fails with ``statuses`` in turn, then writes; and when it was called."""
    calls: list[float] = []

    def update() -> str:
        calls.append(clock.now())
        if len(calls) <= len(statuses):
            raise ApiException(status=statuses[len(calls) - 1])
        return "written"

    return update, calls


def in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["result"] = work()
        except ApiException as err:
            done["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done


def test_two_conflicts_then_a_write_wait_default_retry_twice() -> None:
    clock = FakeClock()
    update, calls = failing(clock, [409, 409])
    backoff = default_retry(clock=clock, rng=Half())
    thread, done = in_thread(lambda: retry_on_conflict(update, backoff=backoff))
    for _ in range(2):
        assert clock.wait_for_waiters(1)
        clock.step(0.0105)  # 10 ms and half of the 10 % jitter
    thread.join(5)
    assert done == {"result": "written"}
    assert calls == pytest.approx([0.0, 0.0105, 0.021])


def test_the_last_conflict_is_raised_after_steps_tries_and_no_wait_after_it() -> None:
    clock = FakeClock()
    update, calls = failing(clock, [409] * DEFAULT_STEPS)
    thread, done = in_thread(lambda: retry_on_conflict(update, backoff=default_retry(clock=clock)))
    for _ in range(DEFAULT_STEPS - 1):
        assert clock.wait_for_waiters(1)
        clock.step(0.011)  # the most a wait with 10 % jitter can be
    thread.join(5)
    assert not thread.is_alive() and not clock.has_waiters()
    assert done["error"].status == 409 and len(calls) == DEFAULT_STEPS


def test_other_errors_are_raised_at_once() -> None:
    clock = FakeClock()
    update, calls = failing(clock, [409, 403])
    thread, done = in_thread(lambda: retry_on_conflict(update, backoff=default_retry(clock=clock)))
    assert clock.wait_for_waiters(1)
    clock.step(0.011)
    thread.join(5)
    assert done["error"].status == 403 and len(calls) == 2


def test_a_stop_during_the_wait_raises_the_conflict_without_waiting() -> None:
    clock = FakeClock()
    stop = StopEvent()
    update, calls = failing(clock, [409, 409])
    backoff = default_retry(clock=clock)
    thread, done = in_thread(lambda: retry_on_conflict(update, backoff=backoff, stop=stop))
    assert clock.wait_for_waiters(1)
    stop.set()
    thread.join(5)
    assert done["error"].status == 409 and len(calls) == 1 and clock.now() == 0.0
