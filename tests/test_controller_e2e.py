"""FooController against the real cluster: what sample-controller does, seen from outside.

Each test runs the controller (two workers, informers on the test's
namespace) in a thread, acts on the cluster as a user would, and waits for the
result with :func:`helpers.waiting.wait_for`, which follows a watch instead of
sleeping. kube-controller-manager turns Deployments into Pods and garbage
collects what a deleted Foo owned; kwok plays kubelet and makes Pods Ready.
Leaving :func:`controller_running` stops the controller and checks that every
thread it started has ended.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers.clock import StopEvent
from helpers.controller import (
    FOO_GROUP,
    FOO_PLURAL,
    FOO_VERSION,
    FooController,
    KubeClients,
    foo_body,
    run_controller,
)
from helpers.faults.stale_cache import stale_cache
from helpers.held_watch import HeldListWatch
from helpers.informer import SharedInformer
from helpers.listwatch import ListWatch
from helpers.timeline import TimelineRecorder
from helpers.waiting import Objects, wait_for

pytestmark = pytest.mark.cluster

TIMEOUT = 30.0
"""Seconds any one change may take to show; each usually takes well under one."""

LABELS = {"app": "nginx", "controller": "example-foo"}
FOO_LIST = {"group": FOO_GROUP, "version": FOO_VERSION, "plural": FOO_PLURAL}
"""With ``namespace``, what ``wait_for`` passes to ``list_namespaced_custom_object`` for Foos."""


# --- running the controller ----------------------------------------------------------------------


@contextmanager
def controller_running(
    api: kubernetes.client.ApiClient, namespace: str, controller: FooController | None = None
) -> Iterator[FooController]:
    """sample-controller's main.go in a thread: two workers until the block ends, then joined.

    Resync is off: every reaction a test sees must come from an event handler,
    not from main.go's 30 s resync, which would eventually paper over a missing
    handler (and make the test take 30 s instead of failing). A test that needs
    other informers builds the ``controller`` itself.
    """
    if controller is None:
        controller = FooController.new(api, namespace=namespace, resync_period=0)
    stop = StopEvent()
    errors: list[BaseException] = []

    def main() -> None:
        try:
            run_controller(controller, 2, stop)
        except BaseException as err:
            errors.append(err)

    runner = threading.Thread(target=main, name="foo-controller-main")
    runner.start()
    try:
        yield controller
    finally:
        stop.set()
        runner.join(TIMEOUT)
    assert not runner.is_alive(), "run_controller did not return after stop"
    assert errors == []
    assert [t.name for t in controller.worker_threads] == ["foo-worker-1", "foo-worker-2"]
    assert not any(t.is_alive() for t in controller.worker_threads), "a worker outlived stop"
    assert all(informer.join(0) for informer in controller.informers), "an informer outlived stop"


class LogWatcher(logging.Handler):
    """Collects the controller's log messages, so a test can wait for one without sleeping."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []
        self._changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._changed:
            self.messages.append(record.getMessage())
            self._changed.notify_all()

    def wait_for(self, message: str, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: message in self.messages, timeout)


# --- Foos, as wait_for wants them ----------------------------------------------------------------


def available(name: str, replicas: int) -> Callable[[Objects], bool]:
    """Condition: the object ``name`` reports ``replicas`` available."""

    def check(objects: Objects) -> bool:
        status = (objects.get(name) or {}).get("status") or {}
        return status.get("availableReplicas") == replicas

    return check


