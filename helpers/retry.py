"""Retry a write that lost a race: client-go's ``util/retry``, on the course's backoff.

:func:`retry_on_conflict` is ``retry.RetryOnConflict``: it calls ``update``
again while it fails with 409 Conflict, at most ``steps`` times, and waits
between tries as a :class:`helpers.backoff.Backoff` says; by default
:func:`default_retry`, client-go's ``retry.DefaultRetry`` (5 tries, 10 ms apart,
plus up to 10 % jitter:
https://github.com/kubernetes/client-go/blob/v0.36.3/util/retry/util.go#L25-L33).
As in ``wait.ExponentialBackoff``
(https://github.com/kubernetes/apimachinery/blob/v0.36.3/pkg/util/wait/backoff.go#L475-L486),
the last try is not followed by a wait, and the last conflict is what the
caller gets. Waiting goes through the backoff's :class:`helpers.clock.Clock`,
so a test steps a ``FakeClock`` instead of sleeping, and through a
:class:`~helpers.clock.StopEvent`, so a stopping controller does not wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kubernetes.client.exceptions import ApiException

from helpers.backoff import Backoff, RandomSource
from helpers.clock import Clock, StopEvent

T = TypeVar("T")

DEFAULT_STEPS = 5
"""Tries in all (``retry.DefaultRetry.Steps``)."""


def default_retry(*, clock: Clock | None = None, rng: RandomSource | None = None) -> Backoff:
    """client-go's ``retry.DefaultRetry`` as a :class:`~helpers.backoff.Backoff`: 10 ms each
    time (factor 1, so the cap is the start), plus up to 10 % jitter."""
    return Backoff(initial=0.01, factor=1.0, jitter=0.1, cap=0.01, clock=clock, rng=rng)


def retry_on_conflict(
    update: Callable[[], T],
    *,
    steps: int = DEFAULT_STEPS,
    backoff: Backoff | None = None,
    stop: StopEvent | None = None,
) -> T:
    """Call ``update`` until it does not fail with 409 Conflict, at most ``steps`` times.

    client-go ``retry.RetryOnConflict(retry.DefaultRetry, fn)``
    (https://github.com/kubernetes/client-go/blob/v0.36.3/util/retry/util.go#L103-L105).
    ``update`` must read the object afresh each time (from the API server: a cache
    may still hold the stale copy), apply its change, and write. Other errors, and
    the last conflict, are raised; so is a conflict when ``stop`` is set during a wait.
    """
    backoff = backoff if backoff is not None else default_retry()
    stop = stop if stop is not None else StopEvent()
    for attempt in range(1, steps + 1):
        try:
            return update()
        except ApiException as err:
            if err.status != 409 or attempt == steps:
                raise
            conflict = err
        if not backoff.wait(stop):
            raise conflict
    raise ValueError(f"steps must be at least 1, not {steps}")
