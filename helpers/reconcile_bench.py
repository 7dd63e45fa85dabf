"""Chapter 06's bench: chapter 05's Foo controller, run in the background, observed, restarted.

No single client-go counterpart; an instrument written by hand, so that
chapters 06a and 06b can show the reconcile loop's behaviour from their first
cells (06a's deep dive on the instruments says how they work). :class:`Bench`
runs a :class:`~helpers.controller.FooController` in background threads with a
:class:`~helpers.timeline.TimelineRecorder` attached, and restarts it with other
options: another controller class, more workers, another workqueue, faulty
clients (:class:`helpers.faults.clients.FlakyClients`), a client paced as
client-go paces one (:func:`helpers.throttle.throttle_per_group`), a slow watch
(:class:`helpers.faults.slow_watch.SlowWatch`). The ``helpers`` log goes into a
:class:`helpers.logbook.LogBook`, not under whichever cell runs; its Foos are
a :class:`helpers.foos.Foos`.
"""

from __future__ import annotations

import threading
from typing import Any

import kubernetes

from helpers.clock import StopEvent
from helpers.controller import (
    FOO_GROUP,
    FOO_PLURAL,
    FOO_VERSION,
    FooController,
    KubeClients,
    run_controller,
)
from helpers.faults.clients import FlakyClients
from helpers.faults.slow_watch import SlowWatch
from helpers.foos import Foos
from helpers.informer import SharedInformer
from helpers.listwatch import ListWatch
from helpers.logbook import LogBook
from helpers.throttle import Throttle, throttle_per_group
from helpers.timeline import Sync, TimelineRecorder
from helpers.workqueue import RateLimitingQueue

JOIN_TIMEOUT = 30.0
"""Seconds a stopping controller may take to finish the syncs it is in."""


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
