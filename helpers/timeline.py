"""The reconcile loop as a timeline: every sync, every write, every informer event, and a picture.

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

:class:`ReconcileTimeline` draws the record (a
:class:`helpers.widgets.LiveFigure`): a lane per worker with one bar per sync,
coloured by outcome, the writes as ticks on it, a lane of informer events
above with a thin line from each event to the sync that took its key next, and
the queue below: keys ready, keys in a worker's hands, and keys waiting out a
retry delay (which the depth does not count). While live it shows what happened
since it started; stopped, it leaves a static PNG of the span it was frozen on
and, in Jupyter, prints one line saying what that PNG shows (:class:`Drawn`),
which a stored notebook keeps as text.

The cost: an observer call takes a lock and appends to a list, a few
microseconds against a sync's milliseconds of HTTP; a controller nobody
observes pays one attribute read per sync. Drawing happens in the widget's own
thread, several times a second, and holds the interpreter lock while it draws.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from kubernetes.client.exceptions import ApiException
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from helpers.apierrors import status_of
from helpers.controller import FOO_KIND, FooController, controller_of
from helpers.errors import CourseError
from helpers.lister import NotFoundError
from helpers.store import DeletedFinalStateUnknown
from helpers.widgets import LiveFigure

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
        observed.inner = _Answers(observed.inner, self._answers)  # type: ignore[attr-defined]
        # And the listers, so that a sync's record says which versions it really read.
        controller.foos_lister = _Reads(controller.foos_lister, "Foo", self._answers)
        controller.deployments_lister = _Reads(
            controller.deployments_lister, "Deployment", self._answers
        )
        for informer, kind in [
            (controller.foo_informer, "Foo"),
            (controller.deployment_informer, "Deployment"),
        ]:
            registration = informer.add_event_handler(
                on_add=lambda obj, initial, kind=kind: initial or self._event(kind, "add", obj),
                on_update=lambda old, new, kind=kind: self._update(kind, old, new),
                on_delete=lambda obj, kind=kind: self._event(kind, "delete", obj),
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
    stale, written = [], {}  # key -> the version of our last status write that ended
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


# --- drawing ---------------------------------------------------------------------------------

DPI = 100
FONT = 10
"""Points: 14 pixels at 100 dpi, readable at 100% zoom (chapter 08's plots are the model)."""

COLOURS = {SYNCED: "#2ca02c", FAILED: "#d62728", SKIPPED: "#b0b0b0", RUNNING: "#9ecae1"}
WRITE_COLOURS = {
    "create Deployment": "#1f77b4",
    "update Deployment": "#ff7f0e",
    STATUS_WRITE: "#9467bd",
    "Event": "#7f7f7f",
}
EVENT_MARKERS = {"add": "^", "update": "o", "delete": "v", "resync": "."}
KIND_COLOURS = {"Foo": "#9467bd", "Deployment": "#1f77b4"}
EVENT_LANE = "informer events"
MAX_WAITS = 12
"""More retry waits than this in view are left to the queue strip (they would overlap)."""
QUEUE_LINES = {
    "ready": ("ready (depth)", "#1f77b4"),
    "in_flight": ("being synced", "#ff7f0e"),
    "waiting": ("in a retry delay", "#d62728"),
}


def write_colour(verb: str) -> str:
    """Writes of one kind share a colour; every Event is grey, a failed write is red."""
    return WRITE_COLOURS.get(verb, WRITE_COLOURS["Event"])


def worker_order(name: str) -> tuple[int, str]:
    """foo-worker-2 before foo-worker-10: by the number at the end, then by name."""
    head, _, tail = name.rpartition("-")
    return (int(tail), head) if tail.isdigit() else (1_000_000, name)


@dataclass(frozen=True)
class Note:
    """A sentence pinned to one sync's bar in the picture."""

    sync: Sync
    text: str


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
            sync = next((s for s in candidates if s.started >= event.at), None)
        else:
            order = delivered[event.kind, event.name]
            newer = set(order[order.index(event.version) :])
            sync = next((s for s in candidates if s.seen.get(event.kind) in newer), None)
        if sync is not None:
            pairs.append((event, sync))
    return pairs


def lane_rows(shown: Sequence[Sync], workers: Sequence[str]) -> dict[str, int]:
    """Each worker's lane, top to bottom (the informer events' lane is one above the first)."""
    lanes = sorted({*workers, *(s.worker for s in shown)}, key=worker_order)
    return {worker: len(lanes) - i for i, worker in enumerate(lanes)}


def draw_lanes(
    axes: Axes,
    syncs: list[Sync],
    events: list[InformerEvent],
    *,
    left: float,
    right: float,
    now: float,
    workers: list[str],
    notes: Sequence[Note] = (),
    highlight: str | None = None,
) -> list[Artist]:
    """Worker lanes of sync bars with their write ticks, and a lane of informer events on top.

    Adds its artists to ``axes`` and returns them; the caller removes them before the next
    frame (cheaper than clearing the axes, whose ticks would be made again every time).
    """
    shown = [s for s in syncs if s.end(now) >= left and s.started <= right]
    row = lane_rows(shown, workers)
    top = len(row) + 1
    names = [EVENT_LANE, *row]
    if [label.get_text() for label in axes.get_yticklabels()] != names:
        axes.set_yticks([top, *row.values()], names, fontsize=FONT)
    axes.set_ylim(-0.5 if notes else 0.4, top + 0.7)  # notes go under the lowest lane
    axes.set_xlim(left, right)
    per_second = axes.bbox.width / max(right - left, 1e-9)  # pixels per second
    thinnest = 2 / per_second  # a sync of a millisecond is still 2 pixels wide
    bars, bar_colours, edges, waits, ticks, colours, labels = [], [], [], [], [], [], []
    for s in shown:
        y = row[s.worker]
        end = s.end(now)
        width = max(end - s.started, thinnest)
        bars.append([(s.started, y - 0.3), (s.started + width, y - 0.3),
                     (s.started + width, y + 0.3), (s.started, y + 0.3)])  # fmt: skip
        bar_colours.append(COLOURS[s.outcome])
        edges.append("black" if s.key.rpartition("/")[2] == highlight else "white")
        if s.requeue_after is not None and s.requeued_at is not None:  # the wait for the retry
            due = s.requeued_at + max(s.requeue_after, 3 * thinnest)  # 5 ms is still 6 pixels
            waits.append([(s.requeued_at, y - 0.4), (due, y - 0.4)])
        for w in s.writes:
            ticks.append([(w.at, y + 0.3), (w.at, y + 0.55)])
            colours.append(COLOURS[FAILED] if w.error else write_colour(w.verb))
        label = s.key.rpartition("/")[2]
        if width * per_second > 8 * len(label) + 6:
            labels.append(((s.started + end) / 2, y, label))
    if len(waits) > MAX_WAITS:  # they would lie on top of each other: the queue strip counts them
        waits = []
    seen_events = [e for e in events if left <= e.at <= right]
    links = [
        [(event.at, top - 0.2), (sync.started, row[sync.worker] + 0.3)]
        for event, sync in caused(seen_events, shown)
    ]
    added: list[Artist] = [
        axes.add_collection(LineCollection(links[-300:], colors="#bbbbbb", linewidths=0.7)),
        axes.add_collection(PolyCollection(bars, facecolors=bar_colours, edgecolors=edges,
                                           linewidths=[1.5 if e == "black" else 0.5
                                                       for e in edges])),
        axes.add_collection(LineCollection(waits, colors=COLOURS[FAILED], linewidths=1.2,
                                           linestyles=":")),
        axes.add_collection(LineCollection(ticks, colors=colours, linewidths=2)),
    ]  # fmt: skip
    for x, y, label in labels[-20:]:  # the most recent, if there are very many
        added.append(axes.text(x, y, label, ha="center", va="center", fontsize=FONT - 1,
                               color="white", clip_on=True))  # fmt: skip
    for event_type, marker in EVENT_MARKERS.items():
        for kind, colour in KIND_COLOURS.items():
            at = [e.at for e in seen_events if e.type == event_type and e.kind == kind]
            if at:
                y = top + (0.2 if kind == "Foo" else -0.05)
                added.append(axes.scatter(at, [y] * len(at), marker=marker, s=45, color=colour,
                                          zorder=3, clip_on=False))  # fmt: skip
    for n, note in enumerate(notes):
        if note.sync.worker in row and left <= note.sync.started <= right:
            y = row[note.sync.worker]
            added.append(axes.annotate(
                note.text, xy=(note.sync.started, y - 0.3), xytext=(left + (right - left) * 0.01,
                -0.1 - 0.3 * n), fontsize=FONT - 1, va="center",
                bbox={"boxstyle": "round", "fc": "white", "ec": "#888888"},
                arrowprops={"arrowstyle": "->", "color": "#555555"}, zorder=5,
            ))  # fmt: skip
    return added


def annotate_marks(
    axes: Axes,
    syncs: list[Sync],
    events: list[InformerEvent],
    *,
    left: float,
    right: float,
    now: float,
    workers: list[str],
) -> list[Artist]:
    """Name each kind of mark once, with an arrow to one of them: an informer event and the
    line to the sync it woke, a sync's bar and its writes, a failed sync's wait for its retry.
    The names stand in the margin right of the lanes; a mark not in view gets no name."""
    shown = [s for s in syncs if s.end(now) >= left and s.started <= right]
    row = lane_rows(shown, workers)
    top = len(row) + 1
    seen = [e for e in events if left <= e.at <= right]
    event = next((e for e in seen if e.type == "add"), seen[0] if seen else None)
    done = next((s for s in shown if s.outcome == SYNCED and s.ended is not None), None)
    failed = next((s for s in shown if s.requeue_after is not None and s.requeued_at), None)
    callouts = []
    if event is not None:
        y = top + (0.2 if event.kind == "Foo" else -0.05)
        callouts.append(((event.at, y), f"an informer event, here\n{event.kind} {event.type}"
                                        "\n(▲ add, ● update, ▼ delete)"))  # fmt: skip
        woke = dict(caused([event], shown)).get(event)
        if woke is not None:
            middle = ((event.at + woke.started) / 2, (top - 0.2 + row[woke.worker] + 0.3) / 2)
            callouts.append((middle, "grey: the sync that\ntook the event's key"))
    if done is not None:
        end = done.end(now)
        mark = (end, row[done.worker] + 0.3)
        callouts.append((mark, "a sync, start to end\n(green: it wrote, red:\nit failed, "
                               "grey: no-op);\nticks: its writes"))  # fmt: skip
    if failed is not None:
        assert failed.requeue_after is not None and failed.requeued_at is not None
        at = failed.requeued_at + failed.requeue_after / 2
        delay = f"{failed.requeue_after * 1000:.0f} ms"
        waits = f"red dots: it waits\n{delay}, then its key\nis queued again"
        callouts.append(((at, row[failed.worker] - 0.4), waits))
    added: list[Artist] = []
    line = (FONT - 1) * 1.25 * DPI / 72 / axes.bbox.height  # one line of text, in axes heights
    height = 1.04
    for xy, text in callouts:  # stacked down the margin, in the order of the list
        added.append(axes.annotate(
            text, xy=xy, xytext=(1.03, height), textcoords="axes fraction", ha="left",
            va="top", fontsize=FONT - 1, annotation_clip=False,
            arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 0.8,
                        "connectionstyle": "arc3,rad=0.1", "shrinkA": 2, "shrinkB": 3},
            zorder=6,
        ))  # fmt: skip
        height -= line * (text.count("\n") + 1.6)
    return added


