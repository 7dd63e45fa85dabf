"""Chapter 06's bench: chapter 05's Foo controller, run, observed and broken on purpose.

No single client-go counterpart; instruments written by hand, so that
chapters 06a and 06b can show the reconcile loop's behaviour from their first
cells (06a's deep dive on the instruments says how they work):

* :class:`Bench` runs a :class:`~helpers.controller.FooController` in
  background threads with a :class:`~helpers.timeline.TimelineRecorder`
  attached, and restarts it with other options: another controller class, more
  workers, another workqueue, faulty clients, a client paced as client-go paces
  one (:func:`helpers.throttle.throttle_per_group`), a slow watch. The
  ``helpers`` log goes into a :class:`LogBook`, not under whichever cell runs.
* :class:`FlakyClients` and :class:`Gate` inject faults into the controller's
  writes: the next N writes fail, or every Nth, or every write about some
  Foos, or each write first waits (a slow API server), or one write is held
  until a cell lets it go. Events are never failed: an Event is not part of a
  sync, and a failed one never fails the sync. client-go's recorder writes
  Events from a goroutine of its own; it drops one the API server refuses at
  once, and tries one that failed on the way up to 12 times
  (https://github.com/kubernetes/client-go/blob/v0.36.3/tools/record/event.go#L288-L324);
  :mod:`helpers.events` writes in the sync's thread, logs a failure, and never
  raises.
* :class:`SlowWatch` holds one Foo's next status change in the Foo informer's
  reflector, as a slow watch would: the cache keeps the old Foo while the API
  server already has the new one. That is how the chapter shows a
  self-inflicted 409 Conflict without waiting for bad luck.
* :class:`Foos` creates, changes and waits on the Foos of one namespace.
* :func:`retry_on_conflict` is client-go's ``util/retry.RetryOnConflict``, and
  :func:`compare_resource_versions` apimachinery's ``CompareResourceVersion``
  (resourceVersions of one resource are comparable since Kubernetes 1.35).
* :func:`extend_foo_status` adds ``observedGeneration`` (and
  ``lastSyncTime``, for the runaway loop the chapter shows) to the Foo CRD's
  status schema, which sample-controller's CRD lacks; :func:`restore_foo_status`
  takes them out again. A CRD is cluster-wide: while they are in, every
  namespace's Foos may carry them.
"""

from __future__ import annotations

import copy
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.clock import StopEvent
from helpers.controller import (
    FOO_GROUP,
    FOO_PLURAL,
    FOO_VERSION,
    Clients,
    FooController,
    KubeClients,
    controller_of,
    foo_body,
    run_controller,
)
from helpers.informer import SharedInformer, strip_managed_fields
from helpers.listwatch import ListWatch
from helpers.throttle import Throttle, throttle_per_group
from helpers.timeline import Sync, TimelineRecorder
from helpers.waiting import wait_for
from helpers.workqueue import RateLimitingQueue

T = TypeVar("T")

JOIN_TIMEOUT = 30.0
"""Seconds a stopping controller may take to finish the syncs it is in."""


# --- faults ----------------------------------------------------------------------------------


class InjectedFailure(RuntimeError):
    """A write that FlakyClients failed on purpose."""


class Gate:
    """Holds one kind of write about one Foo until :meth:`release`; ``reached`` is set then."""

    def __init__(self, verb: str, key: str) -> None:
        self.verb = verb
        self.key = key
        self.reached = threading.Event()
        self._released = threading.Event()

    def release(self) -> None:
        self._released.set()

    def wait_reached(self, timeout: float = 30.0) -> None:
        """Block until a write has come to the gate (and waits there)."""
        if not self.reached.wait(timeout):
            raise TimeoutError(f"no {self.verb} of {self.key} came to the gate in {timeout:g} s")

    def _pass(self, timeout: float = 60.0) -> None:
        self.reached.set()
        self._released.wait(timeout)


