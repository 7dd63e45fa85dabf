"""In-process stand-ins for the API server's list and watch: the course's one set of fakes.

A reflector (chapter 02b), an informer (03a) and a controller (05) read their objects through a
:class:`~helpers.listwatch.ListerWatcher`; the unit tests, the benchmarks' replays and the
exercise checks give them one of these instead, typed against that Protocol (mypy checks it at
the bottom of this module), as client-go's tests use ``cache.ListWatch`` with a fake clientset.

- :class:`FakeSource`: objects with resourceVersions, served by ``list()`` and fanned out to
  ``watch()`` streams; a new watch replays what happened after its version, as the API server
  does. ``on_list`` and ``on_watch`` script single calls (raise, or answer otherwise).
- :class:`StaticSource`: a collection that never changes; its watches stay silent.
- :class:`ScriptedStream`: a watch the test feeds (``push``, ``fail``, ``end``), or that plays a
  fixed script and ends; :class:`SilentStream`: a watch on which nothing happens until it is
  closed.
- For a controller's tests (sample-controller's controller_test.go fixture): a
  :class:`RecordingClients` for its writes (thread-safe, and a test may wait on it; chapter
  09a builds a smaller one for its lesson, ``helpers.testing.recording``), a
  :class:`CapturingInformer` that keeps its callbacks, a :class:`RecordingQueue` that notes a
  worker's calls, and :func:`new_foo`.

Chapter 09a's ``helpers.testing.recording.NotWatched`` stays in its chapter: it is the lesson's
own (a controller whose caches are filled by hand never lists).
"""

from __future__ import annotations

import copy
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from helpers.backoff import Backoff
from helpers.clock import FakeClock
from helpers.controller import foo_rate_limiter
from helpers.decode import Transform
from helpers.informer import SharedInformer
from helpers.listwatch import WatchDisconnected, error_from_status
from helpers.workqueue import RateLimitingQueue

if TYPE_CHECKING:
    from helpers.controller import Clients
    from helpers.listwatch import EventStream, ListerWatcher

GUARD = 10.0
"""Real seconds before a wait that should succeed is declared a failure."""

IDLE = 30.0
"""Real seconds a :class:`ScriptedStream` waits for its next event before it breaks."""


# --- what the API server would send ---------------------------------------------------------


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    """A ``meta/v1`` Status, as an ERROR event or an error response carries it."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": details,
        "code": code,
    }


def api_error(code: int, reason: str, message: str, **details: Any) -> ApiException:
    """The error the Kubernetes client raises for a failed request, with its Status body."""
    err = ApiException(status=code, reason=reason)
    err.body = json.dumps(status(code, reason, message, **details))
    return err


def pod(name: str, rv: int | str, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": str(rv)}}


def pod_list(rv: int | str, items: list[dict[str, Any]], cont: str | None = None) -> dict:
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if cont:
        metadata["continue"] = cont
    return {"kind": "PodList", "apiVersion": "v1", "metadata": metadata, "items": items}


def instant_backoff(clock: FakeClock | None = None) -> Backoff:
    """A backoff whose delays are zero: counted, logged, never waited."""
    return Backoff(initial=0.0, jitter=0.0, clock=clock or FakeClock())


# --- watch streams ----------------------------------------------------------------------------


class ScriptedStream:
    """A watch stream fed by the test (or by :class:`FakeSource`); ``close()`` from any thread.

    ``events`` are sent first (copies: a reader may change what it gets); with ``end`` the
    server then ends the watch normally. An ERROR event raises its error and ends the stream.
    """

    def __init__(self, events: list[dict[str, Any]] | None = None, *, end: bool = False) -> None:
        self._cond = threading.Condition()
        self._events: deque[dict[str, Any]] = deque(copy.deepcopy(events or []))
        self._ended = end
        self._closed = False

    def __iter__(self) -> ScriptedStream:
        return self

    def __next__(self) -> dict[str, Any]:
        with self._cond:
            ready = self._cond.wait_for(
                lambda: self._events or self._ended or self._closed, timeout=IDLE
            )
            if self._closed:
                raise StopIteration
            if self._events:
                event = self._events.popleft()
                if event["type"] == "ERROR":
                    self._ended = True
                    raise error_from_status(event["object"])
                return event
            if self._ended:
                raise StopIteration
            assert not ready
            raise WatchDisconnected(f"scripted stream idle for {IDLE:g} s")

    def push(self, type_: str, obj: dict[str, Any]) -> None:
        with self._cond:
            self._events.append({"type": type_, "object": copy.deepcopy(obj)})
            self._cond.notify_all()

    def fail(self, status_object: dict[str, Any]) -> None:
        """Send an ERROR event; the stream ends after it."""
        self.push("ERROR", status_object)

    def end(self) -> None:
        """The server ends the watch normally."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def open(self) -> bool:
        with self._cond:
            return not (self._closed or self._ended)


