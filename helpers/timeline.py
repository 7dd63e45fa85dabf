"""The reconcile loop as a record: every sync, every write, every informer event, on one clock.

No client-go counterpart: an instrument for looking at chapter 05's controller,
written by hand (chapters 06a and 06b use it from their first cells; a deep dive
of 06a says how it works; chapter 05 draws with it too). A :class:`TimelineRecorder` is a
:class:`helpers.controller.SyncObserver`: attached to a running
:class:`~helpers.controller.FooController` (``controller.observe``), it is told
in each worker's thread when a sync starts and ends, what it wrote and whether
that failed, and the delay a failed key was put back with. It also registers an
event handler of its own on the controller's two informers, so the events that
fill the queue are on the same clock, each with the key it puts in the queue.
The record is plain data (:class:`Sync`, :class:`Write`,
:class:`InformerEvent`), which chapters 05 and 06, the exercises and the tests
read and wait on.

Versions are part of the record, because they explain conflicts: a sync notes
the resourceVersions of the Foo and its Deployment it read from the listers
(``Sync.seen``; while it runs, what the caches held when it started), and a
write notes the version the API server answered with (``Write.version``). A
sync that read an older Foo than the controller's own last status write is a
*stale read* (:func:`stale_reads`), the cause of a self-inflicted 409 Conflict.

Drawing the record is :mod:`helpers.timeline_plot`'s job
(:class:`~helpers.timeline_plot.ReconcileTimeline`); this module imports no plotting library.

The cost: an observer call takes a lock and appends to a list, a few
microseconds against a sync's milliseconds of HTTP; a controller nobody
observes pays one attribute read per sync.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from helpers.apierrors import status_of
from helpers.controller import FOO_KIND, FooController, controller_of
from helpers.lister import NotFoundError
from helpers.store import DeletedFinalStateUnknown

SYNCED, FAILED, SKIPPED, RUNNING = "synced", "failed", "skipped", "running"
"""A sync's outcome: it wrote and returned; it raised (and was requeued); it returned without
writing anything (the Foo is gone or names no Deployment); it has not ended yet."""

STATUS_WRITE = "update Foo status"

MAX_LEVELS = 50_000
"""Queue levels kept (the oldest are dropped)."""


# --- the record ------------------------------------------------------------------------------


@dataclass
class Write:
    """One API write a sync made, ``at`` seconds after the recorder started."""

    at: float
    worker: str
    verb: str  # "create Deployment", "update Deployment", "update Foo status", "Event Synced"...
    name: str
    error: str | None = None
    version: str = ""  # the resourceVersion the API server answered with ("" if none or failed)


@dataclass
class Sync:
    """One call of ``sync_handler`` by one worker, from ``started`` to ``ended``."""

    worker: str
    key: str
    started: float
    ended: float | None = None
    outcome: str = RUNNING
    error: str | None = None
    requeue_after: float | None = None  # set when it failed: the rate limiter's delay...
    requeued_at: float | None = None  # ...counted from here (a moment before ``ended``)
    remembered: int | None = None  # the failures the rate limiter held for the key as it ended
    writes: list[Write] = field(default_factory=list)
    seen: dict[str, str] = field(default_factory=dict)  # kind -> the resourceVersion it read

    @property
    def duration(self) -> float | None:
        return None if self.ended is None else self.ended - self.started

    def end(self, now: float) -> float:
        """When it ended, or ``now`` while it runs."""
        return self.ended if self.ended is not None else now


@dataclass(frozen=True)
class InformerEvent:
    """An event an informer delivered: ``kind`` Foo or Deployment, ``type`` add, update, delete
    or resync (an update with the same resourceVersion); ``changed``: which parts differ;
    ``version``: the object's resourceVersion; ``key``: the Foo key the controller's handler
    puts in the queue for it ("" when none: a Deployment no Foo controls)."""

    at: float
    kind: str
    type: str
    name: str
    changed: tuple[str, ...] = ()
    version: str = ""
    key: str = ""


@dataclass(frozen=True)
class QueueLevel:
    """The controller's queue at one moment: keys ready for a worker (the queue's length),
    keys a worker holds (between ``get`` and ``done``), and keys waiting out a retry delay
    (client-go's ``workqueue_depth`` counts a key only once its delay is over)."""

    at: float
    ready: int
    in_flight: int
    waiting: int


# --- the recorder ----------------------------------------------------------------------------


class TimelineRecorder:
    """Records a FooController's syncs, writes and informer events (a ``SyncObserver``).

    ``TimelineRecorder(controller)`` attaches at once; :meth:`detach` stops
    recording (the record stays). Times are seconds since ``started_at``, a
    ``time.monotonic()`` reading (default: now).
    """

    def __init__(
        self, controller: FooController | None = None, *, started_at: float | None = None
    ) -> None:
        self.started_at = time.monotonic() if started_at is None else started_at
        self.controller: FooController | None = None
        self._changed = threading.Condition(threading.RLock())  # guards everything below
        self._syncs: list[Sync] = []  # in the order they started
        self._running: dict[str, Sync] = {}  # worker thread name -> the sync it is in
        self._writes: list[Write] = []
        self._events: list[InformerEvent] = []
        self._levels: list[QueueLevel] = []
        self._registrations: list[tuple[Any, Any]] = []
        self._answers = threading.local()  # the version the last write answered with
        if controller is not None:
            self.attach(controller)

    def now(self) -> float:
        """Seconds since the recorder started: the clock of everything it records."""
        return time.monotonic() - self.started_at

    # -- attaching ------------------------------------------------------------------------

    def attach(self, controller: FooController) -> TimelineRecorder:
        """Observe ``controller`` (another one, if attached before) from now on."""
        self.detach()
        self.controller = controller
        controller.observe(self)
        # Inside the observing wrapper, so the version is known when ``wrote`` is called.
        observed = controller.clients
        # observe() put its wrapper in place of the Clients: it has .inner, the Protocol does not
        # (hence the ignore)
        observed.inner = _Answers(observed.inner, self._answers)  # type: ignore[attr-defined]
        # And the listers, so that a sync's record says which versions it really read.
        # (stand-ins with the Lister's namespace() and get(): mypy wants Listers, so the ignores)
        controller.foos_lister = _Reads(controller.foos_lister, "Foo", self._answers)  # type: ignore[assignment]
        controller.deployments_lister = _Reads(  # type: ignore[assignment]
            controller.deployments_lister, "Deployment", self._answers
        )
        for informer, kind in [
            (controller.foo_informer, "Foo"),
            (controller.deployment_informer, "Deployment"),
        ]:
            registration = informer.add_event_handler(
                on_add=functools.partial(self._added, kind),
                on_update=functools.partial(self._update, kind),
                on_delete=functools.partial(self._event, kind, "delete"),
                name="timeline",
            )
            self._registrations.append((informer, registration))
        return self

    def detach(self) -> None:
        """Stop observing; what was recorded stays."""
        controller = self.controller
        if controller is None:
            return
        controller.observe(None)
        if isinstance(controller.clients, _Answers):
            controller.clients = controller.clients.inner
        for name in ("foos_lister", "deployments_lister"):
            lister = getattr(controller, name)
            if isinstance(lister, _Reads):
                setattr(controller, name, lister.inner)
        for informer, registration in self._registrations:
            informer.remove_event_handler(registration)
        self._registrations.clear()
        self.controller = None

    # -- the observer hook (called in the workers' threads) ----------------------------------

    def sync_started(self, key: str) -> None:
        seen = self._cached_versions(key)
        self._answers.read = {}  # filled by the listers as the sync reads
        self.sample_queue()
        with self._changed:
            sync = Sync(threading.current_thread().name, key, self.now(), seen=seen)
            self._running[sync.worker] = sync
            self._syncs.append(sync)
            self._changed.notify_all()

    def wrote(self, verb: str, name: str, error: Exception | None) -> None:
        worker = threading.current_thread().name
        version = "" if error is not None else getattr(self._answers, "version", "")
        self._answers.version = ""
        with self._changed:
            failure = None if error is None else one_line(error)
            write = Write(self.now(), worker, verb, name, failure, version)
            self._writes.append(write)
            if worker in self._running:
                self._running[worker].writes.append(write)
            self._changed.notify_all()

    def requeued(self, key: str, delay: float) -> None:
        with self._changed:
            sync = self._running.get(threading.current_thread().name)
            if sync is not None and sync.key == key:
                sync.requeue_after, sync.requeued_at = delay, self.now()

    def sync_finished(self, key: str, error: Exception | None) -> None:
        self.sample_queue()
        with self._changed:
            sync = self._running.pop(threading.current_thread().name, None)
            if sync is None:  # it started before we attached
                return
            sync.ended = self.now()
            # Read here, between forget (or add_rate_limited) and done: a later read could meet
            # the key's next sync, which may already have failed again.
            queue = getattr(self.controller, "workqueue", None)
            sync.remembered = None if queue is None else queue.num_requeues(key)
            sync.seen.update(getattr(self._answers, "read", {}))  # what it read, if it did
            self._answers.read = {}
            if error is not None:
                sync.outcome, sync.error = FAILED, one_line(error)
            else:
                sync.outcome = SYNCED if sync.writes else SKIPPED
            self._changed.notify_all()

    def _cached_versions(self, key: str) -> dict[str, str]:
        """The versions of the Foo and its Deployment in the caches now: until the sync has read
        them itself (a moment later, these or newer ones), they stand for what it read."""
        controller = self.controller
        namespace, _, name = key.rpartition("/")
        seen: dict[str, str] = {}
        if controller is None:
            return seen
        foos, deployments = controller.foos_lister, controller.deployments_lister
        foos, deployments = getattr(foos, "inner", foos), getattr(deployments, "inner", deployments)
        try:
            foo = foos.namespace(namespace).get(name)
            seen["Foo"] = foo["metadata"].get("resourceVersion", "")
            deployment_name = (foo.get("spec") or {}).get("deploymentName") or ""
            deployment = deployments.namespace(namespace).get(deployment_name)
            seen["Deployment"] = deployment["metadata"].get("resourceVersion", "")
        except NotFoundError:
            pass
        return seen

    # -- informer events ------------------------------------------------------------------

    def _event(self, kind: str, event_type: str, obj: Any, changed: tuple[str, ...] = ()) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        metadata = (obj.get("metadata") or {}) if isinstance(obj, Mapping) else {}
        name, version = metadata.get("name", "?"), metadata.get("resourceVersion", "")
        key = _queue_key(kind, obj) if isinstance(obj, Mapping) else ""
        self.sample_queue()
        with self._changed:
            event = InformerEvent(self.now(), kind, event_type, name, changed, version, key)
            self._events.append(event)
            self._changed.notify_all()

    def _added(self, kind: str, obj: Any, initial: bool) -> None:
        if not initial:  # the first list's objects were there before the recording started
            self._event(kind, "add", obj)

    def _update(self, kind: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if _version(old) == _version(new):
            self._event(kind, "resync", new)
            return
        parts = ("spec", "status", "metadata")
        changed = tuple(part for part in parts if _part(old, part) != _part(new, part))
        self._event(kind, "update", new, changed)

    def sample_queue(self) -> None:
        """Note the controller's queue levels now (at each hook call, event, and picture tick)."""
        controller = self.controller
        if controller is None:
            return
        queue = controller.workqueue
        waiting = getattr(queue, "waiting", None)  # a delaying queue's keys still in their delay
        level = QueueLevel(self.now(), queue.len(), queue.in_flight(),
                           len(waiting()) if waiting is not None else 0)  # fmt: skip
        with self._changed:
            self._levels.append(level)
            del self._levels[:-MAX_LEVELS]

    # -- reading and waiting ---------------------------------------------------------------

    def syncs(self, key: str | None = None, since: float = 0.0) -> list[Sync]:
        """Copies of the syncs that started at or after ``since`` (of ``key``, if given)."""
        with self._changed:
            return [
                dataclasses.replace(s, writes=list(s.writes), seen=dict(s.seen))
                for s in self._syncs
                if s.started >= since and (key is None or s.key == key)
            ]

    def writes(self, since: float = 0.0) -> list[Write]:
        with self._changed:
            return [w for w in self._writes if w.at >= since]

    def events(self, since: float = 0.0) -> list[InformerEvent]:
        with self._changed:
            return [e for e in self._events if e.at >= since]

    def levels(self, since: float = 0.0) -> list[QueueLevel]:
        """The queue levels noted at or after ``since``, in time order."""
        with self._changed:
            return sorted((q for q in self._levels if q.at >= since), key=lambda q: q.at)

    def wait_for(
        self, condition: Callable[[TimelineRecorder], Any], what: str, timeout: float = 30.0
    ) -> None:
        """Block until ``condition(self)`` holds (checked at each change); raise at ``timeout``."""
        with self._changed:
            if not self._changed.wait_for(lambda: condition(self), timeout):
                raise TimeoutError(f"waited {timeout:g} s for {what}, in vain")

    def wait_synced(self, key: str, since: float, timeout: float = 30.0) -> Sync:
        """Wait for a sync of ``key`` that started at or after ``since`` and did not fail."""

        def done(recorder: TimelineRecorder) -> bool:
            return any(s.outcome in (SYNCED, SKIPPED) for s in recorder.syncs(key, since))

        self.wait_for(done, f"a successful sync of {key} after t+{since:.3f}s", timeout)
        return next(s for s in self.syncs(key, since) if s.outcome in (SYNCED, SKIPPED))

    def wait_dropped(self, key: str, since: float, timeout: float = 30.0) -> None:
        """Wait until the Foo informer has delivered the delete of ``key`` (at or after
        ``since``) and no sync of ``key`` is running.

        From then on no sync can act for that Foo: the cache no longer holds it
        (an informer updates its cache before it tells the handlers), so every
        later sync of the key finds it gone. Until then, a sync may still
        create its Deployment: the garbage collector can delete the Deployment
        before our Foo informer hears that the Foo is gone, and that delete
        enqueues the Foo through ``handle_object`` (chapter 05 meets it).
        """

        def dropped(recorder: TimelineRecorder) -> bool:
            heard = any(
                (event.kind, event.type, event.key) == (FOO_KIND, "delete", key)
                for event in recorder.events(since)
            )
            return heard and all(sync.ended is not None for sync in recorder.syncs(key))

        self.wait_for(dropped, f"the Foo informer to drop {key}, and its syncs to end", timeout)

    def wait_saw(
        self, kind: str, name: str, version: str, timeout: float = 30.0, *, failed: bool = True
    ) -> Sync:
        """Wait for a finished sync that read ``version`` of ``kind`` ``name``, or a later one.

        With ``failed=False``, only a sync that did not fail counts: the one that
        acted on the change, when the first try met a 409 (another writer came
        first) and its retry read the newer version.

        "Later" in the order the informer delivered the versions: a watch
        delivers an object's versions in the order they were written (and
        since Kubernetes 1.35 a client may also compare two versions of one
        resource, by length and then digit by digit; the order of delivery
        needs no such rule).
        """

        def found(recorder: TimelineRecorder) -> Sync | None:
            order = [e.version for e in recorder.events() if e.kind == kind and e.name == name]
            if version not in order:
                return None
            newer = set(order[order.index(version) :])
            return next(
                (
                    s
                    for s in recorder.syncs()
                    if s.ended is not None
                    and s.seen.get(kind) in newer
                    and (failed or s.outcome != FAILED)
                ),
                None,
            )

        self.wait_for(lambda r: found(r) is not None, f"a sync that read {kind} {name}", timeout)
        sync = found(self)
        assert sync is not None
        return sync


class _Answers:
    """The controller's clients, noting the resourceVersion of each answer for the recorder.

    It sits inside chapter 05's observing wrapper, which tells the recorder
    about a write only after the write returned: by then the version is noted,
    in the worker's own thread.
    """

    def __init__(self, inner: Any, answers: threading.local) -> None:
        self.inner = inner
        self._answers = answers

    def _note(self, answer: Any) -> Any:
        metadata = (answer.get("metadata") or {}) if isinstance(answer, Mapping) else {}
        self._answers.version = metadata.get("resourceVersion", "")
        return answer

    def create_deployment(self, namespace: str, deployment: dict[str, Any]) -> Any:
        return self._note(self.inner.create_deployment(namespace, deployment))

    def update_deployment(self, namespace: str, deployment: dict[str, Any]) -> Any:
        return self._note(self.inner.update_deployment(namespace, deployment))

    def update_foo_status(self, namespace: str, foo: dict[str, Any]) -> Any:
        return self._note(self.inner.update_foo_status(namespace, foo))

    def record_event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self._answers.version = ""
        self.inner.record_event(obj, event_type, reason, message)

    def __getattr__(self, name: str) -> Any:  # anything else a wrapped client offers
        return getattr(self.inner, name)


class _Reads:
    """A controller's lister, noting (in the worker's thread) the version of the first object
    of its kind that a sync reads: what the sync based its decisions on."""

    def __init__(self, inner: Any, kind: str, reads: threading.local) -> None:
        self.inner = inner
        self._kind = kind
        self._reads = reads

    def namespace(self, namespace: str) -> _Reads:
        return _Reads(self.inner.namespace(namespace), self._kind, self._reads)

    def get(self, name: str) -> Any:
        obj = self.inner.get(name)
        read = getattr(self._reads, "read", None)
        if read is not None and self._kind not in read:
            read[self._kind] = (obj.get("metadata") or {}).get("resourceVersion", "")
        return obj

    def __getattr__(self, name: str) -> Any:  # list(), and anything else a lister offers
        return getattr(self.inner, name)


def _version(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _queue_key(kind: str, obj: Mapping[str, Any]) -> str:
    """The key the controller's handlers enqueue for ``obj`` (as ``handle_object`` finds it)."""
    metadata = obj.get("metadata") or {}
    if kind == FOO_KIND:
        return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
    owner = controller_of(obj)
    if owner is None or owner.get("kind") != FOO_KIND:
        return ""
    return f"{metadata.get('namespace', '')}/{owner.get('name', '')}"


def _part(obj: Mapping[str, Any], part: str) -> Any:
    """``spec`` or ``status``; for ``metadata`` what a user changes (labels, annotations...)."""
    value = obj.get(part)
    if part == "metadata" and isinstance(value, Mapping):
        ignored = {"resourceVersion", "managedFields", "generation"}
        return {k: v for k, v in value.items() if k not in ignored}
    return value


def one_line(error: Exception) -> str:
    """An error in one line: an API error's code, reason and message; else the exception."""
    if isinstance(error, ApiException):
        status = status_of(error)
        return f"{status['code']} {status.get('reason') or ''}: {status['message']}"
    return f"{type(error).__name__}: {error}"


# --- questions about a record ----------------------------------------------------------------


def overlapping(syncs: list[Sync]) -> list[tuple[Sync, Sync]]:
    """Pairs of syncs of the same key that ran at the same time (there must be none)."""
    by_key: dict[str, list[Sync]] = {}
    for sync in syncs:
        by_key.setdefault(sync.key, []).append(sync)
    pairs = []
    for group in by_key.values():
        group.sort(key=lambda s: s.started)
        for first, second in itertools.pairwise(group):
            if first.ended is None or first.ended > second.started:
                pairs.append((first, second))
    return pairs


def counts(syncs: Sequence[Sync]) -> dict[str, int]:
    """How many syncs ended with each outcome."""
    found = {SYNCED: 0, FAILED: 0, SKIPPED: 0, RUNNING: 0}
    for sync in syncs:
        found[sync.outcome] += 1
    return found


def short_error(error: str | None, width: int = 44) -> str:
    """An error cut to ``width`` characters, at a word where it can be: "409 Conflict: ..."."""
    if not error:
        return ""
    if len(error) <= width:
        return error
    cut = error[: width - 1].rsplit(" ", 1)[0]
    return cut + "…"


def table(syncs: list[Sync], last: int = 10, *, names_only: bool = False, width: int = 120) -> str:
    """The last ``last`` syncs to have started, one line each (``names_only``: keys without
    their namespace, as the picture shows them; errors cut to fit ``width`` characters)."""
    key_width = 14 if names_only else 32
    lines = [f"{'start':>9}  {'worker':12} {'key':{key_width}} {'took':>7}  outcome"]
    for s in syncs[-last:]:
        took = "" if s.duration is None else f"{s.duration * 1000:.0f} ms"
        outcome = s.outcome
        if s.requeue_after is not None:
            outcome += f", back in {s.requeue_after:.3g} s"
        key = s.key.rpartition("/")[2] if names_only else s.key
        start = f"t+{s.started:.3f}s"
        line = f"{start:>9}  {s.worker:12} {key[-key_width:]:{key_width}} {took:>7}  {outcome}"
        if s.error:
            line += ": " + short_error(s.error, max(width - len(line) - 2, 12))
        lines.append(line)
    return "\n".join(lines)


def stale_reads(syncs: Sequence[Sync], events: Sequence[InformerEvent]) -> list[Sync]:
    """The syncs that read a Foo older than the controller's own last status write of it.

    The versions of one Foo come through the informer in the order they were
    written (``events``). A sync is stale when an earlier sync of its key
    wrote the Foo's status (and ended before it started), and what it read
    (``Sync.seen["Foo"]``) was delivered before that written version, or the
    written version had not been delivered at all yet.
    """
    order: dict[str, list[str]] = {}
    for event in events:
        if event.kind == FOO_KIND:
            order.setdefault(event.name, []).append(event.version)
    stale: list[Sync] = []
    written: dict[str, str] = {}  # key -> the version of our last status write that ended
    for sync in sorted(syncs, key=lambda s: s.started):
        name = sync.key.rpartition("/")[2]
        ours, read = written.get(sync.key), sync.seen.get(FOO_KIND)
        if ours and read and read != ours:
            delivered = order.get(name, [])
            if ours not in delivered or read not in delivered[delivered.index(ours) :]:
                stale.append(sync)
        for write in sync.writes:
            if write.verb == STATUS_WRITE and write.version and sync.ended is not None:
                written[sync.key] = write.version
    return stale


def caused(
    events: Sequence[InformerEvent], syncs: Sequence[Sync]
) -> list[tuple[InformerEvent, Sync]]:
    """Each event with a key, and the first sync of that key that read what it delivered.

    That is the first sync whose cached version of the object was the event's or a later
    one (in the order the informer delivered them); for a delete, the first sync of the key
    to start after it. Several events may share one sync: the queue folds their keys.
    """
    delivered: dict[tuple[str, str], list[str]] = {}
    for event in events:
        delivered.setdefault((event.kind, event.name), []).append(event.version)
    by_key: dict[str, list[Sync]] = {}
    for sync in sorted(syncs, key=lambda s: s.started):
        by_key.setdefault(sync.key, []).append(sync)
    pairs = []
    for event in events:
        candidates = by_key.get(event.key, [])
        if event.type == "delete" or not event.version:
            first = next((s for s in candidates if s.started >= event.at), None)
        else:
            order = delivered[event.kind, event.name]
            newer = set(order[order.index(event.version) :])
            first = next((s for s in candidates if s.seen.get(event.kind) in newer), None)
        if first is not None:
            pairs.append((event, first))
    return pairs
