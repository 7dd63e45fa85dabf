"""SharedInformer: one LIST+WATCH, one cache, many event handlers.

client-go counterpart: ``tools/cache/shared_informer.go`` (``sharedIndexInformer``,
``sharedProcessor``, ``processorListener``, ``WaitForCacheSync``),
``the_real_fifo.go`` (``RealFIFO``) and ``controller.go`` (``processDeltas``).

How the pieces meet, one thread per box::

    reflector thread          processing thread                 one thread per handler
    LIST/WATCH  --deltas-->   RealFIFO --pop--> indexer (cache)
                                          \\--> buffer --> on_add / on_update / on_delete
                                           \\-> buffer --> on_add / on_update / on_delete

1. The reflector writes every change into :class:`RealFIFO`, an in-order queue
   (a deque and a Condition). A LIST becomes a single ``ReplacedAll`` delta.
2. The processing thread pops one delta at a time, applies it to
   ``self.indexer`` (so the cache is updated *before* any handler hears of the
   change, and a handler that reads the lister sees at least that state), then
   hands a notification to every handler's buffer. For ``ReplacedAll`` it
   replaces the cache, then sends ``on_delete(DeletedFinalStateUnknown(key,
   last known))`` for keys the new list lacks (deletes we missed while not
   watching), then ``on_update(old, new)`` or ``on_add`` in list order.
   Updates whose old and new resourceVersion are equal (a re-list of an
   unchanged object, or a resync) go only to handlers whose resync is due.
3. Each handler registration has its own unbounded buffer and its own thread,
   and calls its handler sequentially. A slow handler delays only itself:
   neither the watch, nor the cache, nor the other handlers.

Resync replays the cache (no re-list) to the handlers whose period is due;
periods are per handler, at least 1 s, and checked every "resync check period",
the smallest period asked for before ``start()`` (client-go
``TestResyncCheckPeriod``).

How this differs from client-go:

* DeltaFIFO (client-go up to v0.32) keeps one queue entry per key and merges
  deltas for the same key; RealFIFO (v0.33+, the only choice since v0.36) keeps
  every delta in order. Ours is RealFIFO-like: in order, no merging. Unlike
  both, it holds objects, not keys, and has no ``knownObjects``: the tombstones
  for a re-list are computed when the ``ReplacedAll`` delta is applied, against
  the cache at that moment, which is exactly when the cache learns the truth.
* Resync is done by the processing thread itself on a clock deadline, instead
  of a reflector timer that queues ``SyncAll`` deltas; since one thread applies
  deltas and resyncs, the order is the same.
* Bookmarks do not enter the FIFO (only the reflector's resourceVersion moves).
* A handler that raises is logged and skipped; client-go crashes the process by
  default (``HandleCrash``).
* ``wait_for_cache_sync`` blocks on a Condition that the informer notifies;
  client-go's ``WaitForCacheSync`` polls ``HasSynced`` every 100 ms.
* ``transform`` defaults to stripping managedFields (client-go's default is
  no transform) and runs while a LIST is decoded, not after.
* No cache mutation detector, no watch-error handler hook.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from helpers.backoff import Backoff
from helpers.clock import Clock, RealClock, StopEvent
from helpers.lister import Lister
from helpers.listwatch import ListerWatcher, Transform
from helpers.reflector import Reflector
from helpers.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    IndexFunc,
    meta_namespace_key,
    namespace_index_func,
)

log = logging.getLogger("helpers.informer")

MINIMUM_RESYNC_PERIOD = 1.0
"""Handlers may not ask for a resync more often than this (client-go ``minimumResyncPeriod``)."""

JOIN_TIMEOUT = 30.0
"""How long leaving a ``with informer:`` block waits for the threads to end."""

AddFunc = Callable[[Any, bool], None]
UpdateFunc = Callable[[Any, Any], None]
DeleteFunc = Callable[[Any], None]


class InformerStoppedError(RuntimeError):
    """Raised when a handler is added to an informer that has been stopped."""


class EventHandler(Protocol):
    """An object with client-go's three callbacks (``ResourceEventHandler``); each is optional."""

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: Any, new: Any) -> None: ...

    def on_delete(self, obj: Any) -> None: ...


# --- the FIFO between the reflector and the processing thread ---------------------


ADDED, UPDATED, DELETED, REPLACED_ALL = "Added", "Updated", "Deleted", "ReplacedAll"


