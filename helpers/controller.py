"""FooController: sample-controller, in Python, on the course's own machinery.

Counterpart: kubernetes/sample-controller ``controller.go``
(``Controller``, ``NewController``, ``Run``, ``runWorker``,
``processNextWorkItem``, ``syncHandler``, ``updateFooStatus``, ``enqueueFoo``,
``handleObject``, ``newDeployment``) and the wiring half of ``main.go``.

A Foo asks for a Deployment named ``spec.deploymentName`` with
``spec.replicas`` replicas; the controller makes it so and reports the
Deployment's ``availableReplicas`` in the Foo's status. The code reads in the
order the data flows::

    Foo informer --------> enqueue_foo ----\\
    Deployment informer -> handle_object ---> workqueue "Foos" (keys "ns/name")
                                               |
    run: N worker threads -> run_worker -> process_next_work_item -> sync_handler
                                                                      |
                          lister reads, then create/update Deployment, update_foo_status, Event

Three ideas carry the pattern:

* Handlers only enqueue a *key*. Ten changes to one Foo are one sync, and the
  sync reads the newest state from the cache, never from the event.
* A change to a Deployment is traced to its Foo through the controller owner
  reference, so one sync function handles both kinds of change.
* A failed sync goes back on the queue with per-item exponential backoff; a
  successful one is forgotten. The controller never gives up on a Foo.

Every API call goes through a :class:`Clients` object, so a unit test can
record what the controller *did* without an API server (sample-controller's
tests use fake clientsets for the same reason). :class:`KubeClients` is the
real one.

How this differs from sample-controller:

* ``run`` joins its worker threads before returning, and a worker stops taking
  new keys once the stop event is set; upstream's goroutines just end with the
  process.
* Events are written synchronously by :class:`helpers.events.EventRecorder`
  (upstream: an asynchronous broadcaster).
* Keys are ``"ns/name"`` strings (upstream now uses typed ``ObjectName`` keys).
* :meth:`FooController.new` can confine both informers to one namespace
  (upstream always watches all namespaces); tests use that to stay apart.
* Errors are logged with :mod:`logging`; upstream's ``HandleError`` also rate
  limits the log.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
from collections.abc import Mapping
from typing import Any, Protocol

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.clock import Clock, StopEvent
from helpers.events import NORMAL, WARNING, EventRecorder
from helpers.informer import SharedInformer, wait_for_cache_sync
from helpers.kube import explain
from helpers.lister import NotFoundError
from helpers.listwatch import ListWatch
from helpers.store import DeletedFinalStateUnknown, meta_namespace_key, split_meta_namespace_key
from helpers.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)

log = logging.getLogger("helpers.controller")

CONTROLLER_AGENT_NAME = "sample-controller"
"""Who we are in Events (``source.component``) and in managedFields (the field manager)."""
FIELD_MANAGER = CONTROLLER_AGENT_NAME

FOO_GROUP, FOO_VERSION, FOO_PLURAL, FOO_KIND = "samplecontroller.k8s.io", "v1alpha1", "foos", "Foo"

SUCCESS_SYNCED = "Synced"
"""Event reason when a Foo was synced."""
ERR_RESOURCE_EXISTS = "ErrResourceExists"
"""Event reason when a Deployment of the wanted name exists and belongs to someone else."""
MESSAGE_RESOURCE_EXISTS = 'Resource "{name}" already exists and is not managed by Foo'
MESSAGE_RESOURCE_SYNCED = "Foo synced successfully"

RESYNC_PERIOD = 30.0
"""Informer resync of sample-controller's main.go: every Foo is re-checked this often."""

REQUEST_TIMEOUT = 30.0
"""Seconds an API call may take: a stuck connection must not hold a worker (and ``run``) forever."""


class ResourceExistsError(RuntimeError):
    """The Deployment a Foo names exists and is not controlled by that Foo."""


class CacheSyncError(RuntimeError):
    """The informers' caches did not sync before ``run`` was told to stop."""