def ready_pods(pods: Objects) -> int:
    def ready(pod: dict[str, Any]) -> bool:
        conditions = (pod.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    return sum(1 for p in pods.values() if ready(p) and not p["metadata"].get("deletionTimestamp"))


def wait_deployment_gone(apps: kubernetes.client.AppsV1Api, namespace: str, name: str) -> None:
    """Wait until the garbage collector has deleted Deployment ``name`` (its Foo is gone)."""
    wait_for(
        apps.list_namespaced_deployment,
        lambda deployments: name not in deployments,
        what=f"the garbage collector to delete Deployment {name}",
        timeout=TIMEOUT,
        namespace=namespace,
    )


# --- the tests -----------------------------------------------------------------------------------


def test_foo_owns_a_deployment_that_follows_it(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """Create, become Ready, scale, survive a deleted Deployment, and go with the Foo."""
    apps = kubernetes.client.AppsV1Api(api)
    core = kubernetes.client.CoreV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)

    with controller_running(api, namespace):
        foo = custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("example-foo", "example", 1)
        )

        # The controller creates the Deployment, owned by the Foo.
        deployment = wait_for(
            apps.list_namespaced_deployment,
            lambda d: "example" in d,
            what="the controller to create Deployment example",
            timeout=TIMEOUT,
            namespace=namespace,
        )["example"]
        assert deployment["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "samplecontroller.k8s.io/v1alpha1",
                "kind": "Foo",
                "name": "example-foo",
                "uid": foo["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert deployment["spec"]["selector"] == {"matchLabels": LABELS}
        assert deployment["spec"]["template"]["metadata"]["labels"] == LABELS
        assert [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]] == [
            "nginx:latest"
        ]
        managers = {entry["manager"] for entry in deployment["metadata"]["managedFields"]}
        assert "sample-controller" in managers

        # kwok makes the Pod Ready; the Deployment, then the Foo, report it.
        wait_for(
            core.list_namespaced_pod,
            lambda pods: ready_pods(pods) == 1,
            what="one Ready Pod",
            timeout=TIMEOUT,
            namespace=namespace,
            label_selector="app=nginx,controller=example-foo",
        )
        wait_for(
            custom.list_namespaced_custom_object,
            available("example-foo", 1),
            what="Foo status.availableReplicas == 1",
            timeout=TIMEOUT,
            namespace=namespace,
            **FOO_LIST,
        )

        # Scale the Foo: the Deployment follows, then the status.
        custom.patch_namespaced_custom_object(
            FOO_GROUP,
            FOO_VERSION,
            namespace,
            FOO_PLURAL,
            "example-foo",
            {"spec": {"replicas": 3}},
        )
        deployments = wait_for(
            apps.list_namespaced_deployment,
            available("example", 3),
            what="Deployment example to have 3 available replicas",
            timeout=TIMEOUT,
            namespace=namespace,
        )
        assert deployments["example"]["spec"]["replicas"] == 3
        wait_for(
            custom.list_namespaced_custom_object,
            available("example-foo", 3),
            what="Foo status.availableReplicas == 3",
            timeout=TIMEOUT,
            namespace=namespace,
            **FOO_LIST,
        )

        # Delete the Deployment by hand: the controller makes a new one.
        old_uid = deployments["example"]["metadata"]["uid"]
        apps.delete_namespaced_deployment("example", namespace)
        recreated = wait_for(
            apps.list_namespaced_deployment,
            lambda d: "example" in d and d["example"]["metadata"]["uid"] != old_uid,
            what="the controller to re-create Deployment example",
            timeout=TIMEOUT,
            namespace=namespace,
        )["example"]
        assert recreated["metadata"]["ownerReferences"][0]["uid"] == foo["metadata"]["uid"]
        assert recreated["spec"]["replicas"] == 3

        # Every sync said so with a Normal Event; repeats count up on one Event.
        events = wait_for(
            core.list_namespaced_event,
            lambda evs: any(e["reason"] == "Synced" for e in evs.values()),
            what="a Synced Event",
            timeout=TIMEOUT,
            namespace=namespace,
        )
        [synced] = [e for e in events.values() if e["reason"] == "Synced"]
        assert synced["type"] == "Normal"
        assert synced["message"] == "Foo synced successfully"
        assert synced["involvedObject"]["uid"] == foo["metadata"]["uid"]
        assert synced["count"] >= 2

        # Delete the Foo: kube-controller-manager's garbage collector removes the Deployment.
        custom.delete_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, "example-foo"
        )
        wait_deployment_gone(apps, namespace, "example")


