"""A work queue that can add an item later.

client-go counterpart: ``util/workqueue/delaying_queue.go`` (``DelayingInterface``,
``NewDelayingQueueWithConfig``).

Why: a sync that failed should be retried, but not in a hot loop; "add this key
again in 40 ms" is how retries, backoff and periodic re-checks are expressed.

How: waiting items sit in a min-heap ordered by the time they become ready, plus
a dict item -> entry so an item waits at most once. A background thread (the
*waiting loop*) moves due items into the queue, then sleeps until the next one
is due, a new entry arrives, shutdown, or a 10 s heartbeat, whichever is first.

Two deliberate differences from client-go: ``add_after`` puts the entry into
the heap itself under a lock (client-go passes it to the loop over a channel);
and moving an entry earlier pushes a new heap entry and leaves the old one to
be skipped when it surfaces, because Python's ``heapq`` has no ``heap.Fix``.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from dataclasses import dataclass, field
from typing import Generic

from helpers.clock import Clock
from helpers.workqueue.metrics import UPDATE_PERIOD
from helpers.workqueue.queue import Queue, T

HEARTBEAT = 10.0
"""Longest the waiting loop sleeps, as insurance against a missed wake-up."""


@dataclass(order=True)
class _Entry(Generic[T]):
    ready_at: float
    seq: int  # ties keep insertion order, and items never get compared
    item: T = field(compare=False)


class DelayingQueue(Queue[T]):
    """A ``Queue`` with ``add_after`` (client-go: ``delayingType``)."""

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics_update_period: float = UPDATE_PERIOD,
        heartbeat: float = HEARTBEAT,
    ) -> None:
        super().__init__(name, clock=clock, metrics_update_period=metrics_update_period)
        self._heartbeat = heartbeat
        self._heap: list[_Entry[T]] = []
        self._waiting: dict[T, _Entry[T]] = {}  # the one live entry per item
        self._seq = itertools.count()
        self._changed = False  # a new entry the loop has not seen yet
        self._stop = threading.Event()
        self._wake = threading.Condition()  # guards the heap, the dict and _changed
        # daemon only so a queue nobody shut down cannot keep Python alive;
        # shut_down() is how it ends.
        self._loop_thread = threading.Thread(
            target=self._waiting_loop, name=f"workqueue-delay-{name or id(self)}", daemon=True
        )
        self._loop_thread.start()

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed.

        If ``item`` is already waiting, it keeps the earlier of the two times:
        a retry can be brought forward, never pushed back.
        """
        if self.shutting_down():
            return
        self.metrics.retry()
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.now() + delay
        with self._wake:
            if self._stop.is_set():
                return
            current = self._waiting.get(item)
            if current is not None and current.ready_at <= ready_at:
                return
            entry = _Entry(ready_at, next(self._seq), item)
            self._waiting[item] = entry  # an older entry still in the heap is now stale
            heapq.heappush(self._heap, entry)
            self._changed = True
            self._wake.notify()

    def waiting(self) -> list[tuple[T, float]]:
        """``(item, ready_at)`` for every item still waiting, soonest first."""
        with self._wake:
            entries = sorted(self._waiting.values())
        return [(entry.item, entry.ready_at) for entry in entries]

    def _waiting_loop(self) -> None:
        """Move due items into the queue; sleep until the next reason to look again."""
        while True:
            with self._wake:
                if self._stop.is_set():
                    return
                self._changed = False
                now = self._clock.now()
                due = self._pop_due(now)
                if not due:
                    deadline = now + self._heartbeat
                    if self._heap:
                        deadline = min(deadline, self._heap[0].ready_at)
                    self._clock.wait_until(self._wake, self._should_wake, deadline)
                    continue
            for item in due:  # outside our lock: add() takes the queue's lock
                self.add(item)

    def _should_wake(self) -> bool:
        return self._changed or self._stop.is_set()

    def _pop_due(self, now: float) -> list[T]:
        """Remove and return the items whose time has come (caller holds ``_wake``)."""
        due: list[T] = []
        while self._heap and self._heap[0].ready_at <= now:
            entry = heapq.heappop(self._heap)
            if self._waiting.get(entry.item) is entry:
                del self._waiting[entry.item]
                due.append(entry.item)
        self._drop_stale_head()
        return due

    def _drop_stale_head(self) -> None:
        """Discard superseded entries at the top, so the loop never wakes for them."""
        while self._heap and self._waiting.get(self._heap[0].item) is not self._heap[0]:
            heapq.heappop(self._heap)

    def _stop_background(self) -> None:
        """Stop the waiting loop and drop what is still waiting, then the metrics."""
        with self._wake:
            self._stop.set()
            self._heap.clear()
            self._waiting.clear()
            self._wake.notify_all()
        if self._loop_thread is not threading.current_thread():
            self._loop_thread.join()
        # super() names its class: the chapter writes this method in a cell of its own,
        # outside the class body, where a bare super() cannot tell which class it is in.
        super(DelayingQueue, self)._stop_background()  # noqa: UP008