def style_lanes(axes: Axes) -> None:
    """What stays the same from frame to frame."""
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    axes.tick_params(axis="y", length=0)
    axes.tick_params(axis="x", labelbottom=False)
    axes.grid(axis="x", color="#eeeeee", lw=0.6)


def new_queue_strip(axes: Axes) -> dict[str, Line2D]:
    """The queue strip under the lanes: a step line per count, moved by :func:`draw_queue`."""
    lines = {
        name: axes.step([], [], where="post", color=colour, lw=1.5, label=label)[0]
        for name, (label, colour) in QUEUE_LINES.items()
    }
    axes.set_xlabel("seconds since the recorder started", fontsize=FONT)
    axes.set_ylabel("keys", fontsize=FONT)
    axes.tick_params(labelsize=FONT - 1)
    axes.yaxis.set_major_locator(MaxNLocator(nbins=3, integer=True))
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.05), fontsize=FONT - 1, frameon=False,
                handlelength=1.2)  # fmt: skip
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    return lines


def draw_queue(
    axes: Axes, lines: dict[str, Line2D], levels: list[QueueLevel], *, left: float, right: float
) -> None:
    """Move the queue's lines to the levels inside the window (the last one before it too)."""
    before = [q for q in levels if q.at < left][-1:]
    inside = [*(replace(q, at=left) for q in before), *(q for q in levels if left <= q.at <= right)]
    at = [s.at for s in inside]
    for name, line in lines.items():
        line.set_data(at, [getattr(s, name) for s in inside])
    highest = max([1, *(getattr(s, name) for s in inside for name in lines)])
    axes.set_ylim(0, highest * 1.2)


