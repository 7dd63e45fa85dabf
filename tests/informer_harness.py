"""Shared pieces for the informer's tests against the real cluster.

:class:`Recorder` is an event handler that keeps its own idea of which
objects exist, built from the events alone. After a failure drill, the test
waits until both the informer's cache and the recorder agree with a fresh
list from the API server: then no event was lost and no delete went unseen.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.store import DeletedFinalStateUnknown, meta_namespace_key

LABEL = {"course-test": "informer"}
SELECTOR = "course-test=informer"


class Recorder:
    """Handler callbacks that track ``{key: resourceVersion}`` and every delete."""

    def __init__(self) -> None:
        self.live: dict[str, str] = {}
        self.deleted: set[str] = set()
        self.tombstones: set[str] = set()
        self.events = 0
        self._changed = threading.Condition()

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool = False) -> None:
        self._record(meta_namespace_key(obj), obj["metadata"]["resourceVersion"])

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._record(meta_namespace_key(new), new["metadata"]["resourceVersion"])

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key(obj)
        with self._changed:
            self.live.pop(key, None)
            self.deleted.add(key)
            if isinstance(obj, DeletedFinalStateUnknown):
                self.tombstones.add(key)
            self.events += 1
            self._changed.notify_all()

    def _record(self, key: str, resource_version: str) -> None:
        with self._changed:
            self.live[key] = resource_version
            self.events += 1
            self._changed.notify_all()

    def wait_for(self, expected: dict[str, str], timeout: float) -> bool:
        """Block until the recorded view equals ``expected`` (woken by each event)."""
        with self._changed:
            return self._changed.wait_for(lambda: self.live == expected, timeout)

    def wait_until_seen(self, key: str, timeout: float) -> bool:
        """Block until ``key`` is in the recorded view."""
        with self._changed:
            return self._changed.wait_for(lambda: key in self.live, timeout)


def cache_view(indexer: Any) -> dict[str, str]:
    return {meta_namespace_key(obj): obj["metadata"]["resourceVersion"] for obj in indexer.list()}


class Churn:
    """Random creates, updates and deletes of labelled objects (seeded, so repeatable).

    ``kind`` is ``"configmaps"`` or ``"podtemplates"`` (which bypass the API
    server's watch cache, see helpers/cluster/local.py). Names are never reused,
    so a deleted key stays deleted.
    """

    def __init__(
        self, api: kubernetes.client.ApiClient, namespace: str, kind: str = "configmaps",
        seed: int = 7,
    ) -> None:  # fmt: skip
        core = kubernetes.client.CoreV1Api(api)
        self.create, self.patch, self.delete, self.list = {
            "configmaps": (core.create_namespaced_config_map, core.patch_namespaced_config_map,
                           core.delete_namespaced_config_map, core.list_namespaced_config_map),
            "podtemplates": (core.create_namespaced_pod_template,
                             core.patch_namespaced_pod_template,
                             core.delete_namespaced_pod_template,
                             core.list_namespaced_pod_template),
        }[kind]  # fmt: skip
        self.kind = kind
        self.namespace = namespace
        self.random = random.Random(seed)
        self.existing: set[str] = set()
        self.deleted: set[str] = set()  # keys deleted at least once
        self.counter = 0

    def body(self, name: str) -> dict[str, Any]:
        metadata = {"name": name, "labels": LABEL}
        if self.kind == "configmaps":
            return {"metadata": metadata, "data": {"n": "0"}}
        container = {"name": "app", "image": "nginx:latest"}
        return {"metadata": metadata, "template": {"spec": {"containers": [container]}}}

    def change(self) -> dict[str, Any]:
        value = str(self.random.randint(1, 10**6))
        if self.kind == "configmaps":
            return {"data": {"n": value}}
        return {"template": {"metadata": {"annotations": {"n": value}}}}

    def step(self) -> None:
        choice = self.random.random()
        if not self.existing or choice < 0.45:
            self.counter += 1
            name = f"{self.kind[:3]}-{self.counter}"
            self.create(self.namespace, self.body(name))
            self.existing.add(name)
        elif choice < 0.8:
            name = self.random.choice(sorted(self.existing))
            self.patch(name, self.namespace, self.change())
        else:
            name = self.random.choice(sorted(self.existing))
            try:
                self.delete(name, self.namespace)
            except ApiException as exc:
                if exc.status != 404:
                    raise
            self.existing.discard(name)
            self.deleted.add(f"{self.namespace}/{name}")

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()

    def fresh_view(self) -> dict[str, str]:
        """``{key: resourceVersion}`` of the labelled objects, straight from the API server."""
        listed = self.list(self.namespace, label_selector=SELECTOR)
        return {f"{self.namespace}/{item.metadata.name}": item.metadata.resource_version
                for item in listed.items}  # fmt: skip
