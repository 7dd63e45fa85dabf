"""The Foos of one namespace, as a user handles them: create, change, read, wait.

A typed client over the official client's ``CustomObjectsApi`` for
sample-controller's ``Foo``: :class:`Foos` makes a Foo asking for a Deployment,
patches its spec or (by hand) its status, deletes, and waits by watching until
the Foos reach a state. Chapter 06's bench and playground drive their Foos with
it; the controller itself never uses it (it reads its caches).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.waiting import wait_for


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
