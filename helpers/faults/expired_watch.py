"""A held watch that comes back too late: a real ``410`` on any cluster, with nothing restarted.

A watch held back (:class:`helpers.held_watch.HeldListWatch`) resumes from the
last resourceVersion its reflector saw. If the API server no longer serves that
version, it answers ``410 Gone``, the reflector lists again, and a delete missed
meanwhile reaches the handlers as a tombstone. Chapter 03a gets there by
compacting etcd by hand; the API server compacts on its own schedule (every 5
minutes by default), and only the local control plane lets the course reach etcd.
On kind, or on a cluster of your own, nobody can make a version expire on demand,
and restarting the API server (which also does it) is not for a shared cluster.

What does the same on any cluster: the API server refuses a watch from a version
older than the window of events it still keeps. Its watch cache answers "too old
resource version" (``410``, reason ``Expired``:
https://github.com/kubernetes/apiserver/blob/v0.36.3/pkg/storage/cacher/watch_cache.go#L876-L930),
and so does etcd for a compacted revision, where a resource has no watch cache. So
:meth:`ExpiringListWatch.release` with ``expired=True`` lets the held watch go
from :data:`EXPIRED`, resourceVersion 1, older than any window, instead of the
reflector's own: the reflector meets the ``410`` that compaction would have
brought, from the real API server, and must list again. Only the version is
swapped; the answer, the re-list and the tombstones are real.
"""

from __future__ import annotations

import threading
from typing import Any

from helpers.held_watch import HeldListWatch
from helpers.listwatch import ListWatch
from helpers.reflector import is_retriable_watch_error

EXPIRED = "1"
"""A resourceVersion older than any API server still serves (its first write): a watch from it
gets ``410 Gone``, too old."""


class _Swapping(ListWatch):
    """Below the gate: the WATCH that goes out after ``release(expired=True)`` asks from
    :data:`EXPIRED` (once), whatever version the reflector gave it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._expire_lock = threading.Lock()
        self._expire_next = False
        self.expired: list[str] = []  # the versions swapped for EXPIRED, in order

    def watch(self, resource_version: str, *args: Any, **kwargs: Any) -> Any:
        with self._expire_lock:
            swapped = self._expire_next
            if swapped:
                self._expire_next = False
                self.expired.append(resource_version)
                resource_version = EXPIRED
        try:
            return super().watch(resource_version, *args, **kwargs)
        except Exception as err:
            if swapped and is_retriable_watch_error(err):
                # Refused, or 429 (the API server's watch cache not ready yet): no answer
                # about the version; the reflector watches again from its own, which would
                # then be served. The expiry waits for the watch the server answers.
                with self._expire_lock:
                    self._expire_next = True
                    self.expired.pop()
            raise


class ExpiringListWatch(HeldListWatch, _Swapping):
    """A :class:`HeldListWatch` whose held watch can come back too late (``410``).

    ``hold(cut=True)`` ends the open watch and holds the next one at the gate;
    ``release(expired=True)`` lets it go from a version the API server no
    longer serves, as if compaction had passed the held one meanwhile.
    ``expired`` lists the versions the reflector asked for and did not get.
    """

    def release(self, *, expired: bool = False) -> None:
        """Let held and later watches through; with ``expired``, the next one asks from
        :data:`EXPIRED` and meets ``410``."""
        if expired:
            with self._expire_lock:
                self._expire_next = True
        super().release()