class SilentStream:
    """A watch on which nothing ever happens, until it is closed (or ``GUARD`` runs out)."""

    def __init__(self) -> None:
        self._closed = threading.Event()

    def __iter__(self) -> SilentStream:
        return self

    def __next__(self) -> dict[str, Any]:
        self._closed.wait(GUARD)
        raise StopIteration

    def close(self) -> None:
        self._closed.set()


# --- list and watch ---------------------------------------------------------------------------


@dataclass
class ListCall:
    resource_version: str | None
    limit: int | None
    continue_token: str | None


@dataclass
class WatchCall:
    resource_version: str
    timeout_seconds: int
    allow_bookmarks: bool


class FakeSource:
    """Objects with resourceVersions, served by ``list()`` and fanned out to ``watch()`` streams.

    ``on_list`` / ``on_watch`` script single calls: they may raise, return a
    result, or return None for the default behaviour. A new watch replays the
    changes after its resourceVersion, as the API server does. Changes made
    with ``broadcast=False`` are seen only by the next LIST (client-go's
    ``AddDropWatch``/``ModifyDropWatch``).
    """

    def __init__(self, kind: str = "Pod") -> None:
        self.kind = kind
        self._cond = threading.Condition()
        self.objects: dict[str, dict[str, Any]] = {}
        self.rv = 0
        self.list_calls: list[ListCall] = []
        self.watch_calls: list[WatchCall] = []
        self.streams: list[EventStream] = []  # what each watch got, in order
        self.history: list[tuple[int, str, dict[str, Any]]] = []  # broadcast changes
        self.on_list: Callable[[ListCall], dict[str, Any] | None] | None = None
        self.on_watch: Callable[[WatchCall], EventStream | None] | None = None

    # -- changing the "server" --------------------------------------------------------

    def add(self, name: str, *, broadcast: bool = True) -> dict[str, Any]:
        return self._change("ADDED", name, broadcast)

    def modify(self, name: str, *, broadcast: bool = True) -> dict[str, Any]:
        return self._change("MODIFIED", name, broadcast)

    def delete(self, name: str, *, broadcast: bool = True) -> dict[str, Any]:
        return self._change("DELETED", name, broadcast)

    def reset_watch(self) -> None:
        """End every open watch with 410 Expired (client-go ``ResetWatch``)."""
        for stream in self.open_streams():
            stream.fail(status(410, "Expired", "too old resource version"))

    def open_streams(self) -> list[ScriptedStream]:
        """The watches still open that this source feeds (an ``on_watch`` may answer with
        a stream of its own, which plays its own script)."""
        with self._cond:
            return [s for s in self.streams if isinstance(s, ScriptedStream) and s.open]

    def _change(self, type_: str, name: str, broadcast: bool) -> dict[str, Any]:
        with self._cond:
            self.rv += 1
            obj = pod(name, self.rv)
            if type_ == "DELETED":
                del self.objects[name]
            else:
                self.objects[name] = obj
            streams = []
            if broadcast:  # the streams open now, under the lock a new watch replays under
                self.history.append((self.rv, type_, obj))
                streams = self.open_streams()
            self._cond.notify_all()
        for stream in streams:
            stream.push(type_, obj)
        return obj

    # -- the ListerWatcher interface ---------------------------------------------------------

    def list(
        self,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        transform: Transform | None = None,
    ) -> dict[str, Any]:
        result = self._list(resource_version, limit, continue_token)
        if transform is not None and isinstance(result, dict):
            result = {**result, "items": [transform(i) for i in result.get("items") or []]}
        return result

    def _list(
        self, resource_version: str | None, limit: int | None, continue_token: str | None
    ) -> dict[str, Any]:
        call = ListCall(resource_version, limit, continue_token)
        with self._cond:
            self.list_calls.append(call)
            self._cond.notify_all()
        if self.on_list is not None:
            scripted = self.on_list(call)
            if scripted is not None:
                return scripted
        with self._cond:
            items = [copy.deepcopy(self.objects[name]) for name in sorted(self.objects)]
            return pod_list(self.rv, items)

    def watch(
        self,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        read_timeout: float | None = None,
    ) -> EventStream:
        call = WatchCall(resource_version, timeout_seconds, allow_bookmarks)
        with self._cond:
            self.watch_calls.append(call)
            self._cond.notify_all()
        scripted = self.on_watch(call) if self.on_watch is not None else None
        with self._cond:
            if scripted is not None:
                self.streams.append(scripted)
                return scripted
            # Like the API server: replay what happened after the requested version.
            stream = ScriptedStream()
            for rv, type_, obj in self.history:
                if resource_version.isdigit() and rv > int(resource_version):
                    stream.push(type_, obj)
            self.streams.append(stream)
        return stream

    def wait_for(self, predicate: Callable[[FakeSource], bool], timeout: float = GUARD) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)