def legend_handles() -> list[Line2D]:
    """What the colours and marks mean, for the legend under the picture."""
    bars = [Line2D([], [], color=c, lw=7, label=f"sync {o}") for o, c in COLOURS.items()]
    ticks = [Line2D([], [], color=c, lw=2, label=v) for v, c in WRITE_COLOURS.items()]
    failed = [
        Line2D([], [], color=COLOURS[FAILED], lw=2, label="write failed"),
        Line2D([], [], color=COLOURS[FAILED], lw=1.2, ls=":", label="wait before retry"),
    ]
    marks = [
        Line2D([], [], marker=m, ls="", color="#555555", label=f"event: {t}")
        for t, m in EVENT_MARKERS.items()
        if t != "resync"
    ]
    kinds = [Line2D([], [], marker="s", ls="", color=c, label=k) for k, c in KIND_COLOURS.items()]
    link = [Line2D([], [], color="#bbbbbb", lw=1, label="event → the sync it queued")]
    return [*bars, *ticks, *failed, *marks, *kinds, *link]


def place_legend(figure: Figure, bottom: float, height: float) -> None:
    """The legend, drawn once into a picture of its own and pasted across the figure between
    ``bottom`` and ``bottom + height`` (fractions of its height): it never changes, and drawing
    its text again for every frame would cost more than the lanes."""
    size = (figure.get_figwidth(), figure.get_figheight() * height)
    legend = Figure(figsize=size, dpi=figure.dpi)
    legend.patch.set_alpha(0)
    canvas = FigureCanvasAgg(legend)
    legend.legend(handles=legend_handles(), loc="center", ncol=4, fontsize=FONT - 1,
                  frameon=False, columnspacing=1.0, handlelength=1.4)  # fmt: skip
    canvas.draw()
    figure.figimage(np.asarray(canvas.buffer_rgba()), xo=0, yo=int(bottom * figure.bbox.height))