@dataclass(frozen=True)
class Delta:
    """One change, in the order the reflector saw it (client-go ``Delta``).

    For ``ReplacedAll`` ``obj`` is the list of every object, and
    ``resource_version`` the list's resourceVersion.
    """

    type: str
    obj: Any
    resource_version: str = ""


def strip_managed_fields(obj: Any) -> Any:
    """Drop ``metadata.managedFields`` (server-side apply bookkeeping) from a cached object.

    client-go: ``cache.TransformStripManagedFields``, used with
    ``SetTransform``. Controllers almost never read managedFields, and they are
    often the largest part of a small object: dropping them roughly halves the
    memory of a cache of ConfigMaps. The reflector runs it on each object as it
    is decoded, so cache and handlers see the same, smaller object.
    """
    if isinstance(obj, dict):
        metadata = obj.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)
    return obj


class RealFIFO:
    """An in-order queue of deltas: the reflector's sink (client-go ``RealFIFO``).

    Nothing is merged or dropped; the consumer sees every change in order.
    After ``close()`` writes are ignored and ``pop`` returns None.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deltas: deque[Delta] = deque()
        self._closed = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._deltas)

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    # The reflector's store interface.

    def add(self, obj: Any) -> None:
        self._push(Delta(ADDED, obj))

    def update(self, obj: Any) -> None:
        self._push(Delta(UPDATED, obj))

    def delete(self, obj: Any) -> None:
        self._push(Delta(DELETED, obj))

    def replace(self, items: list[Any], resource_version: str) -> None:
        self._push(Delta(REPLACED_ALL, list(items), resource_version))

    # The consumer's side.

    def pop(self, clock: Clock, deadline: float | None = None) -> Delta | None:
        """The oldest delta; None when closed, or when ``deadline`` (clock time) passes first."""
        with self._cond:
            clock.wait_until(self._cond, lambda: bool(self._deltas) or self._closed, deadline)
            if self._closed or not self._deltas:
                return None
            return self._deltas.popleft()

    def close(self) -> None:
        """Wake the consumer and refuse further deltas."""
        with self._cond:
            self._closed = True
            self._deltas.clear()
            self._cond.notify_all()

    def _push(self, delta: Delta) -> None:
        with self._cond:
            if self._closed:
                return
            self._deltas.append(delta)
            self._cond.notify_all()


# --- "has synced", without polling ---------------------------------------------------


class SyncSignal:
    """A one-way flag that turns on once, and can wake a waiter watching several flags.

    client-go ``DoneChecker`` (a ``Done()`` channel). A ``threading.Event``
    cannot wake a thread that waits for "all of these, or stop"; this can,
    because waiters hand it the Condition they sleep on.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._set = False
        self._abandoned = False  # stopped before it synced: it never will
        self._waiters: list[threading.Condition] = []

    def __repr__(self) -> str:
        return f"<SyncSignal {self.name} set={self._set}>"

    def is_set(self) -> bool:
        return self._set

    def abandoned(self) -> bool:
        """True if the owner stopped before it synced, so waiting is pointless."""
        return self._abandoned and not self._set

    def set(self) -> None:
        self._change(lambda: setattr(self, "_set", True))

    def abandon(self) -> None:
        self._change(lambda: setattr(self, "_abandoned", True))

    def subscribe(self, cond: threading.Condition) -> None:
        with self._lock:
            self._waiters.append(cond)

    def unsubscribe(self, cond: threading.Condition) -> None:
        with self._lock:
            if cond in self._waiters:
                self._waiters.remove(cond)

    def _change(self, change: Callable[[], None]) -> None:
        with self._lock:
            change()
            waiters = list(self._waiters)
        for cond in waiters:  # never while holding our lock: waiters hold theirs
            with cond:
                cond.notify_all()


# --- one handler: its buffer and its thread -------------------------------------------


@dataclass(frozen=True)
class _Add:
    obj: Any
    is_in_initial_list: bool


@dataclass(frozen=True)
class _Update:
    old: Any
    new: Any


@dataclass(frozen=True)
class _Delete:
    obj: Any


_Notification = _Add | _Update | _Delete