class StaticSource:
    """A ListerWatcher whose collection never changes: LIST gives ``items``, WATCH is silent."""

    def __init__(self, *items: dict[str, Any], resource_version: str = "10") -> None:
        self.items = list(items)
        self.resource_version = resource_version

    def list(
        self,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        transform: Transform | None = None,
    ) -> dict[str, Any]:
        items = copy.deepcopy(self.items)
        if transform is not None:
            items = [transform(item) for item in items]
        return {"metadata": {"resourceVersion": self.resource_version}, "items": items}

    def watch(
        self,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        read_timeout: float | None = None,
    ) -> SilentStream:
        return SilentStream()


def informer_on(source: FakeSource, **kwargs: Any) -> SharedInformer:
    """A SharedInformer (named "test" unless told) on ``source``, whose backoff never waits."""
    kwargs.setdefault("backoff", instant_backoff())
    return SharedInformer(source, name=kwargs.pop("name", "test"), **kwargs)


# --- the controller's other inputs and outputs (chapter 05's Clients, informers, queue) ------


@dataclass(frozen=True)
class Action:
    """One write the controller made (client-go testing ``Action``)."""

    verb: str
    resource: str
    namespace: str
    obj: dict[str, Any]


class RecordingClients:
    """The controller's :class:`~helpers.controller.Clients`, recording instead of calling.

    ``fail`` maps a method name to the exception that call should raise.
    """

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.events: list[tuple[str, str, str, str]] = []  # (foo name, type, reason, message)
        self.fail: dict[str, Exception] = {}
        self._changed = threading.Condition()

    def create_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        return self._record(
            "create_deployment", Action("create", "deployments", namespace, deployment)
        )

    def update_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        return self._record(
            "update_deployment", Action("update", "deployments", namespace, deployment)
        )

    def update_foo_status(self, namespace: str, foo: dict[str, Any]) -> dict[str, Any]:
        return self._record("update_foo_status", Action("update", "foos/status", namespace, foo))

    def record_event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        with self._changed:
            self.events.append((obj["metadata"]["name"], event_type, reason, message))
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[RecordingClients], bool]) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), GUARD)

    def _record(self, method: str, action: Action) -> dict[str, Any]:
        if method in self.fail:
            raise self.fail[method]
        with self._changed:
            self.actions.append(copy.deepcopy(action))
            self._changed.notify_all()
        return copy.deepcopy(action.obj)  # like the fake clientset: the object as sent


class CapturingInformer(SharedInformer):
    """A real (never started) informer that also keeps the callbacks it was given."""

    def __init__(self, *items: dict[str, Any], name: str) -> None:
        super().__init__(StaticSource(*items), name=name)
        self.callbacks: dict[str, Any] = {}

    def add_event_handler(self, handler: Any = None, **kwargs: Any) -> Any:
        self.callbacks = {k: v for k, v in kwargs.items() if k.startswith("on_") and v}
        return super().add_event_handler(handler, **kwargs)


class RecordingQueue(RateLimitingQueue[str]):
    """The real rate-limited queue, also noting the calls a worker makes on it."""

    def __init__(self) -> None:
        super().__init__(foo_rate_limiter(clock=FakeClock()), "Foos", clock=FakeClock())
        self.calls: list[tuple[str, str]] = []

    def done(self, item: str) -> None:
        self.calls.append(("done", item))
        super().done(item)

    def forget(self, item: str) -> None:
        self.calls.append(("forget", item))
        super().forget(item)

    def add_rate_limited(self, item: str) -> None:
        self.calls.append(("add_rate_limited", item))
        super().add_rate_limited(item)


def new_foo(name: str, replicas: int | None) -> dict[str, Any]:
    """A Foo as the informer would cache it (upstream ``newFoo``, plus a UID)."""
    spec: dict[str, Any] = {"deploymentName": f"{name}-deployment"}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
        },
        "spec": spec,
    }


if TYPE_CHECKING:  # mypy checks that each fake is what it stands in for
    _SOURCES: tuple[ListerWatcher, ...] = (FakeSource(), StaticSource())
    _CLIENTS: Clients = RecordingClients()
    _STREAMS: tuple[EventStream, ...] = (ScriptedStream(), SilentStream())
