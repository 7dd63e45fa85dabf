"""Solutions to chapter 09's exercises. Try them yourself first!

Each is a test: it takes the controller class to test (and the cluster, if it
needs it), passes on chapter 05's FooController and fails on the planted bug.
"""

from __future__ import annotations

import copy

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.controller import FooController
from helpers.testing.on_cluster import ControllerUnderTest
from helpers.testing.recording import cached_deployment, cached_foo, sync_once


def test_1(
    controller_class: type[FooController], api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """A Foo that has converged needs no Deployment update when it is synced again.

    Only the API server shows the bug: hand-made Deployments equal what
    new_deployment builds, the server's never do (it fills in defaults).
    """
    with ControllerUnderTest(api, namespace, controller_class=controller_class, run="ex1") as run:
        run.create_foo("steady", 2)
        run.wait_converged("steady")
        again = run.resync("steady")
        assert again.wrote("update Deployment") == 0, f"a resync wrote {again.writes}"


def test_2(controller_class: type[FooController]) -> None:
    """A 409 on the status write must fail the sync, so that the key is retried."""
    foo = cached_foo("test", 1)
    outcome = sync_once(
        controller_class,
        "default/test",
        foos=[foo],
        deployments=[cached_deployment(foo, available=1)],
        fail={"update_foo_status": ApiException(status=409, reason="Conflict")},
    )
    assert outcome.error is not None, "the sync met a 409 and returned as if it had succeeded"


def test_3(controller_class: type[FooController]) -> None:
    """A sync leaves the objects in the informer's cache exactly as it found them."""
    foo = cached_foo("test", 1)
    before = copy.deepcopy(foo)
    outcome = sync_once(
        controller_class,
        "default/test",
        foos=[foo],
        deployments=[cached_deployment(foo, available=1)],
    )
    cached = outcome.controller.foos_lister.namespace("default").get("test")
    assert cached == before, f"the sync changed the cached Foo: {cached.get('status')}"


def test_4(
    controller_class: type[FooController], api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """A Deployment scaled behind its Foo's back comes back, and the Foo reports its Pods.

    Only the Deployment changes here, so only its update can wake the
    controller: nothing about the Foo changes, so no Foo event can hide the bug
    (waiting for the first Pods to become available could: a sync woken by the
    controller's own status write may happen to read them). And envtest could
    not answer it: there, no Pod ever becomes available. Here
    kube-controller-manager makes the Pods and kwok makes them Ready.
    """
    apps = kubernetes.client.AppsV1Api(api)
    with ControllerUnderTest(api, namespace, controller_class=controller_class, run="ex4") as run:
        run.create_foo("follows", 2)
        run.wait_converged("follows")

        def available(obj: dict | None) -> int | None:
            return ((obj or {}).get("status") or {}).get("availableReplicas")

        run.wait_until(lambda: available(run.deployment("follows-deployment")) == 2, "Pods")
        scaled = apps.patch_namespaced_deployment(
            "follows-deployment", namespace, {"spec": {"replicas": 1}}
        )

        def put_back() -> bool:
            deployment = run.deployment("follows-deployment") or {}
            metadata, status = deployment.get("metadata") or {}, deployment.get("status") or {}
            return (
                metadata.get("generation", 0) > scaled.metadata.generation  # changed after ours
                and deployment["spec"]["replicas"] == 2
                and status.get("observedGeneration") == metadata["generation"]
                and available(deployment) == 2
                and available(run.foo("follows")) == 2
            )

        run.wait_until(put_back, "the Deployment back at 2 available Pods, and the Foo saying so",
                       timeout=20)  # fmt: skip