class FlakyClients:
    """:class:`helpers.controller.Clients` that fail, slow down or hold writes on purpose.

    ``fail_next=N`` fails the next N writes that may fail, then none;
    ``fail_every=N`` fails every Nth write that may fail (0: none); Events are
    not counted, since they never fail: with them counted, a sync that writes a
    Deployment, a status and an Event, run alone with ``fail_every=3``, would
    put every third write on its Event, and nothing would ever fail.
    ``fail_keys`` fails every write about those Foos (``"namespace/name"``);
    ``latency`` seconds pass before each write, as with a slow API server.
    All four may change while the controller runs. ``hold(verb, key)`` returns
    a :class:`Gate` that stops the next such write until released. Events are
    slowed and held like any write, but never failed (see the module's docstring).
    """

    def __init__(
        self,
        inner: Clients,
        *,
        fail_next: int = 0,
        fail_every: int = 0,
        fail_keys: set[str] | None = None,
        latency: float = 0.0,
    ) -> None:
        self.inner = inner
        self.fail_next = fail_next
        self.fail_every = fail_every
        self.fail_keys: set[str] = set(fail_keys or ())
        self.latency = latency
        self.writes = 0
        self.failed = 0
        self._lock = threading.Lock()
        self._gates: list[Gate] = []

    def hold(self, verb: str, key: str) -> Gate:
        gate = Gate(verb, key)
        with self._lock:
            self._gates.append(gate)
        return gate

    def release_all(self) -> None:
        """Let every write held at a gate go (a controller that stops must not hang there)."""
        with self._lock:
            gates, self._gates = self._gates, []
        for gate in gates:
            gate.release()

    def _before(self, verb: str, key: str, *, may_fail: bool = True) -> None:
        with self._lock:
            if may_fail:  # the writes "every Nth" counts
                self.writes += 1
            gate = next((g for g in self._gates if (g.verb, g.key) == (verb, key)), None)
            if gate is not None:
                self._gates.remove(gate)
            every = self.fail_every
            fail = may_fail and (key in self.fail_keys or (every > 0 and self.writes % every == 0))
            if may_fail and self.fail_next > 0:
                self.fail_next -= 1
                fail = True
            self.failed += fail
        if gate is not None:
            gate._pass()
        if self.latency > 0:
            time.sleep(self.latency)  # a slow API server, on purpose
        if fail:
            raise InjectedFailure(f"injected failure: {verb} for {key}")

    def create_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        self._before("create Deployment", _owner_key(namespace, deployment))
        return self.inner.create_deployment(namespace, deployment)

    def update_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        self._before("update Deployment", _owner_key(namespace, deployment))
        return self.inner.update_deployment(namespace, deployment)

    def update_foo_status(self, namespace: str, foo: dict[str, Any]) -> dict[str, Any]:
        self._before("update Foo status", f"{namespace}/{foo['metadata']['name']}")
        return self.inner.update_foo_status(namespace, foo)

    def record_event(
        self, obj: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        metadata = obj.get("metadata") or {}
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        self._before(f"Event {reason}", key, may_fail=False)
        self.inner.record_event(obj, event_type, reason, message)


def _owner_key(namespace: str, deployment: Mapping[str, Any]) -> str:
    """A Deployment's write is about the Foo that controls it."""
    owner = controller_of(deployment) or {}
    return f"{namespace}/{owner.get('name', '')}"


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
            self._released.wait(JOIN_TIMEOUT)  # never forever: a stopping informer must end
        return obj

    def _matches(self, obj: Any) -> bool:
        metadata = (obj.get("metadata") or {}) if isinstance(obj, Mapping) else {}
        with self._lock:
            if self._armed is None or metadata.get("name") != self._armed or self.informer is None:
                return False
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        cached = self.informer.indexer.get_by_key(key)
        return cached is not None and cached.get("status") != obj.get("status")


# --- running the controller ------------------------------------------------------------------


class LogBook(logging.Handler):
    """Keeps the messages of the ``helpers`` loggers in memory, for cells to read and wait on."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.changed:
            self.messages.append(record.getMessage())
            self.changed.notify_all()

    def wait_for(self, text: str, after: int = 0, timeout: float = 30) -> bool:
        """Block until a message containing ``text`` is logged (at index ``after`` or later)."""
        with self.changed:
            found = lambda: any(text in m for m in self.messages[after:])  # noqa: E731
            return self.changed.wait_for(found, timeout)

    @classmethod
    def installed(cls) -> LogBook:
        """A LogBook that the ``helpers`` loggers write into instead of the cells' stderr
        (the controllers log from background threads); one per process."""
        logger = logging.getLogger("helpers")
        book = next((h for h in logger.handlers if isinstance(h, cls)), None) or cls()
        if book not in logger.handlers:
            logger.addHandler(book)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        return book


class Bench:
    """A Foo controller of the namespace, running in background threads, observed and breakable.

    :meth:`start` stops the controller that runs (if any) and starts another
    one, wrapped in :class:`FlakyClients` (``self.flaky``) and recorded by the
    same :class:`~helpers.timeline.TimelineRecorder` (``self.recorder``), so
    that one timeline spans every restart. :meth:`stop` stops it.
    """

    def __init__(self, api: kubernetes.client.ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.logbook = LogBook.installed()
        self.foos = Foos(api, namespace)
        self.recorder = TimelineRecorder()
        self.controller: FooController | None = None
        self.flaky: FlakyClients | None = None
        self.slow_watch: SlowWatch | None = None
        self.throttles: dict[str, Throttle] = {}
        self._stop = StopEvent()
        self._thread: threading.Thread | None = None
        self._paced: kubernetes.client.ApiClient | None = None

    def start(
        self,
        controller_class: type[FooController] = FooController,
        *,
        workers: int = 2,
        workqueue: RateLimitingQueue[str] | None = None,
        paced: bool = False,
        slow_watch: bool = False,
        **faults: Any,
    ) -> FooController:
        """Stop the running controller; start a new one; returns it.

        ``paced``: its requests wait for tokens as client-go's would (a bucket
        of 5 a second, burst 10, per API group: sample-controller's defaults).
        ``slow_watch``: its Foo informer can hold a status change
        (``self.slow_watch``). ``faults`` go to :class:`FlakyClients`.
        """
        self.stop()
        api = self.api
        self.throttles = {}
        if paced:
            self._paced = api = kubernetes.client.ApiClient(self.api.configuration)
            self.throttles = throttle_per_group(api)
        self.slow_watch = SlowWatch() if slow_watch else None
        controller = self._new(controller_class, api, workqueue)
        self.flaky = FlakyClients(controller.clients, **faults)
        controller.clients = self.flaky
        self.recorder.attach(controller)
        self.controller = controller
        self._stop = StopEvent()
        logged = len(self.logbook.messages)
        self._thread = threading.Thread(
            target=run_controller, args=(controller, workers, self._stop), name="foo-controller"
        )
        self._thread.start()
        if not self.logbook.wait_for("Started workers", after=logged, timeout=JOIN_TIMEOUT):
            raise TimeoutError("the controller's workers did not start: are its caches syncing?")
        return controller

    def _new(
        self,
        controller_class: type[FooController],
        api: kubernetes.client.ApiClient,
        workqueue: RateLimitingQueue[str] | None,
    ) -> FooController:
        """``controller_class.new(...)``, or the same wiring with a slow Foo watch."""
        if self.slow_watch is None:
            return controller_class.new(api, namespace=self.namespace, workqueue=workqueue)
        where = f"/namespaces/{self.namespace}"
        foos = SharedInformer(
            ListWatch(api, f"/apis/{FOO_GROUP}/{FOO_VERSION}{where}/{FOO_PLURAL}"),
            name="foos",
            transform=self.slow_watch,
        )
        self.slow_watch.informer = foos
        deployments = SharedInformer(ListWatch(api, f"/apis/apps/v1{where}/deployments"),
                                     name="deployments")  # fmt: skip
        return controller_class(KubeClients(api), foos, deployments, workqueue=workqueue)

    def settle(self, name: str, replicas: int, since: float, timeout: float = 60) -> list[Sync]:
        """Wait until the controller has acted on a change of Foo ``name`` made at ``since``.

        That is: a sync of it that started after ``since`` has ended; the Foo
        reports ``replicas`` available; a sync has read the Foo as it is now;
        and every sync that started after ``since`` has ended. Returns those syncs.
        """
        key = f"{self.namespace}/{name}"
        self.recorder.wait_for(
            lambda r: any(s.ended is not None for s in r.syncs(key, since)),
            f"a sync of {key} after t+{since:.3f}s", timeout,
        )  # fmt: skip
        foo = self.foos.wait_available(name, replicas)
        self.recorder.wait_saw("Foo", name, foo["metadata"]["resourceVersion"], timeout)
        return self.quiet(since, timeout)

    def quiet(self, since: float, timeout: float = 60) -> list[Sync]:
        """Wait until every sync that started after ``since`` has ended; returns them."""
        self.recorder.wait_for(
            lambda r: all(s.ended is not None for s in r.syncs(since=since)),
            "the syncs to end", timeout,
        )  # fmt: skip
        return self.recorder.syncs(since=since)

    def stop(self) -> None:
        """Stop the controller (its workers finish the syncs they are in) and join it."""
        if self.slow_watch is not None:
            self.slow_watch.release()
        if self.flaky is not None:
            self.flaky.release_all()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(JOIN_TIMEOUT)
            if self._thread.is_alive():
                raise TimeoutError("the controller did not stop within 30 s")
        self._thread = None
        if self._paced is not None:
            self._paced.close()
            self._paced = None


# --- the Foos of a namespace -----------------------------------------------------------------


class Foos:
    """Create, change, read and wait on the Foos of one namespace, as a user would."""

    def __init__(self, api: kubernetes.client.ApiClient, namespace: str) -> None:
        self.custom = kubernetes.client.CustomObjectsApi(api)
        self.namespace = namespace

    def _args(self) -> tuple[str, str, str, str]:
        return FOO_GROUP, FOO_VERSION, self.namespace, FOO_PLURAL

    def create(self, name: str, replicas: int, labels: Mapping[str, str] | None = None) -> dict:
        """A Foo ``name`` asking for a Deployment ``name`` of ``replicas``."""
        body = foo_body(name, name, replicas)
        body["metadata"]["labels"] = dict(labels or {})
        return self.custom.create_namespaced_custom_object(*self._args(), body)

    def ensure(self, name: str, replicas: int, labels: Mapping[str, str] | None = None) -> None:
        """Create Foo ``name`` unless it exists already."""
        try:
            self.create(name, replicas, labels)
        except ApiException as err:
            if err.status != 409:
                raise

    def patch(self, name: str, patch: Mapping[str, Any]) -> dict:
        """Change Foo ``name`` as a user would (a merge patch); returns the Foo as stored."""
        return self.custom.patch_namespaced_custom_object(*self._args(), name, patch)

    def patch_status(self, name: str, status: Mapping[str, Any]) -> dict:
        """Write Foo ``name``'s status by hand (a merge patch of ``/status``)."""
        args = (*self._args(), name, {"status": dict(status)})
        return self.custom.patch_namespaced_custom_object_status(*args)

    def read(self, name: str) -> dict:
        return self.custom.get_namespaced_custom_object(*self._args(), name)

    def delete(self, name: str) -> None:
        self.custom.delete_namespaced_custom_object(*self._args(), name)

    def delete_all(self, label_selector: str | None = None) -> None:
        self.custom.delete_collection_namespaced_custom_object(
            *self._args(), label_selector=label_selector
        )

    def wait(self, condition: Callable[[dict], bool], what: str, timeout: float = 60) -> dict:
        """Wait (by watching) until ``condition`` holds for the Foos, by name; returns them."""
        group, version, namespace, plural = self._args()
        return wait_for(
            self.custom.list_namespaced_custom_object, condition, what=what, timeout=timeout,
            group=group, version=version, namespace=namespace, plural=plural,
        )  # fmt: skip

    def wait_available(self, name: str, replicas: int) -> dict:
        """Wait until Foo ``name`` reports ``replicas`` available; returns the Foo."""

        def reports(foos: dict) -> bool:
            return ((foos.get(name) or {}).get("status") or {}).get("availableReplicas") == replicas

        return self.wait(reports, f"Foo {name} to report {replicas} available")[name]


# --- conflicts -------------------------------------------------------------------------------


def retry_on_conflict(
    update: Callable[[], T], *, steps: int = 5, delay: float = 0.01, jitter: float = 0.1
) -> T:
    """Call ``update`` until it does not fail with 409 Conflict, at most ``steps`` times.

    client-go ``retry.RetryOnConflict(retry.DefaultRetry, fn)``: 5 tries,
    10 ms apart (plus up to 10% jitter); see
    https://github.com/kubernetes/client-go/blob/v0.36.3/util/retry/util.go#L25-L33 and
    https://github.com/kubernetes/client-go/blob/v0.36.3/util/retry/util.go#L103-L105.
    ``update`` must read the object afresh each time (from the API server: a cache
    may still hold the stale copy), apply its change, and write. Other errors, and
    the last conflict, are raised.
    """
    for attempt in range(1, steps + 1):
        try:
            return update()
        except ApiException as err:
            if err.status != 409 or attempt == steps:
                raise
        time.sleep(delay * (1 + jitter * random.random()))  # a backoff, as client-go's
    raise AssertionError("unreachable")


def compare_resource_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as resourceVersion ``a`` is older than, the same as, or newer than ``b``.

    apimachinery ``resourceversion.CompareResourceVersion``
    (https://github.com/kubernetes/apimachinery/blob/v0.36.3/pkg/util/resourceversion/resourceversion.go#L45-L66):
    since Kubernetes 1.35 (KEP-5504) the versions of objects of one resource
    are decimal integers without leading zeros, so the shorter is older and
    equal lengths compare digit by digit. Anything else raises ``ValueError``,
    as upstream returns an error (zero is not well formed either).
    """
    for version in (a, b):
        if not version.isdigit() or version.startswith("0"):
            raise ValueError(f"resource version is not well formed: {version!r}")
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    return (a > b) - (a < b)


# --- the two status fields sample-controller's CRD lacks -------------------------------------

FOO_CRD = "foos.samplecontroller.k8s.io"
STATUS_FIELDS = {
    "observedGeneration": {"type": "integer", "format": "int64"},
    "lastSyncTime": {"type": "string", "format": "date-time"},
}


def extend_foo_status(api: kubernetes.client.ApiClient, namespace: str = "default") -> None:
    """Let a Foo's status hold ``observedGeneration`` and ``lastSyncTime`` (idempotent).

    ``namespace`` is where the API server is asked (dry run) whether it serves them yet; a
    workshop attendee passes their own, and needs no right to change the CRD once the
    facilitator's ``python -m helpers.cluster.workshop up`` has extended it for everyone.
    """
    _change_status_schema(api, lambda properties: properties.update(STATUS_FIELDS), namespace)


def restore_foo_status(api: kubernetes.client.ApiClient, namespace: str = "default") -> None:
    """Take the fields :func:`extend_foo_status` added out again (idempotent)."""

    def remove(properties: dict[str, Any]) -> None:
        for name in STATUS_FIELDS:
            properties.pop(name, None)

    _change_status_schema(api, remove, namespace)


def foo_status_fields(api: kubernetes.client.ApiClient) -> list[str]:
    """The fields the Foo CRD's schema allows in a Foo's status, sorted."""
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    crd = api.sanitize_for_serialization(extensions.read_custom_resource_definition(FOO_CRD))
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    return sorted(status.get("properties") or {})


def status_is_extended(api: kubernetes.client.ApiClient) -> bool:
    """Does the Foo CRD's schema have the fields :func:`extend_foo_status` adds?"""
    return set(STATUS_FIELDS) <= set(foo_status_fields(api))


def _change_status_schema(
    api: kubernetes.client.ApiClient,
    change: Callable[[dict[str, Any]], None],
    namespace: str,
) -> None:
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    crd = api.sanitize_for_serialization(extensions.read_custom_resource_definition(FOO_CRD))
    before = copy.deepcopy(crd)
    for version in crd["spec"]["versions"]:
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        change(status.setdefault("properties", {}))
    if crd != before:
        extensions.replace_custom_resource_definition(FOO_CRD, crd)
    wanted = set(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
                 .get("properties", {}))  # fmt: skip
    _wait_until_served(api, wanted, namespace)


def _wait_until_served(api: kubernetes.client.ApiClient, fields: set[str], namespace: str) -> None:
    """Wait until the API server decodes Foos with the new schema (it updates its handler for
    Foos a moment after the CRD changes, and says so nowhere we could watch: so we ask)."""
    deadline = time.monotonic() + 30
    while not _schema_knows(api, fields, namespace):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the API server did not serve Foo status fields {sorted(fields)}")
        time.sleep(0.1)  # polling a condition nobody announces


def _schema_knows(api: kubernetes.client.ApiClient, fields: set[str], namespace: str) -> bool:
    """Does a strict, dry-run create accept exactly these status fields (and no others)?"""
    custom = kubernetes.client.CustomObjectsApi(api)
    every = set(STATUS_FIELDS) | {"availableReplicas"}
    for name in every:
        probe = {
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"generateName": "schema-probe-"},
            "status": {name: "2026-01-01T00:00:00Z" if name == "lastSyncTime" else 1},
        }
        try:
            custom.create_namespaced_custom_object(
                "samplecontroller.k8s.io", "v1alpha1", namespace, "foos", probe,
                dry_run="All", field_validation="Strict",
            )  # fmt: skip
            accepted = True
        except ApiException as err:
            if err.status != 400:
                raise
            accepted = False
        if accepted != (name in fields):
            return False
    return True
