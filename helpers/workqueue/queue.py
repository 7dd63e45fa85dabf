"""The basic work queue: fair order, no duplicates, one worker per key.

client-go counterpart: ``util/workqueue/queue.go`` (``Type``, ``Interface``).

Why a controller wants this rather than ``queue.Queue``: a controller enqueues
*keys* ("namespace/name") and always reads the latest object from a cache, so
ten events for one key need only one sync. Three structures give that:

- ``_queue``: the order in which keys are handed out (a key appears at most once);
- ``_dirty``: keys that need processing (a key added twice is dirty once);
- ``_processing``: keys a worker holds between ``get()`` and ``done()``.

A key added while it is being processed is only marked dirty; ``done()`` puts it
back in line. So no two workers ever sync the same key at once, and a change that
arrives mid-sync is never lost.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from helpers.clock import Clock, RealClock
from helpers.workqueue.metrics import UPDATE_PERIOD, new_queue_metrics

T = TypeVar("T", bound=Hashable)


class Queue(Generic[T]):
    """A work queue of hashable items (client-go: ``workqueue.New`` / ``NewNamed``).

    ``name`` turns metrics on (``self.metrics``); an unnamed queue records none.
    ``clock`` is only used to time those metrics.
    """

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics_update_period: float = UPDATE_PERIOD,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else RealClock()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        self._lock = threading.Lock()
        # Two reasons to wait, two conditions on the one lock:
        self._has_items = threading.Condition(self._lock)  # get() waits for work
        self._idle = threading.Condition(self._lock)  # shut_down_with_drain() waits for done()
        self.metrics = new_queue_metrics(name, self._clock, metrics_update_period)
        self.metrics.start()

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing; a no-op if it already does."""
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            self.metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                return  # done() will queue it; a second worker must not get it now
            self._queue.append(item)
            self._has_items.notify()

    def get(self) -> tuple[T | None, bool]:
        """Block until an item is available; return ``(item, shutdown)``.

        ``shutdown`` is True only once the queue is shutting down *and* empty:
        items queued before the shutdown are still handed out. The caller must
        call ``done(item)`` when it has finished.
        """
        with self._lock:
            while not self._queue and not self._shutting_down:
                self._has_items.wait()
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            self.metrics.get(item)
            self._processing.add(item)
            self._dirty.discard(item)
            return item, False

    def done(self, item: T) -> None:
        """Finish ``item``; if it was added again meanwhile, queue it once more."""
        with self._lock:
            self.metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._has_items.notify()
            elif not self._processing:
                self._idle.notify_all()

    def len(self) -> int:
        """Items waiting to be handed out (not those in processing).

        A method rather than ``__len__`` on purpose: an empty queue must not be
        falsy, or ``queue or Queue()`` would silently swap it for a new one.
        """
        with self._lock:
            return len(self._queue)

    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down

    def shut_down(self) -> None:
        """Stop accepting items and wake every worker; does not wait for them.

        Also releases a ``shut_down_with_drain()`` that is still waiting (a
        second Ctrl-C forces the exit).
        """
        with self._lock:
            self._drain = False
            self._begin_shutdown()
        self._stop_background()

    def shut_down_with_drain(self) -> None:
        """Like ``shut_down()``, then wait until every item in processing is done.

        Workers must keep calling ``done()``, or this waits forever; a later
        ``shut_down()`` cuts the wait short.
        """
        with self._lock:
            self._drain = True
            self._begin_shutdown()
        self._stop_background()
        with self._lock:
            while self._processing and self._drain:
                self._idle.wait()

    def _begin_shutdown(self) -> None:
        """Set the flag and wake all waiters (caller holds the lock)."""
        self._shutting_down = True
        self._has_items.notify_all()
        self._idle.notify_all()

    def _stop_background(self) -> None:
        """Stop and join this queue's threads; subclasses add theirs."""
        self.metrics.stop()
