"""Solutions to chapter 09's exercises (09a and 09b). Try them yourself first!

Each test takes the controller class to test (and the cluster, if it needs
it), passes on chapter 05's FooController and fails on the planted bug.
09a's are tests 1 to 4; 09b's are answer 5 (a prediction) and test 6 (a fault
drill).
"""

from __future__ import annotations

import copy

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.controller import FooController, KubeClients
from helpers.faults.tcp_proxy import proxied_client
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
    """A Deployment the cache does not show yet, though it exists: the create meets 409
    AlreadyExists. The sync must fail (the next one reads the cache again and checks whose it
    is), and write nothing more: above all, not replace somebody else's Deployment."""
    foo = cached_foo("test", 1)
    outcome = sync_once(
        controller_class,
        "default/test",
        foos=[foo],
        deployments=[],  # the cache is behind: no Deployment in it
        fail={"create_deployment": ApiException(status=409, reason="AlreadyExists")},
    )
    assert "update deployments" not in outcome.writes, "it replaced a Deployment it never read"
    assert outcome.error is not None, "the create failed, and the sync returned as if done"


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
    controller's own status write may happen to read them), and wait_idle first
    lets any retry still due come and go. And envtest could
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
        run.wait_idle()  # no retry left to come back and sync the Foo for another reason
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


answer_5 = "c"  # an update, whose new object names no Foo: nothing is synced


def test_6(
    controller_class: type[FooController], api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """A write that got no answer must be tried again once the API server answers.

    The controller's writes, and only those, go through a proxy. The proxy
    refuses new connections and cuts the open ones before the Foo exists, so
    the first sync's create gets no answer. Then the connections go through
    again: a controller that requeued the key converges at its next retry; one
    that forgot it never hears of the Foo again (nothing changed on the server,
    so no event comes).
    """
    with (
        proxied_client() as (proxy, proxied),
        ControllerUnderTest(
            api,
            namespace,
            controller_class=controller_class,
            run="ex6",
            clients=KubeClients(proxied),
        ) as run,
    ):
        proxy.block()  # new connections refused ...
        proxy.cut()  # ... and the open ones (the client keeps a pool) cut
        run.create_foo("unanswered")
        key = run.key("unanswered")
        run.wait_until(
            lambda: any(s.finished and s.wrote("create Deployment") for s in run.log.syncs(key)),
            "a sync that tried to create the Deployment",
        )
        proxy.unblock()
        run.wait_converged("unanswered", timeout=10)
