"""A slow watch on purpose: the Foo informer's cache kept behind the API server, for one change.

:class:`SlowWatch` is a transform for the Foo informer (run by its reflector on
each object it decodes): armed with :meth:`SlowWatch.hold`, it holds the next
change of one Foo's status, and with it everything behind it, until
:meth:`SlowWatch.release`. Meanwhile the cache keeps the old Foo while the API
server already has the new one: chapter 06b shows a self-inflicted 409 Conflict
this way, without waiting for bad luck.

No client-go counterpart: an instrument written by hand. Chapter 06's bench
(:mod:`helpers.reconcile_bench`) builds a controller with it when asked.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from helpers.informer import SharedInformer, strip_managed_fields

HOLD_TIMEOUT = 30.0
"""Seconds a held change waits at most: a stopping informer must never hang here."""


class SlowWatch:
    """The Foo informer's transform: it can hold a Foo's next status change, like a slow watch.

    The reflector runs a transform on each object it decodes, before the
    object reaches the cache; while this one waits, the reflector reads
    nothing more, so the cache keeps the Foo as it was while the API server
    already has the new one. ``hold(name)`` arms it for the next change of Foo
    ``name``'s status (the controller's own status write: nobody else writes
    it here); ``release()`` lets it, and everything behind it, through.
    """

    def __init__(self) -> None:
        self.informer: SharedInformer | None = None
        self._lock = threading.Lock()
        self._armed: str | None = None
        self.held: dict[str, Any] | None = None
        self.reached = threading.Event()
        self._released = threading.Event()

    def hold(self, name: str) -> SlowWatch:
        with self._lock:
            self._armed, self.held = name, None
            self.reached.clear()
            self._released.clear()
        return self

    def release(self) -> None:
        with self._lock:
            self._armed = None
        self._released.set()

    def wait_reached(self, timeout: float = 30.0) -> dict[str, Any]:
        """Block until the held change has come; returns the Foo it carries."""
        if not self.reached.wait(timeout):
            raise TimeoutError(f"no status change of Foo {self._armed} came in {timeout:g} s")
        assert self.held is not None
        return self.held

    def __call__(self, obj: Any) -> Any:
        obj = strip_managed_fields(obj)
        if self._matches(obj):
            self.held = obj
            self.reached.set()
            self._released.wait(HOLD_TIMEOUT)  # never forever: a stopping informer must end
        return obj

    def _matches(self, obj: Any) -> bool:
        metadata = (obj.get("metadata") or {}) if isinstance(obj, Mapping) else {}
        with self._lock:
            if self._armed is None or metadata.get("name") != self._armed or self.informer is None:
                return False
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        cached = self.informer.indexer.get_by_key(key)
        return cached is not None and cached.get("status") != obj.get("status")