def test_a_deployment_collected_before_its_foo_leaves_the_cache_is_made_again_and_collected(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """sample-controller's race, forced: the Foo informer hears nothing (its watch held) while
    the Foo is deleted. The garbage collector deletes the Deployment; ``handle_object`` still
    finds the Foo in the cache, so a sync creates the Deployment again, for a Foo that is
    gone, and the collector deletes that one too. Once the informer has caught up and
    ``TimelineRecorder.wait_dropped`` (what chapter 05 waits on) returns, nothing is created."""
    apps = kubernetes.client.AppsV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    foo_path = f"/apis/{FOO_GROUP}/{FOO_VERSION}/namespaces/{namespace}/{FOO_PLURAL}"
    foo_watch = HeldListWatch(api, foo_path)
    deployments_path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    controller = FooController(
        KubeClients(api),
        SharedInformer(foo_watch, name="foos", resync_period=0),
        SharedInformer(ListWatch(api, deployments_path), name="deployments", resync_period=0),
    )
    recorder = TimelineRecorder(controller)
    key = f"{namespace}/example-foo"

    def created_since(since: float) -> list[float]:
        return [
            write.at
            for write in recorder.writes(since)
            if write.verb == "create Deployment" and write.error is None
        ]

    with controller_running(api, namespace, controller):
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("example-foo", "example", 1)
        )
        wait_for(
            apps.list_namespaced_deployment,
            lambda d: "example" in d,
            what="the controller to create Deployment example",
            timeout=TIMEOUT,
            namespace=namespace,
        )
        with stale_cache(foo_watch):
            deleted_at = recorder.now()
            custom.delete_namespaced_custom_object(
                FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, "example-foo"
            )
            recorder.wait_for(
                lambda _: created_since(deleted_at) != [],
                "a Deployment created for the deleted Foo",
                TIMEOUT,
            )
            with pytest.raises(TimeoutError):  # the informer has not heard of the deletion
                recorder.wait_dropped(key, deleted_at, timeout=1.0)
        recorder.wait_dropped(key, deleted_at, TIMEOUT)
        dropped_at = recorder.now()
        wait_deployment_gone(apps, namespace, "example")
        assert created_since(deleted_at), "no Deployment was made after the Foo's deletion"
        assert created_since(dropped_at) == [], "a Deployment was made after wait_dropped"
    recorder.detach()


def test_deployment_that_is_not_ours_gets_a_warning_event(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """A Foo naming someone else's Deployment: a Warning Event; the Deployment is untouched."""
    apps = kubernetes.client.AppsV1Api(api)
    core = kubernetes.client.CoreV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    labels = {"app": "theirs"}
    apps.create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "taken"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "app", "image": "busybox"}]},
                },
            },
        },
    )

    with controller_running(api, namespace):
        foo = custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("greedy", "taken", 2)
        )
        events = wait_for(
            core.list_namespaced_event,
            lambda evs: any(e["reason"] == "ErrResourceExists" for e in evs.values()),
            what="a Warning Event ErrResourceExists",
            timeout=TIMEOUT,
            namespace=namespace,
        )

    [event] = [e for e in events.values() if e["reason"] == "ErrResourceExists"]
    assert event["type"] == "Warning"
    assert event["message"] == 'Resource "taken" already exists and is not managed by Foo'
    assert event["involvedObject"]["kind"] == "Foo"
    assert event["involvedObject"]["name"] == "greedy"
    assert event["involvedObject"]["uid"] == foo["metadata"]["uid"]
    assert event["source"]["component"] == "sample-controller"
    assert event["reportingComponent"] == "sample-controller"
    taken = apps.read_namespaced_deployment("taken", namespace)
    assert taken.metadata.owner_references is None
    assert taken.spec.replicas == 1


@pytest.mark.parametrize("replicas", [0, 11])
def test_foo_replicas_out_of_range_is_rejected(
    api: kubernetes.client.ApiClient, namespace: str, replicas: int
) -> None:
    """The CRD's schema allows 1..10 replicas; the API server refuses the rest with 422."""
    custom = kubernetes.client.CustomObjectsApi(api)

    with pytest.raises(ApiException) as raised:
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("bad", "bad", replicas)
        )

    assert raised.value.status == 422
    assert "spec.replicas" in raised.value.body


def test_foo_without_deployment_name_is_tolerated(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """No deploymentName: logged, not retried, no Deployment, and the workers carry on."""
    apps = kubernetes.client.AppsV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    watcher = LogWatcher()
    logging.getLogger("helpers.controller").addHandler(watcher)
    try:
        with controller_running(api, namespace) as controller:
            custom.create_namespaced_custom_object(
                FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("nameless", None, 1)
            )
            missing = f"Deployment name missing from object reference: {namespace}/nameless"
            assert watcher.wait_for(missing, TIMEOUT), watcher.messages

            custom.create_namespaced_custom_object(
                FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("named", "named", 1)
            )
            deployments = wait_for(
                apps.list_namespaced_deployment,
                lambda d: "named" in d,
                what="Deployment named, made after the nameless Foo",
                timeout=TIMEOUT,
                namespace=namespace,
            )
            assert set(deployments) == {"named"}
            assert all(t.is_alive() for t in controller.worker_threads)
            assert controller.workqueue.num_requeues(f"{namespace}/nameless") == 0
    finally:
        logging.getLogger("helpers.controller").removeHandler(watcher)
