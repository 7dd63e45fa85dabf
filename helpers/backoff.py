"""Exponential backoff with jitter, reset after a quiet spell.

client-go counterpart: ``apimachinery/pkg/util/wait`` (``Backoff``, ``Backoff.Step``,
``Backoff.DelayWithReset``) as the reflector uses it in ``tools/cache/reflector.go``:
start at 800 ms, double each time, add up to 100 % random jitter, cap the base at
30 s, and start again from 800 ms once things have been calm for 2 minutes.

Why: a reflector that cannot reach the API server (refused connection, 403,
429, 410 storm) must not retry in a hot loop. Thousands of informers retrying
at the same instant would keep a recovering API server down, so each retry
waits longer than the last, and jitter spreads the retries of many clients.

Like client-go, jitter is added *after* the cap: at the cap the delay lies in
``[cap, cap * (1 + jitter))``, i.e. 30 to 60 s with the defaults. Capping the
jittered value instead would make every client that reached the cap retry at
exactly 30 s, in lock step, which is what jitter exists to prevent.

One deliberate difference: client-go resets the backoff when ``resetInterval``
has passed since the *last reset*; we reset when ``reset_after`` has passed since
the *last backoff*, i.e. after a calm spell, which is what the reset is meant to
detect.

Waiting goes through a :class:`helpers.clock.Clock`, so tests step a
``FakeClock`` instead of sleeping, and through the :class:`~helpers.clock.StopEvent` of
the thread that waits, so a stop interrupts a 30 s wait at once.
"""

from __future__ import annotations

import random
import threading
from typing import Protocol

from helpers.clock import Clock, RealClock, StopEvent

DEFAULT_INITIAL = 0.8
DEFAULT_FACTOR = 2.0
DEFAULT_JITTER = 1.0
DEFAULT_CAP = 30.0
DEFAULT_RESET_AFTER = 120.0


class RandomSource(Protocol):
    """Anything with ``random() -> float in [0, 1)``, e.g. ``random.Random``."""

    def random(self) -> float: ...


class Backoff:
    """Hands out growing delays, and waits them out (client-go ``wait.Backoff`` + reset).

    Thread-safe: several threads may share one backoff, as in client-go, and then
    every caller advances the same sequence.
    """

    def __init__(
        self,
        initial: float = DEFAULT_INITIAL,
        factor: float = DEFAULT_FACTOR,
        jitter: float = DEFAULT_JITTER,
        cap: float = DEFAULT_CAP,
        reset_after: float = DEFAULT_RESET_AFTER,
        *,
        clock: Clock | None = None,
        rng: RandomSource | None = None,
    ) -> None:
        if initial < 0 or factor < 1 or jitter < 0 or cap < 0 or reset_after < 0:
            raise ValueError(
                "backoff needs initial >= 0, factor >= 1, jitter >= 0, cap >= 0, reset_after >= 0"
            )
        self.initial = initial
        self.factor = factor
        self.jitter = jitter
        self.cap = cap
        self.reset_after = reset_after
        self._clock: Clock = clock if clock is not None else RealClock()
        self._rng: RandomSource = rng if rng is not None else random.Random()
        self._lock = threading.Lock()
        self._base = min(initial, cap)  # the un-jittered delay the next step will use
        self._last_backoff: float | None = None

    @property
    def clock(self) -> Clock:
        """The clock this backoff measures and waits with."""
        return self._clock

    def next_delay(self) -> float:
        """The next delay in seconds, advancing the sequence (client-go ``Backoff.Step``).

        The base doubles (times ``factor``) up to ``cap``; the returned delay is
        the base plus ``rand * jitter * base``. If more than ``reset_after``
        seconds passed since the previous call, the sequence starts over.
        """
        with self._lock:
            now = self._clock.now()
            if self._last_backoff is not None and now - self._last_backoff > self.reset_after:
                self._base = min(self.initial, self.cap)
            self._last_backoff = now
            base = self._base
            self._base = min(base * self.factor, self.cap)
        if self.jitter > 0:
            return base + self._rng.random() * self.jitter * base
        return base

    def reset(self) -> None:
        """Start the sequence over, as if the last backoff were long ago."""
        with self._lock:
            self._base = min(self.initial, self.cap)
            self._last_backoff = None

    def wait(self, stop: StopEvent) -> bool:
        """Wait the next delay, or less if ``stop`` is set. False means: stopped, give up."""
        delay = self.next_delay()
        return not wait_or_stop(stop, delay, self._clock)


def wait_or_stop(stop: StopEvent, seconds: float, clock: Clock) -> bool:
    """Wait ``seconds`` of ``clock`` time or until ``stop`` is set; True if stopped."""
    if stop.is_set():
        return True
    if seconds <= 0:
        return False
    cond = stop.condition
    with cond:
        return clock.wait_until(cond, stop.is_set, clock.now() + seconds)