@dataclass(frozen=True)
class Drawn:
    """What a picture showed in its last frame: the line printed under it."""

    lanes: int
    synced: int
    failed: int
    skipped: int
    running: int
    events: int
    span: float  # seconds

    @property
    def syncs(self) -> int:
        return self.synced + self.failed + self.skipped + self.running

    def __str__(self) -> str:
        running = f", {self.running} running" if self.running else ""
        return (
            f"drawn: {_plural(self.lanes, 'worker lane')}, {_plural(self.syncs, 'sync')} "
            f"({self.synced} synced, {self.failed} failed, {self.skipped} skipped{running}), "
            f"{_plural(self.events, 'informer event')}, over ≈{self.span:.1f} s"
        )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


class ReconcileTimeline:
    """A recorder's timeline, redrawn while the controller works, then left as a static PNG.

    A :class:`helpers.widgets.LiveFigure` named ``reconcile-timeline``: in
    Jupyter it redraws every ``refresh`` seconds while cells run, and samples
    the controller's queue every ``interval`` seconds. While live it shows what
    happened since it started (the cell's own experiment), or only the last
    ``window`` seconds of that; ``highlight`` (a Foo's name) outlines that
    Foo's bars in black; :meth:`freeze` or :meth:`freeze_on` fix what the
    final picture shows. ``annotate`` names each kind of mark once, in the
    margin (the chapter's first picture). ``caption`` is the fixed
    ``text/plain`` of the widget and the final image; ``last`` syncs are
    listed under the picture (default: none; the cells print what matters).
    Stopped in Jupyter, it prints one line saying what it drew (:class:`Drawn`:
    lanes, syncs by outcome, informer events, the span), which a stored
    notebook keeps as text; ``drawn`` holds the same numbers.
    """

    def __init__(
        self,
        recorder: TimelineRecorder,
        *,
        caption: str,
        title: str = "",
        window: float | None = None,
        highlight: str | None = None,
        last: int = 0,
        interval: float = 0.1,
        refresh: float = 0.4,
        show: bool | None = None,
        annotate: bool = False,
    ) -> None:
        if recorder.controller is None:
            raise CourseError(
                "This recorder observes no controller, so there is no queue to draw.",
                "attach it first: TimelineRecorder(controller).",
            )
        self.recorder = recorder
        self.title_text = title
        self.window = window
        self.highlight = highlight
        self.last = last
        self.annotate = annotate
        self.notes: list[Note] = []
        self.frames = 0
        self.drawn: Drawn | None = None  # what the last frame showed
        self._opened = recorder.now()  # start() sets it again: live frames show from then on
        self._said = False
        self._span: tuple[float, float] | None = None  # fixed by freeze()
        self._last_start: float | None = None  # fixed by freeze_on(): show no sync begun later
        self._busy = 0.0  # seconds spent drawing
        self._frame_times: list[float] = []
        # Laid out in inches, top to bottom: title, lanes, queue strip, its axis label, legend,
        # and the table if asked for; 8.2 inches at 100 dpi are 820 pixels.
        parts = {"title": 0.45, "lanes": 2.4, "gap": 0.15, "queue": 0.8, "label": 0.45,
                 "legend": 0.95, "table": 0.2 * (last + 1) + 0.1 if last else 0.05}  # fmt: skip
        height = sum(parts.values())
        self.figure = Figure(figsize=(8.2, height), dpi=DPI)
        FigureCanvasAgg(self.figure)

        def band(name: str) -> tuple[float, float]:
            """A part's bottom and height, as fractions of the figure's height."""
            names = list(parts)
            top = height - sum(parts[n] for n in names[: names.index(name)])
            return (top - parts[name]) / height, parts[name] / height

        left, width = 0.16, 0.57 if annotate else 0.62  # annotations: a wider right margin
        self.lanes = self.figure.add_axes((left, band("lanes")[0], width, band("lanes")[1]))
        self.queue = self.figure.add_axes((left, band("queue")[0], width, band("queue")[1]),
                                          sharex=self.lanes)  # fmt: skip
        style_lanes(self.lanes)
        self.queue_lines = new_queue_strip(self.queue)
        place_legend(self.figure, *band("legend"))
        self.title = self.figure.suptitle("", x=0.02, y=1 - 0.12 / height, ha="left",
                                          va="top", fontsize=FONT + 1)  # fmt: skip
        self.table = None
        if last:
            bottom, _ = band("table")
            self.table = self.figure.text(0.03, bottom + parts["table"] / height, "", va="top",
                                          family="monospace", fontsize=FONT - 2)  # fmt: skip
        self._artists: list[Artist] = []
        self.live = LiveFigure(self.figure, self._draw, name="reconcile-timeline", caption=caption,
                               tick=recorder.sample_queue, interval=interval, refresh=refresh,
                               show=show)  # fmt: skip

    @property
    def png(self) -> bytes | None:
        return self.live.png

    def follow(self, controller: FooController) -> None:
        """Carry on with another controller (a restarted one): record and sample it instead."""
        self.recorder.attach(controller)

    def freeze(self, since: float = 0.0, until: float | None = None) -> None:
        """The final picture shows from ``since`` to ``until`` (default: now)."""
        self._span = (since, self.recorder.now() if until is None else until)
        self._last_start = None

    def freeze_on(self, syncs: Sequence[Sync], *, margin: float = 0.08) -> None:
        """The final picture shows exactly these syncs, which must have ended (and whatever else
        overlaps their span), with ``margin`` of their span on either side."""
        if not syncs or any(s.ended is None for s in syncs):
            raise ValueError("freeze_on needs syncs that have all ended")
        first = min(s.started for s in syncs)
        last = max(s.end(0.0) for s in syncs)
        pad = max((last - first) * margin, 0.005)
        self._span = (first - pad, last + pad)
        self._last_start = max(s.started for s in syncs)  # a sync begun later is not theirs

    def note(self, sync: Sync, text: str) -> None:
        """Pin ``text`` to ``sync``'s bar (a sentence in the picture, with an arrow)."""
        self.notes.append(Note(sync, text))

    def redraws_per_second(self) -> float:
        """Frames drawn per second, from the first frame to the last so far."""
        times = self._frame_times
        return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0

    def milliseconds_per_frame(self) -> float:
        """How long bringing the figure up to date took, on average (not counting the PNG)."""
        return 1000 * self._busy / max(self.frames, 1)

    def start(self) -> ReconcileTimeline:
        self._opened = self.recorder.now()
        self.recorder.sample_queue()
        self.live.start()
        return self

    def stop(self) -> bytes:
        """Leave the final picture; in Jupyter, print what it drew (once)."""
        png = self.live.stop()
        if self.live.show and not self._said and self.drawn is not None:
            self._said = True
            print(self.drawn)
        return png

    def __enter__(self) -> ReconcileTimeline:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _draw(self) -> None:
        started = time.perf_counter()
        now = self.recorder.now()
        if self._span is not None:
            left, right = self._span
        else:  # live: the cell's own experiment, from when the picture started
            right = max(now, self._opened + 0.5)
            left = max(self._opened, right - self.window) if self.window else self._opened
        syncs, events = self.recorder.syncs(), self.recorder.events()
        if self._last_start is not None:
            syncs = [s for s in syncs if s.started <= self._last_start]
        controller = self.recorder.controller
        workers = [t.name for t in controller.worker_threads] if controller is not None else []
        for artist in self._artists:
            artist.remove()
        self._artists = draw_lanes(self.lanes, syncs, events, left=left, right=right, now=now,
                                   workers=workers, notes=self.notes,
                                   highlight=self.highlight)  # fmt: skip
        if self.annotate:
            self._artists += annotate_marks(self.lanes, syncs, events, left=left, right=right,
                                            now=now, workers=workers)  # fmt: skip
        draw_queue(self.queue, self.queue_lines, self.recorder.levels(), left=left, right=right)
        shown = [s for s in syncs if s.started <= right and s.end(now) >= left]
        found = counts(shown)
        lanes = len(lane_rows(shown, workers))
        seen = sum(1 for e in events if left <= e.at <= right)
        self.drawn = Drawn(lanes, found[SYNCED], found[FAILED], found[SKIPPED], found[RUNNING],
                           seen, right - left)  # fmt: skip
        parts = [f"{found[SYNCED]} synced", f"{found[FAILED]} failed"]
        parts += [f"{found[o]} {o}" for o in (SKIPPED, RUNNING) if found[o]]
        head = f"{self.title_text}: " if self.title_text else ""
        self.title.set_text(f"{head}{len(shown)} syncs ({', '.join(parts)})")
        if self.table is not None:
            self.table.set_text(table(shown, self.last, names_only=True, width=112))
        self.frames += 1
        self._frame_times.append(time.perf_counter())
        self._busy += time.perf_counter() - started