class Clients(Protocol):
    """The writes the controller makes (upstream: two clientsets and an event recorder).

    Objects are raw dicts shaped like the API's JSON; each call returns the
    object the API server sent back.
    """

    def create_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]: ...

    def update_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]: ...

    def update_foo_status(self, namespace: str, foo: dict[str, Any]) -> dict[str, Any]: ...

    def record_event(
        self, obj: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None: ...


def foo_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter:
    """sample-controller's limiter: per Foo 5 ms doubling to 1000 s, all Foos 50 qps (burst 300).

    Not client-go's default (10 qps, burst 100): sample-controller allows more
    retries per second overall, and keeps the same per-item backoff.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=50, burst=300, clock=clock),
    )


class FooController:
    """Keeps, for every Foo, a Deployment that matches it (sample-controller ``Controller``).

    Give it the two informers (not yet started) and the clients; it registers
    its handlers at once. Start the informers, then call :meth:`run`.
    :meth:`new` builds everything from an API client, as ``main.go`` does.
    """

    def __init__(
        self,
        clients: Clients,
        foo_informer: SharedInformer,
        deployment_informer: SharedInformer,
        *,
        workqueue: RateLimitingQueue[str] | None = None,
    ) -> None:
        self.clients = clients
        self.foo_informer = foo_informer
        self.deployment_informer = deployment_informer
        self.foos_lister = foo_informer.lister(FOO_PLURAL, FOO_GROUP)
        self.deployments_lister = deployment_informer.lister("deployments", "apps")
        # Named, so the queue keeps metrics (depth, adds, latency, retries) under "Foos".
        self.workqueue: RateLimitingQueue[str] = (
            workqueue if workqueue is not None else RateLimitingQueue(foo_rate_limiter(), "Foos")
        )
        self.worker_threads: list[threading.Thread] = []

        log.info("Setting up event handlers")
        # No delete handler for Foos: the Deployment carries an owner reference,
        # so the garbage collector deletes it with its Foo.
        foo_informer.add_event_handler(
            on_add=lambda foo, _initial: self.enqueue_foo(foo),
            on_update=lambda _old, new: self.enqueue_foo(new),
            name="foo-controller",
        )
        # A Deployment's change is turned into its owning Foo's key, so that one
        # sync_handler deals with both kinds of change.
        deployment_informer.add_event_handler(
            on_add=lambda deployment, _initial: self.handle_object(deployment),
            on_update=self.handle_deployment_update,
            on_delete=self.handle_object,
            name="foo-controller",
        )

    @classmethod
    def new(
        cls,
        api: kubernetes.client.ApiClient,
        *,
        namespace: str | None = None,
        resync_period: float = RESYNC_PERIOD,
    ) -> FooController:
        """A controller for the Foos (and Deployments) of ``namespace``, or of all namespaces.

        The wiring of sample-controller's ``main.go``: one informer per kind,
        the real clients, and an Event recorder named ``sample-controller``.
        """
        where = f"/namespaces/{namespace}" if namespace else ""
        foo_path = f"/apis/{FOO_GROUP}/{FOO_VERSION}{where}/{FOO_PLURAL}"
        foos = SharedInformer(ListWatch(api, foo_path), name="foos", resync_period=resync_period)
        deployments = SharedInformer(
            ListWatch(api, f"/apis/apps/v1{where}/deployments"),
            name="deployments",
            resync_period=resync_period,
        )
        return cls(KubeClients(api), foos, deployments)

    @property
    def informers(self) -> tuple[SharedInformer, SharedInformer]:
        """Both informers, for whoever starts and stops them (``run_controller``)."""
        return self.foo_informer, self.deployment_informer

    # --- running ----------------------------------------------------------------------------

    def run(self, workers: int, stop: StopEvent) -> None:
        """Wait for both caches, run ``workers`` worker threads until ``stop`` is set, join them.

        sample-controller ``Run``. The informers must have been started. Workers
        wait for the caches because a sync that reads an empty cache would
        conclude that every Deployment is missing and try to create it.
        Raises :class:`CacheSyncError` if ``stop`` comes first.
        """
        try:
            log.info("Starting Foo controller")
            log.info("Waiting for informer caches to sync")
            if not wait_for_cache_sync(*self.informers, timeout=None, stop=stop):
                raise CacheSyncError("failed to wait for caches to sync")

            log.info("Starting workers count=%d", workers)
            self.worker_threads = [
                threading.Thread(target=self.run_worker, args=(stop,), name=f"foo-worker-{n}")
                for n in range(1, workers + 1)
            ]
            for thread in self.worker_threads:
                thread.start()
            log.info("Started workers")
            stop.wait()
            log.info("Shutting down workers")
        finally:
            # Wakes every worker blocked in get(); each finishes the key it holds.
            self.workqueue.shut_down()
            for thread in self.worker_threads:
                thread.join()

    def run_worker(self, stop: StopEvent) -> None:
        """Sync keys until the queue shuts down or ``stop`` is set (``runWorker``)."""
        while not stop.is_set() and self.process_next_work_item():
            pass

    def process_next_work_item(self) -> bool:
        """Sync one key from the queue; False once the queue has shut down.

        sample-controller ``processNextWorkItem``. ``done`` is always owed, or
        the key could never be handed out again. On success ``forget`` resets
        the key's backoff; on failure the key comes back after a growing delay,
        so a transient error is retried without hammering the API server.
        """
        key, shutdown = self.workqueue.get()
        if shutdown or key is None:
            return False
        try:
            self.sync_handler(key)
        except Exception as err:
            log.error("Error syncing; requeuing for later retry: %s: %s", key, _describe(err))
            self.workqueue.add_rate_limited(key)
        else:
            self.workqueue.forget(key)
            log.info("Successfully synced %s", key)
        finally:
            self.workqueue.done(key)
        return True

    # --- one sync -----------------------------------------------------------------------------

    def sync_handler(self, key: str) -> None:
        """Bring the Deployment of Foo ``key`` in line with the Foo, then report its status.

        sample-controller ``syncHandler``. Raising means "retry later"; returning
        means "done with this key until something changes". So we return, not
        raise, where a retry could not help: the Foo is gone, or names no
        Deployment (its next update will enqueue it again).
        """
        try:
            namespace, name = split_meta_namespace_key(key)
        except ValueError:
            log.error("invalid resource key: %s", key)
            return

        try:
            foo = self.foos_lister.namespace(namespace).get(name)
        except NotFoundError:
            log.error("Foo referenced by item in work queue no longer exists: %s", key)
            return

        deployment_name = (foo.get("spec") or {}).get("deploymentName")
        if not deployment_name:
            log.error("Deployment name missing from object reference: %s", key)
            return

        try:
            deployment = self.deployments_lister.namespace(namespace).get(deployment_name)
        except NotFoundError:
            deployment = self.clients.create_deployment(namespace, new_deployment(foo))

        # Never take over a Deployment someone else made: tell the Foo's owner and retry
        # later, in case it is deleted or handed over.
        if not is_controlled_by(deployment, foo):
            message = MESSAGE_RESOURCE_EXISTS.format(name=deployment_name)
            self.clients.record_event(foo, WARNING, ERR_RESOURCE_EXISTS, message)
            raise ResourceExistsError(message)

        # Replicas left out of the Foo are not ours to manage (someone may scale by hand).
        wanted = (foo.get("spec") or {}).get("replicas")
        have = (deployment.get("spec") or {}).get("replicas")
        if wanted is not None and wanted != have:
            log.info("Foo %s wants %s replicas, Deployment has %s: updating", key, wanted, have)
            deployment = self.clients.update_deployment(namespace, new_deployment(foo))

        self.update_foo_status(foo, deployment)
        self.clients.record_event(foo, NORMAL, SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED)

    def update_foo_status(self, foo: Mapping[str, Any], deployment: Mapping[str, Any]) -> None:
        """Write the Deployment's ``availableReplicas`` into the Foo's status (``updateFooStatus``).

        The Foo comes from the cache, which every reader shares: change a copy.
        The write goes to the ``/status`` subresource, which ignores spec
        changes, and carries the Foo's resourceVersion, so a stale copy fails
        with a conflict and is retried with fresh data.
        """
        foo_copy = copy.deepcopy(dict(foo))
        available = (deployment.get("status") or {}).get("availableReplicas", 0)
        foo_copy.setdefault("status", {})["availableReplicas"] = available
        self.clients.update_foo_status(foo_copy["metadata"]["namespace"], foo_copy)

    # --- from informer events to keys --------------------------------------------------------

    def enqueue_foo(self, foo: Any) -> None:
        """Put the Foo's ``"ns/name"`` key on the queue (sample-controller ``enqueueFoo``).

        A key, not the object: by the time a worker gets to it, the cache may
        hold a newer Foo, and that is the one to sync.
        """
        try:
            key = meta_namespace_key(foo)
        except ValueError as err:
            log.error("cannot enqueue %r: %s", foo, err)
            return
        self.workqueue.add(key)

    def handle_deployment_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """A changed Deployment goes to :meth:`handle_object`; a resync does not.

        A periodic resync delivers every cached Deployment as an update with
        the same resourceVersion; two real versions never share one. Foos get
        their resync through their own handler, so nothing is lost.
        """
        if _resource_version(old) == _resource_version(new):
            return
        self.handle_object(new)

    def handle_object(self, obj: Any) -> None:
        """Enqueue the Foo that controls ``obj``, if any (sample-controller ``handleObject``).

        A delete seen only through a re-list arrives as a tombstone holding the
        last known object; its owner references are still good. Objects without
        a controller, controlled by something else, or whose Foo is gone
        (an orphan the garbage collector will remove) are ignored.
        """
        if isinstance(obj, DeletedFinalStateUnknown):
            log.debug("Recovered deleted object %s", obj.key)
            obj = obj.obj
        if not isinstance(obj, Mapping):
            log.error("error decoding object, invalid type: %r", obj)
            return
        owner = controller_of(obj)
        if owner is None or owner.get("kind") != FOO_KIND:
            return
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        try:
            foo = self.foos_lister.namespace(namespace).get(owner.get("name", ""))
        except NotFoundError:
            log.debug("Ignore orphaned object %s/%s", namespace, obj["metadata"].get("name"))
            return
        self.enqueue_foo(foo)


# --- what a Foo asks for ------------------------------------------------------------------------


def new_deployment(foo: Mapping[str, Any]) -> dict[str, Any]:
    """The Deployment a Foo asks for (sample-controller ``newDeployment``).

    Built from scratch every time, so an update replaces whatever drifted. The
    controller owner reference ties it to the Foo: ``handle_object`` follows it
    back, ``is_controlled_by`` checks it, and the garbage collector deletes the
    Deployment with its Foo (``blockOwnerDeletion`` lets a foreground delete of
    the Foo wait for it).
    """
    metadata, spec = foo["metadata"], foo.get("spec") or {}
    labels = {"app": "nginx", "controller": metadata["name"]}
    deployment_spec: dict[str, Any] = {
        "selector": {"matchLabels": dict(labels)},
        "template": {
            "metadata": {"labels": dict(labels)},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]},
        },
    }
    if spec.get("replicas") is not None:
        deployment_spec["replicas"] = spec["replicas"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": spec["deploymentName"],
            "namespace": metadata["namespace"],
            "ownerReferences": [
                {
                    "apiVersion": f"{FOO_GROUP}/{FOO_VERSION}",
                    "kind": FOO_KIND,
                    "name": metadata["name"],
                    "uid": metadata.get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": deployment_spec,
    }


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The owner reference with ``controller: true``, if any (apimachinery ``GetControllerOf``)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") is True:
            return ref
    return None


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """True if ``owner`` is ``obj``'s controller, by UID (apimachinery ``IsControlledBy``).

    By UID, not name: a Foo deleted and re-created under the same name is a
    different owner.
    """
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == (owner.get("metadata") or {}).get("uid")


def _resource_version(obj: Mapping[str, Any]) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _describe(err: Exception) -> str:
    """One line for the log: an API error's Status message, not its HTTP headers."""
    return explain(err) if isinstance(err, ApiException) else str(err)


# --- the real API calls ------------------------------------------------------------------------


class KubeClients:
    """:class:`Clients` backed by the API server; requests and answers are raw JSON dicts."""

    def __init__(
        self, api: kubernetes.client.ApiClient, recorder: EventRecorder | None = None
    ) -> None:
        self._apps = kubernetes.client.AppsV1Api(api)
        self._custom = kubernetes.client.CustomObjectsApi(api)
        self.recorder = recorder or EventRecorder(
            kubernetes.client.CoreV1Api(api), CONTROLLER_AGENT_NAME
        )

    def create_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        return _json(
            self._apps.create_namespaced_deployment(
                namespace, deployment, field_manager=FIELD_MANAGER, **_RAW
            )
        )

    def update_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        # No resourceVersion in a fresh new_deployment(): an unconditional update, as upstream.
        name = deployment["metadata"]["name"]
        return _json(
            self._apps.replace_namespaced_deployment(
                name, namespace, deployment, field_manager=FIELD_MANAGER, **_RAW
            )
        )

    def update_foo_status(self, namespace: str, foo: dict[str, Any]) -> dict[str, Any]:
        return _json(
            self._custom.replace_namespaced_custom_object_status(
                FOO_GROUP,
                FOO_VERSION,
                namespace,
                FOO_PLURAL,
                foo["metadata"]["name"],
                foo,
                field_manager=FIELD_MANAGER,
                **_RAW,
            )
        )

    def record_event(
        self, obj: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        self.recorder.event(obj, event_type, reason, message)


# Skip the client's typed models (we want the JSON as sent) and never wait forever.
_RAW: dict[str, Any] = {"_preload_content": False, "_request_timeout": REQUEST_TIMEOUT}


def _json(response: Any) -> dict[str, Any]:
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


# --- main.go --------------------------------------------------------------------------------------


def run_controller(controller: FooController, workers: int, stop: StopEvent) -> None:
    """Start the informers, run the controller until ``stop``, stop the informers and join them.

    The tail of sample-controller's ``main.go`` (which runs 2 workers). The
    informers start after the controller registered its handlers, so no event
    is missed.
    """
    for informer in controller.informers:
        informer.start()
    try:
        controller.run(workers, stop)
    finally:
        for informer in controller.informers:
            informer.stop()
        for informer in controller.informers:
            if not informer.join(REQUEST_TIMEOUT):
                log.warning("informer %s still has threads running after stop", informer.name)