class HandlerRegistration:
    """One handler on an informer: its own buffer, its own thread (client-go ``processorListener``).

    Returned by :meth:`SharedInformer.add_event_handler`. ``has_synced()`` is
    true once the informer has synced *and* this handler has finished the adds
    of the initial list (client-go's registration ``HasSynced``).
    """

    def __init__(
        self,
        *,
        name: str,
        thread_name: str,
        on_add: AddFunc | None,
        on_update: UpdateFunc | None,
        on_delete: DeleteFunc | None,
        requested_resync_period: float,
        resync_period: float,
        next_resync: float,
    ) -> None:
        self.name = name
        self.requested_resync_period = requested_resync_period
        """The period asked for (after the 1 s minimum)."""
        self.resync_period = resync_period
        """The period in force: 0 (never), or at least the informer's resync check period."""
        self.next_resync = next_resync
        self.synced = SyncSignal(f"handler {name}")
        self.handled = 0
        """Notifications handed to the handler so far."""
        self._on_add = on_add
        self._on_update = on_update
        self._on_delete = on_delete
        self._thread_name = thread_name
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self._buffer: deque[_Notification] = deque()
        self._stopping = False
        self._busy = False  # a callback is running
        self._pending_initial = 0
        self._upstream_synced = False

    def __repr__(self) -> str:
        return (
            f"<HandlerRegistration {self.name} resync={self.resync_period}s "
            f"pending={self.pending()} synced={self.has_synced()}>"
        )

    def has_synced(self) -> bool:
        """True once the informer synced and this handler handled every initial add."""
        return self.synced.is_set()

    def pending(self) -> int:
        """Notifications waiting in this handler's buffer."""
        with self._cond:
            return len(self._buffer)

    def wait_until_idle(self, timeout: float | None = None) -> bool:
        """Block until the buffer is empty and no callback runs; False on timeout.

        For tests and notebooks: "has this handler caught up with what it was given?"
        """
        with self._cond:
            return self._cond.wait_for(
                lambda: self._stopping or not (self._buffer or self._busy), timeout
            )

    def join(self, timeout: float | None = None) -> bool:
        """Wait for this handler's thread to end (after removal or stop); True if it has."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    # -- driven by the informer ---------------------------------------------------------

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._thread_name)
        self._thread.start()

    def _enqueue(self, notification: _Notification) -> None:
        with self._cond:
            if self._stopping:
                return
            if isinstance(notification, _Add) and notification.is_in_initial_list:
                self._pending_initial += 1
            self._buffer.append(notification)
            self._cond.notify_all()

    def _mark_upstream_synced(self) -> None:
        with self._cond:
            self._upstream_synced = True
            now_synced = self._pending_initial == 0
        if now_synced:
            self.synced.set()

    def _stop(self) -> None:
        """Drop what is buffered and end the thread after the call in progress."""
        with self._cond:
            self._stopping = True
            self._buffer.clear()
            self._cond.notify_all()
        self.synced.abandon()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._buffer or self._stopping)
                if self._stopping:
                    return
                notification = self._buffer.popleft()
                self._busy = True
            try:
                self._dispatch(notification)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _dispatch(self, notification: _Notification) -> None:
        try:
            if isinstance(notification, _Add):
                if self._on_add is not None:
                    self._on_add(notification.obj, notification.is_in_initial_list)
            elif isinstance(notification, _Update):
                if self._on_update is not None:
                    self._on_update(notification.old, notification.new)
            elif self._on_delete is not None:
                self._on_delete(notification.obj)
        except Exception:
            log.exception("handler %s raised; skipping that notification", self.name)
        finally:
            self.handled += 1
            if isinstance(notification, _Add) and notification.is_in_initial_list:
                with self._cond:
                    self._pending_initial -= 1
                    now_synced = self._upstream_synced and self._pending_initial == 0
                if now_synced:
                    self.synced.set()


def _determine_resync_period(desired: float, check: float, name: str) -> float:
    """client-go ``determineResyncPeriod``: 0 stays 0; never below the check period."""
    if desired == 0:
        return 0.0
    if check == 0:
        log.warning(
            "handler %s asked for a %.1fs resync, but the informer resyncs never "
            "(resync_period=0); it will not resync",
            name,
            desired,
        )
        return 0.0
    if desired < check:
        log.warning(
            "handler %s: resync period %.1fs raised to the resync check period %.1fs",
            name,
            desired,
            check,
        )
        return check
    return desired


# --- the informer -------------------------------------------------------------------------


class SharedInformer:
    """A cache of one collection, kept current by a reflector, shared by many handlers.

    client-go ``sharedIndexInformer``. ``self.indexer`` is the cache (indexed by
    namespace unless ``indexers`` says otherwise), ``self.reflector`` the
    LIST/WATCH loop, ``self.fifo`` the queue between them.

    ``transform`` runs on every object before it is cached or handed to
    handlers. The default, :func:`strip_managed_fields`, is the transform most
    controllers set in client-go; client-go's own default is none. Pass
    ``transform=None`` to keep objects exactly as the API server sent them.
    """

    def __init__(
        self,
        list_watch: ListerWatcher,
        *,
        name: str,
        resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
        min_watch_timeout: float = 300.0,
        page_size: int = 500,
        read_timeout: float | None = None,
        transform: Transform | None = strip_managed_fields,
    ) -> None:
        if clock is None:
            clock = backoff.clock if backoff is not None else RealClock()
        self.name = name
        self.list_watch = list_watch
        self._clock = clock
        self.indexer = Indexer(
            indexers if indexers is not None else {NAMESPACE_INDEX: namespace_index_func}
        )
        self.fifo = RealFIFO()
        self.reflector = Reflector(
            list_watch,
            self.fifo,
            name=name,
            page_size=page_size,
            min_watch_timeout=min_watch_timeout,
            read_timeout=read_timeout,
            backoff=backoff if backoff is not None else Backoff(clock=clock),
            clock=clock,
            transform=transform,
        )
        self.synced = SyncSignal(f"informer {name}")
        self._default_resync = max(0.0, resync_period)
        self._check_period = self._default_resync
        # Held while a delta is applied and distributed, and while handlers are
        # added or removed (client-go: startedLock + blockDeltas), so a new
        # handler's replay of the cache never interleaves with live events.
        self._lock = threading.RLock()
        self._handlers: list[HandlerRegistration] = []
        self._syncing: set[HandlerRegistration] = set()  # resync due at the last check
        self._next_check: float | None = None
        self._started = False
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._handler_numbers = itertools.count(1)

    def __repr__(self) -> str:
        return (
            f"<SharedInformer {self.name} objects={len(self.indexer)} "
            f"synced={self.has_synced()} handlers={len(self._handlers)}>"
        )

    # -- what a controller asks -------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the first LIST has been applied to the cache (client-go ``HasSynced``)."""
        return self.synced.is_set()

    @property
    def is_stopped(self) -> bool:
        with self._lock:
            return self._stopped

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    @property
    def resync_check_period(self) -> float:
        """How often due resyncs are looked for: the smallest period asked for before start."""
        with self._lock:
            return self._check_period

    @property
    def handlers(self) -> tuple[HandlerRegistration, ...]:
        with self._lock:
            return tuple(self._handlers)

    def lister(self, resource: str | None = None, group: str | None = None) -> Lister:
        """A :class:`helpers.lister.Lister` over this informer's cache.

        The resource and group (used in NotFound messages) default to what the
        ListWatch's path names.
        """
        collection = getattr(self.list_watch, "collection", None)
        return Lister(
            self.indexer,
            resource if resource is not None else getattr(collection, "resource", "objects"),
            group if group is not None else getattr(collection, "group", ""),
        )

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indices to the cache; only before start (client-go refuses it after)."""
        with self._lock:
            if self._started:
                raise RuntimeError(f"informer {self.name} has already started")
            self.indexer.add_indexers(indexers)

    # -- handlers ---------------------------------------------------------------------------

    def add_event_handler(
        self,
        handler: EventHandler | None = None,
        *,
        on_add: AddFunc | None = None,
        on_update: UpdateFunc | None = None,
        on_delete: DeleteFunc | None = None,
        resync_period: float | None = None,
        name: str | None = None,
    ) -> HandlerRegistration:
        """Register callbacks (or an object with ``on_add/on_update/on_delete``).

        ``on_add(obj, is_in_initial_list)``, ``on_update(old, new)``,
        ``on_delete(obj_or_tombstone)``. ``resync_period`` defaults to the
        informer's. Added after start, the handler first gets every cached
        object as an add with ``is_in_initial_list=True``; its registration's
        ``has_synced()`` turns true once it has handled those.
        """
        if handler is not None:
            on_add = on_add or getattr(handler, "on_add", None)
            on_update = on_update or getattr(handler, "on_update", None)
            on_delete = on_delete or getattr(handler, "on_delete", None)
        number = next(self._handler_numbers)
        name = name or f"{self.name}-handler-{number}"
        with self._lock:
            if self._stopped:
                raise InformerStoppedError(
                    f"handler {name} was not added to shared informer {self.name} "
                    "because it has stopped already"
                )
            requested = self._resolve_resync_period(resync_period, name)
            registration = HandlerRegistration(
                name=name,
                thread_name=f"informer-{self.name}-handler-{number}",
                on_add=on_add,
                on_update=on_update,
                on_delete=on_delete,
                requested_resync_period=requested,
                resync_period=_determine_resync_period(requested, self._check_period, name),
                next_resync=self._clock.now() + requested,
            )
            self._handlers.append(registration)
            if self._started:
                registration._start()
                # Under the lock no delta is being applied, so the replay is a
                # consistent snapshot and live events queue up behind it.
                for obj in self.indexer.list():
                    registration._enqueue(_Add(obj, True))
                if self.synced.is_set():
                    registration._mark_upstream_synced()
        return registration

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        """Stop delivering to ``registration``; its buffer is dropped. Idempotent.

        Returns at once; ``registration.join()`` waits for a call in progress.
        """
        with self._lock:
            if registration in self._handlers:
                self._handlers.remove(registration)
            self._syncing.discard(registration)
        registration._stop()

    def _resolve_resync_period(self, requested: float | None, name: str) -> float:
        """client-go ``AddEventHandlerWithResyncPeriod``'s rules (call with the lock held)."""
        period = self._default_resync if requested is None else max(0.0, requested)
        if period == 0:
            return 0.0
        if period < MINIMUM_RESYNC_PERIOD:
            log.warning(
                "handler %s: resync period %.3fs is too small; using %.0fs",
                name,
                period,
                MINIMUM_RESYNC_PERIOD,
            )
            period = MINIMUM_RESYNC_PERIOD
        if period < self._check_period:
            if self._started:
                log.warning(
                    "handler %s: resync period %.1fs is below the resync check period %.1fs "
                    "of the running informer; using %.1fs",
                    name,
                    period,
                    self._check_period,
                    self._check_period,
                )
                period = self._check_period
            else:
                # Before start the check period may shrink; every handler's
                # effective period is recomputed against it.
                self._check_period = period
                for other in self._handlers:
                    other.resync_period = _determine_resync_period(
                        other.requested_resync_period, period, other.name
                    )
        return period

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the handler threads, the processing thread and the reflector."""
        with self._lock:
            if self._stopped:
                raise InformerStoppedError(f"informer {self.name} was stopped; make a new one")
            if self._started:
                log.warning("informer %s has already started; start() ignored", self.name)
                return
            self._started = True
            if self._check_period > 0:
                self._next_check = self._clock.now() + self._check_period
            for registration in self._handlers:
                registration._start()
            self._thread = threading.Thread(target=self._process_loop, name=f"informer-{self.name}")
            self._thread.start()
        self.reflector.start()

    def stop(self) -> None:
        """Stop the reflector, the processing thread and every handler thread. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            handlers = list(self._handlers)
        self.reflector.stop()
        self.fifo.close()
        for registration in handlers:
            registration._stop()
        self.synced.abandon()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for every thread to end; True if they all have within ``timeout`` seconds."""
        clock = RealClock()
        deadline = None if timeout is None else clock.now() + timeout

        def remaining() -> float | None:
            return None if deadline is None else max(0.0, deadline - clock.now())

        done = self.reflector.join(remaining())
        if self._thread is not None:
            self._thread.join(remaining())
            done = done and not self._thread.is_alive()
        for registration in self.handlers:
            done = registration.join(remaining()) and done
        return done

    def __enter__(self) -> SharedInformer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
        if not self.join(JOIN_TIMEOUT):
            log.warning(
                "informer %s: some threads still run %.0fs after stop (a handler stuck in a call?)",
                self.name,
                JOIN_TIMEOUT,
            )

    # -- the processing thread ---------------------------------------------------------------

    def _process_loop(self) -> None:
        """Pop deltas in order, apply each to the cache, then notify; resync when due."""
        while True:
            delta = self.fifo.pop(self._clock, self._next_check)
            if self.fifo.closed:
                return
            with self._lock:
                if delta is not None:
                    try:
                        self._apply(delta)
                    except Exception:
                        log.exception(
                            "informer %s: could not apply a %s delta", self.name, delta.type
                        )
                if self._next_check is not None and self._clock.now() >= self._next_check:
                    self._resync()

    def _apply(self, delta: Delta) -> None:
        """client-go ``processDeltas``: the cache first, then the handlers."""
        if delta.type == REPLACED_ALL:
            self._replace_all(delta.obj, delta.resource_version)
            return
        obj = delta.obj
        if delta.type == DELETED:
            self.indexer.delete(obj)
            self._distribute(_Delete(obj))
            return
        old = self.indexer.get_by_key(meta_namespace_key(obj))
        if old is None:
            self.indexer.add(obj)
            self._distribute(_Add(obj, False))
        else:
            self.indexer.update(obj)
            self._distribute(_Update(old, obj), sync=_same_version(old, obj))

    def _replace_all(self, items: list[Any], resource_version: str) -> None:
        initial = not self.synced.is_set()
        before = {key: self.indexer.get_by_key(key) for key in self.indexer.list_keys()}
        listed = {meta_namespace_key(obj) for obj in items}
        self.indexer.replace(items, resource_version)
        for key, last_known in before.items():
            if key not in listed:
                # Deleted while we were not watching: we never saw its final state.
                self._distribute(_Delete(DeletedFinalStateUnknown(key, last_known)))
        for obj in items:
            old = before.get(meta_namespace_key(obj))
            if old is None:
                self._distribute(_Add(obj, initial))
            else:
                self._distribute(_Update(old, obj), sync=_same_version(old, obj))
        if initial:
            self.synced.set()
            for registration in self._handlers:
                registration._mark_upstream_synced()
            log.info(
                "informer %s: synced %d objects at resourceVersion %s",
                self.name,
                len(items),
                resource_version,
            )

    def _resync(self) -> None:
        """Replay the cache to the handlers whose resync is due (client-go ``shouldResync``)."""
        now = self._clock.now()
        due = [h for h in self._handlers if h.resync_period > 0 and now >= h.next_resync]
        for registration in due:
            registration.next_resync = now + registration.resync_period
        self._syncing = set(due)
        if due:
            for obj in self.indexer.list():
                for registration in due:
                    registration._enqueue(_Update(obj, obj))
        self._next_check = now + self._check_period

    def _distribute(self, notification: _Notification, sync: bool = False) -> None:
        """To every handler; a sync (same resourceVersion) only to those whose resync is due."""
        for registration in self._handlers:
            if not sync or registration in self._syncing:
                registration._enqueue(notification)


def _same_version(old: Any, new: Any) -> bool:
    def version(obj: Any) -> Any:
        return (obj.get("metadata") or {}).get("resourceVersion")

    return version(old) is not None and version(old) == version(new)


# --- waiting for caches ---------------------------------------------------------------------


Syncable = SharedInformer | HandlerRegistration | SyncSignal | Callable[[], bool]


def wait_for_cache_sync(
    *has_synced: Syncable, timeout: float | None, stop: StopEvent | None = None
) -> bool:
    """Block until every informer/registration has synced; False on timeout or stop.

    Pass informers, handler registrations, or their ``has_synced`` methods.
    Nothing polls: each one notifies ``stop.condition`` when it syncs
    (or is stopped before syncing, which ends the wait early). client-go's
    ``WaitForCacheSync`` polls every 100 ms instead; its newer ``WaitFor`` waits
    on ``Done()`` channels, which is what this mirrors.
    """
    signals = [_signal_of(item) for item in has_synced]
    stop = stop if stop is not None else StopEvent()
    cond = stop.condition

    def finished() -> bool:
        if stop.is_set():
            return True
        return all(s.is_set() for s in signals) or any(s.abandoned() for s in signals)

    for signal in signals:
        signal.subscribe(cond)
    try:
        with cond:
            cond.wait_for(finished, timeout)
    finally:
        for signal in signals:
            signal.unsubscribe(cond)
    missing = [s.name for s in signals if not s.is_set()]
    if missing:
        log.info("caches not synced: %s", ", ".join(missing))
    return not missing


def _signal_of(item: Syncable) -> SyncSignal:
    if isinstance(item, SyncSignal):
        return item
    owner = getattr(item, "__self__", item)  # a bound has_synced method -> its object
    signal = getattr(owner, "synced", None)
    if isinstance(signal, SyncSignal):
        return signal
    raise TypeError(
        "wait_for_cache_sync needs informers or handler registrations (or their has_synced "
        f"methods), which announce when they sync; got {item!r}"
    )
