"""Injectable time, so tests step the clock instead of sleeping.

client-go counterpart: ``k8s.io/utils/clock`` (``Clock``, ``RealClock``) and
``k8s.io/utils/clock/testing`` (``FakeClock`` with ``Step`` and ``HasWaiters``).

Why: the backoff's waits (up to a minute, chapter 02a) and the workqueue's delays
(a retry in 5 ms, a heartbeat every 10 s, a metrics tick every 0.5 s) would make
tests slow and flaky if they really waited. Every component that waits takes a
``Clock``; production code gets ``RealClock``, tests and notebooks get
``FakeClock``, move time forward with ``step()``, and call ``wait_for_waiters()``
first so that the step reaches a thread that is really waiting. Chapter 02a
introduces these tools, and :class:`StopEvent`, where the backoff first waits.

Go waits on a timer channel inside a ``select``. The Python equivalent is
``threading.Condition.wait_for(predicate, timeout)``, so that is the one waiting
primitive a clock offers: ``wait_until(cond, predicate, deadline)``, where the
deadline is absolute, in the clock's own time. An absolute deadline cannot be
stretched by a ``step()`` that lands between reading ``now()`` and starting to
wait.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class Clock(Protocol):
    """What a component that waits needs from time: read it, and sleep until a deadline."""

    def now(self) -> float:
        """Monotonic time in seconds (only differences are meaningful)."""
        ...

    def wait_until(
        self,
        cond: threading.Condition,
        predicate: Callable[[], bool],
        deadline: float | None,
    ) -> bool:
        """Wait on ``cond`` until ``predicate()`` is true or ``now() >= deadline``.

        The caller holds ``cond``, exactly as for ``Condition.wait_for``; whoever
        makes the predicate true must ``notify`` ``cond``. ``deadline=None``
        waits for the predicate only. Returns the last value of ``predicate()``.
        """
        ...


class RealClock:
    """Wall time from ``time.monotonic`` (client-go: ``clock.RealClock``)."""

    def now(self) -> float:
        return time.monotonic()

    def wait_until(
        self,
        cond: threading.Condition,
        predicate: Callable[[], bool],
        deadline: float | None,
    ) -> bool:
        if deadline is None:
            return cond.wait_for(predicate)
        return cond.wait_for(predicate, timeout=max(0.0, deadline - self.now()))


@dataclass(eq=False)
class _Waiter:
    """One thread parked in ``FakeClock.wait_until``."""

    deadline: float
    cond: threading.Condition
    predicate: Callable[[], bool]
    fired: bool = False  # set by step() when the deadline has passed
    active: bool = True  # cleared by the waiting thread when it stops waiting


class FakeClock:
    """Time that only moves when a test calls ``step()`` (client-go: ``testing.FakeClock``).

    Every thread that waits registers a waiter with its deadline. ``step()``
    advances time and wakes the waiters that became due, so a background loop
    runs exactly when the test says so. ``has_waiters()`` and
    ``wait_for_waiters()`` tell a test that those loops are parked again, i.e.
    they have finished reacting to the last step, without sleeping.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._waiters: list[_Waiter] = []
        self._lock = threading.Lock()
        # Notified whenever a waiter registers or leaves; wait_for_waiters uses it.
        self._changed = threading.Condition(self._lock)
        self._generation = 0

    def now(self) -> float:
        with self._lock:
            return self._now

    def step(self, seconds: float) -> None:
        """Advance time by ``seconds`` and wake every waiter whose deadline passed."""
        with self._lock:
            self._now += seconds
            due = [w for w in self._waiters if w.deadline <= self._now]
            for waiter in due:
                waiter.fired = True
                self._waiters.remove(waiter)
            self._note_change()
        # Never hold the clock's lock while taking a caller's condition: the
        # caller holds its condition when it registers (lock order cond -> clock).
        for waiter in due:
            with waiter.cond:
                waiter.cond.notify_all()

    def wait_until(
        self,
        cond: threading.Condition,
        predicate: Callable[[], bool],
        deadline: float | None,
    ) -> bool:
        if predicate():
            return True
        waiter = _Waiter(math.inf if deadline is None else deadline, cond, predicate)
        with self._lock:
            if waiter.deadline <= self._now:
                return False
            self._waiters.append(waiter)
            self._note_change()
        try:
            while not waiter.fired and not predicate():
                cond.wait()
        finally:
            waiter.active = False  # still under cond, so has_waiters() sees it atomically
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                self._note_change()
        return predicate()

    def waiter_count(self) -> int:
        """How many threads are parked: waiting, not yet due, and not about to wake.

        A waiter whose predicate is already true (someone notified it) is on its
        way out, so it does not count; that is what makes this a reliable "the
        background loop has caught up" signal.
        """
        with self._lock:
            waiters = list(self._waiters)
        parked = 0
        for waiter in waiters:
            with waiter.cond:
                if waiter.active and not waiter.fired and not waiter.predicate():
                    parked += 1
        return parked

    def has_waiters(self) -> bool:
        """True if at least one thread is parked on this clock."""
        return self.waiter_count() > 0

    def wait_for_waiters(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block until ``count`` threads are parked; ``timeout`` is in real seconds.

        The timeout is only a failure guard for tests; no sleeping is involved,
        we wake whenever a waiter registers or leaves.
        """
        give_up = time.monotonic() + timeout
        while True:
            with self._lock:
                generation = self._generation
            if self.waiter_count() >= count:
                return True
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                return False

            def moved(seen: int = generation) -> bool:
                return self._generation != seen

            with self._lock:
                self._changed.wait_for(moved, remaining)

    def _note_change(self) -> None:
        """Record a change in the set of waiters (caller holds ``self._lock``)."""
        self._generation += 1
        self._changed.notify_all()


class StopEvent:
    """A one-way stop flag whose Condition is public (client-go: a ``stopCh``/``ctx.Done()``).

    Why not ``threading.Event``: its Condition is private, so a thread cannot
    wait for "stopped, or something else" (a deadline on a FakeClock, every
    cache synced) on one Condition. Here ``set()`` notifies ``condition``, and
    anyone may wait on it with their own predicate. The rest is Event's API.
    """

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self._set = False

    def set(self) -> None:
        with self.condition:
            self._set = True
            self.condition.notify_all()

    def is_set(self) -> bool:
        with self.condition:
            return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Block until set (or ``timeout`` seconds); True if set."""
        with self.condition:
            return self.condition.wait_for(lambda: self._set, timeout)
