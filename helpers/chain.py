"""Record the chain from a Deployment down to its Pods, as the changes arrive.

No client-go counterpart: an instrument written by hand from chapters 01-03's
parts (chapter 07 uses it from its first cells, and its last section says how it
attributes a change). One :class:`helpers.informer.SharedInformer` per kind
(Deployments, ReplicaSets, Pods and Events of a namespace, the cluster's Nodes,
optionally Foos) hands every change to a handler that writes it down with the
time it arrived (an :class:`~helpers.attribution.Observation`). The informers
keep ``managedFields``: here they are the evidence. Each informer is a watch of
its own, so the times of two kinds are not in the order things happened: a Pod
can arrive a moment before the ReplicaSet that created it.

:meth:`ChainRecorder.changes` hands the observations, with the Events, Nodes and
live objects the informers hold, to :mod:`helpers.attribution`, which says who
made each change and how we know; :meth:`ChainRecorder.wait_for` waits on that
attributed record. :mod:`helpers.chain_table` folds it into a table and
:mod:`helpers.swimlanes` draws it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes

from helpers.attribution import (
    DEFAULT_STATUS_WRITERS,
    FIELDS,
    RESOURCES,
    Change,
    Observation,
    changes_of,
    settled,
    with_unbound_waits,
)
from helpers.errors import CourseError
from helpers.informer import SharedInformer, wait_for_cache_sync
from helpers.listwatch import ListWatch
from helpers.store import DeletedFinalStateUnknown

# --- the kinds of the chain, and the recorder ---------------------------------------------


@dataclass(frozen=True)
class Kind:
    """A kind the recorder watches, and its collection path."""

    name: str
    path: str


def kinds(namespace: str, *, foos: bool = False) -> list[Kind]:
    """Deployments, ReplicaSets, Pods and Events of ``namespace``, the Nodes, and maybe Foos."""
    where = f"/namespaces/{namespace}"
    chosen = [
        Kind("Deployment", f"/apis/apps/v1{where}/deployments"),
        Kind("ReplicaSet", f"/apis/apps/v1{where}/replicasets"),
        Kind("Pod", f"/api/v1{where}/pods"),
        Kind("Event", f"/api/v1{where}/events"),
        Kind("Node", "/api/v1/nodes"),  # cluster-scoped: we only read them
    ]
    if foos:
        chosen.insert(0, Kind("Foo", f"/apis/samplecontroller.k8s.io/v1alpha1{where}/foos"))
    return chosen


class ChainRecorder:
    """Informers on every kind of the chain, writing down each change as it arrives.

    ``with ChainRecorder(api, namespace) as recorder:`` starts the informers and
    waits for their caches; the clock starts then. ``observations()`` is the raw
    record, ``changes()`` the attributed one, ``wait_for`` waits on it.
    ``writers`` names the controller writing each resource's status
    (:func:`helpers.attribution.status_writers`).
    """

    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        namespace: str,
        *,
        foos: bool = False,
        writers: Mapping[str, str] | None = None,
    ) -> None:
        self.namespace = namespace
        self.kinds = kinds(namespace, foos=foos)
        self.writers = dict(DEFAULT_STATUS_WRITERS if writers is None else writers)
        self.informers = {
            kind.name: SharedInformer(
                ListWatch(api, kind.path), name=f"chain-{kind.name}", transform=None
            )
            for kind in self.kinds
        }
        self._lock = threading.Lock()  # guards _observations
        self._observations: list[Observation] = []
        self._arrived = threading.Event()  # set after every observation (see wait_for)
        self._attributed: dict[int, list[Change]] = {}  # see changes()
        self._started_at = time.monotonic()
        for kind in self.kinds:
            self.informers[kind.name].add_event_handler(
                _Recording(self, kind.name), name="recorder"
            )

    def record(self, kind: str, verb: str, old: Any, new: Any) -> None:
        """Write one observation down (called by the informers' handler threads)."""
        observation = Observation(self.now(), kind, verb, old, new, resource_version(new))
        with self._lock:
            self._observations.append(observation)
        self._arrived.set()

    def _observed(self) -> int:
        """How many observations have been recorded so far."""
        with self._lock:
            return len(self._observations)

    def observations(self, since: float = 0.0) -> list[Observation]:
        """Everything recorded at or after ``since`` (seconds since start), in arrival order."""
        with self._lock:
            return [o for o in self._observations if o.at >= since]

    def start(self, timeout: float = 30.0) -> ChainRecorder:
        """Start every informer and wait until their caches have synced; the clock starts then."""
        for informer in self.informers.values():
            informer.start()
        if not wait_for_cache_sync(*self.informers.values(), timeout=timeout):
            self.stop()
            raise CourseError(
                f"The recorder's informers did not sync within {timeout:.0f}s.",
                "check that the cluster answers: `python -m helpers.cluster status`.",
            )
        self._started_at = time.monotonic()
        return self

    def stop(self) -> None:
        """Stop every informer, and join their threads."""
        for informer in self.informers.values():
            informer.stop()
        for informer in self.informers.values():
            informer.join(30)

    def __enter__(self) -> ChainRecorder:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def now(self) -> float:
        """Seconds since ``start()``: the clock of every observation."""
        return time.monotonic() - self._started_at

    def objects(self, kind: str) -> list[Mapping[str, Any]]:
        """The cached objects of ``kind`` (read-only dicts, as the informer holds them)."""
        return self.informers[kind].indexer.list()

    def nodes(self) -> dict[str, Mapping[str, Any]]:
        """The cluster's Nodes by name, from the Node informer's cache."""
        return {node["metadata"]["name"]: node for node in self.objects("Node")}

    def alive(self) -> dict[str, set[str]]:
        """For each kind of the chain: the UIDs of its objects that are not being deleted."""
        return {
            kind: {
                o["metadata"]["uid"]
                for o in self.objects(kind)
                if not (o.get("metadata") or {}).get("deletionTimestamp")
            }
            for kind in self.informers
            if kind in RESOURCES
        }

    def changes(self, since: float = 0.0) -> list[Change]:
        """The attributed changes since ``since``, step 4 included (as
        :func:`helpers.attribution.attribute_all` makes them)."""
        events, nodes, alive = self.objects("Event"), self.nodes(), self.alive()
        changes = []
        for observation in self.observations(since):
            if observation.kind not in FIELDS:
                continue
            known = self._attributed.get(id(observation))  # kept observations keep their id
            if known is None:
                known = changes_of(observation, events, self.writers, nodes, alive)
                if not any(change.pending for change in known):
                    self._attributed[id(observation)] = known
            changes.extend(known)
        return with_unbound_waits(changes, nodes)

    def wait_for(
        self,
        condition: Callable[[list[Change]], bool],
        *,
        what: str,
        since: float = 0.0,
        timeout: float = 60.0,
    ) -> list[Change]:
        """Block until no change since ``since`` is pending and ``condition(changes)`` holds.

        ``condition`` may read the whole record too (:meth:`wait_settled` does):
        a judgement counts only if nothing arrived while it was made, so the
        changes returned are the ones it was made on. Each arrival wakes us to
        judge again. The judging holds no lock the informers' threads need: a
        judgement of a long record takes a while, and an informer that waited
        for it would write the next changes down late, all at one time.
        """
        deadline = time.monotonic() + timeout
        while True:
            self._arrived.clear()  # an arrival from now on wakes the wait below at once
            before = self._observed()
            changes = self.changes(since)
            if (
                not any(change.pending for change in changes)
                and condition(changes)
                and self._observed() == before  # nothing arrived meanwhile: judge again if it did
            ):
                return changes
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._arrived.wait(left)
        pending = [change for change in self.changes(since) if change.pending]
        unproven = (
            f", and {pending[0].kind} {pending[0].name}'s {pending[0].field} has no Event yet"
            if pending
            else ""
        )
        raise CourseError(
            f"Timed out after {timeout:.0f}s waiting for {what}{unproven}.",
            "look at the cluster's logs (`python -m helpers.cluster logs`) and run the cell again.",
        )

    def wait_settled(
        self,
        name: str,
        replicas: int,
        *,
        since: float,
        also: Callable[[list[Change]], bool] | None = None,
        timeout: float = 60.0,
    ) -> list[Change]:
        """Wait until Deployment ``name`` has settled at ``replicas`` (judged on the whole
        record by :func:`helpers.attribution.settled`) and ``also`` holds for the changes since
        ``since``; returns those."""

        def condition(changes: list[Change]) -> bool:
            return settled(name, replicas)(self.changes()) and (also is None or also(changes))

        what = f"Deployment {name} to settle at {replicas} Ready Pods"
        return self.wait_for(condition, what=what, since=since, timeout=timeout)


class _Recording:
    """The recorder's event handler for one kind: every change after the initial list."""

    def __init__(self, recorder: ChainRecorder, kind: str) -> None:
        self.recorder = recorder
        self.kind = kind

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if not is_in_initial_list:  # the initial list is the starting point, not a change
            self.recorder.record(self.kind, "added", None, obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.recorder.record(self.kind, "updated", old, new)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):  # a delete seen only through a re-list
            obj = obj.obj
        self.recorder.record(self.kind, "deleted", None, obj)


def resource_version(obj: Mapping[str, Any]) -> int | None:
    """An object's resourceVersion as a number, or None."""
    value = (obj.get("metadata") or {}).get("resourceVersion")
    return int(value) if isinstance(value, str) and value.isdigit() else None
