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
    """The Foo's status follows its Deployment's available replicas.

    envtest could not answer this: there, no Pod ever becomes available. Here
    kube-controller-manager makes the Pods and kwok makes them Ready; once the
    Deployment reports 2 available, the Foo must say so too, soon.
    """
    with ControllerUnderTest(api, namespace, controller_class=controller_class, run="ex4") as run:
        run.create_foo("follows", 2)
        run.wait_converged("follows")

        def available(obj: dict | None) -> int | None:
            return ((obj or {}).get("status") or {}).get("availableReplicas")

        run.wait_until(lambda: available(run.deployment("follows-deployment")) == 2, "Pods")
        run.wait_until(lambda: available(run.foo("follows")) == 2, "the Foo to follow", timeout=10)
