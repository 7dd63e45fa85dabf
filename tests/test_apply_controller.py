"""ApplyFooController (chapter 10): its conditions, its sync's decisions, its map function, and on
the cluster a ConfigMap that comes after the Foo that names it.

The offline tests seed never-started informers, as tests/test_controller.py does, and give the
controller clients that record what it asked for.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers.apply_controller import (
    CONFIG_MAP_INDEX,
    FIELD_MANAGER,
    ApplyFooController,
    Problem,
    config_map_index,
    desired_deployment,
    field_owners,
    foo_conditions,
    foo_status,
)
from helpers.clock import StopEvent
from helpers.conditions import find_status_condition, wait_for_condition
from helpers.controller import foo_body, new_deployment, run_controller
from helpers.foo_crd import extend_foo_crd, foo_crd_additions, restore_foo_crd
from helpers.informer import SharedInformer
from helpers.store import DeletedFinalStateUnknown
from helpers.testing.recording import NotWatched
from helpers.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue

NS = "default"


def cached_foo(name: str = "web", replicas: int = 2, config_map: str | None = None,
               generation: int = 1) -> dict[str, Any]:  # fmt: skip
    foo = foo_body(name, name, replicas)
    foo["metadata"].update(namespace=NS, uid=f"uid-{name}", resourceVersion="1",
                           generation=generation)  # fmt: skip
    if config_map:
        foo["spec"]["configMapRef"] = {"name": config_map}
    return foo


def deployment_of(foo: dict[str, Any], **status: Any) -> dict[str, Any]:
    deployment = new_deployment(foo)
    deployment["metadata"].update(generation=1, resourceVersion="5")
    return deployment | {"status": {"observedGeneration": 1, **status}}


class Clients:
    """Records the writes; ``refuse`` is raised by the Deployment's apply."""

    def __init__(self, refuse: Exception | None = None) -> None:
        self.refuse = refuse
        self.applied: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self.events: list[str] = []

    def apply_deployment(self, namespace: str, deployment: dict, *, force: bool = True) -> dict:
        assert force
        if self.refuse is not None:
            raise self.refuse
        self.applied.append(deployment)
        return deployment | {"status": {"observedGeneration": 0}}

    def apply_foo_status(self, foo: dict, status: dict, *, force: bool = True) -> dict:
        self.statuses.append(status)
        return foo | {"status": status}

    def record_event(self, obj: dict, event_type: str, reason: str, message: str) -> None:
        self.events.append(reason)


def controller_with(
    clients: Clients, foos: Any = (), deployments: Any = (), config_maps: Any = ()
) -> ApplyFooController:
    informers = [SharedInformer(NotWatched(), name=n) for n in ("foos", "deployments", "cms")]
    queue: RateLimitingQueue[str] = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.005, 1))
    controller = ApplyFooController(clients, *informers, workqueue=queue)  # type: ignore[arg-type]
    for informer, objects in zip(informers, (foos, deployments, config_maps), strict=True):
        for obj in objects:
            informer.indexer.add(obj)
    return controller


def queued(controller: ApplyFooController) -> list[str]:
    keys = []
    while controller.workqueue.len():
        key, _ = controller.workqueue.get()
        controller.workqueue.done(key)
        keys.append(key)
    return keys


# --- conditions --------------------------------------------------------------------------------


def summary(conditions: list[dict]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions]


def test_a_deployment_just_applied_is_not_ready_and_rolling_out() -> None:
    foo = cached_foo()
    assert summary(foo_conditions(foo, deployment_of(foo))) == [
        ("Ready", "False", "ReplicasUnavailable", "0 of 2 replicas available"),
        ("Progressing", "True", "RollingOut", "0 of 2 replicas updated"),
    ]


def test_all_replicas_available_and_updated_is_ready_and_complete() -> None:
    foo = cached_foo()
    done = deployment_of(foo, replicas=2, updatedReplicas=2, availableReplicas=2)
    assert summary(foo_conditions(foo, done)) == [
        ("Ready", "True", "Available", "2 of 2 replicas available"),
        ("Progressing", "False", "RolloutComplete", "2 of 2 replicas updated"),
    ]


def test_a_status_the_deployment_controller_wrote_for_an_older_spec_is_not_ready() -> None:
    foo = cached_foo()
    stale = deployment_of(foo, replicas=2, updatedReplicas=2, availableReplicas=2)
    stale["metadata"]["generation"] = 2  # our apply changed it; its controller has not seen it
    assert [c["status"] for c in foo_conditions(foo, stale)] == ["False", "True"]


def test_old_pods_still_there_keep_it_progressing() -> None:
    foo = cached_foo()
    rolling = deployment_of(foo, replicas=3, updatedReplicas=2, availableReplicas=3)
    assert [c["status"] for c in foo_conditions(foo, rolling)] == ["True", "True"]


def test_a_problem_makes_both_false_with_its_reason_and_the_generation() -> None:
    foo = cached_foo(generation=7)
    conditions = foo_conditions(foo, None, Problem("ConfigMapNotFound", "gone"))
    assert summary(conditions) == [
        ("Ready", "False", "ConfigMapNotFound", "gone"),
        ("Progressing", "False", "ConfigMapNotFound", "gone"),
    ]
    assert {c["observedGeneration"] for c in conditions} == {7}


def test_foo_status_keeps_times_leaves_other_types_and_the_cache_alone() -> None:
    foo = cached_foo()
    first = foo_status(foo, deployment_of(foo), now=lambda: "t1")
    theirs = {"type": "Theirs", "status": "True", "reason": "X", "message": "",
              "lastTransitionTime": "t0"}  # fmt: skip
    foo["status"] = {"conditions": [*first["conditions"], theirs]}
    cached = copy.deepcopy(foo)
    later = deployment_of(foo, replicas=2, updatedReplicas=2, availableReplicas=1)
    second = foo_status(foo, later, now=lambda: "t2")
    assert foo == cached  # the cache's objects are everyone's
    assert [c["type"] for c in second["conditions"]] == ["Ready", "Progressing"]
    ready = find_status_condition(second["conditions"], "Ready")
    assert (ready["message"], ready["lastTransitionTime"]) == ("1 of 2 replicas available", "t1")
    assert second["observedGeneration"] == 1 and second["availableReplicas"] == 1


# --- what the sync applies, and its problems -----------------------------------------------------


def test_the_desired_deployment_takes_requests_and_limits_from_the_settings() -> None:
    """Limits equal to the requests: a workshop namespace's LimitRange would otherwise give the
    container its default limit (100m), below a larger request, and refuse the Pod."""
    foo = cached_foo()
    wanted = desired_deployment(foo, {"cpu": "100m", "memory": "64Mi", "other": "x"})
    container = wanted["spec"]["template"]["spec"]["containers"][0]
    sizes = {"cpu": "100m", "memory": "64Mi"}
    assert container["resources"] == {"requests": sizes, "limits": sizes}
    assert (
        "resources" not in desired_deployment(foo, {})["spec"]["template"]["spec"]["containers"][0]
    )
    del foo["spec"]["deploymentName"]
    with pytest.raises(Problem, match="deploymentName"):
        desired_deployment(foo, {})


def test_a_sync_applies_the_deployment_then_the_status() -> None:
    foo = cached_foo(config_map="sizes")
    sizes = {"metadata": {"name": "sizes", "namespace": NS, "resourceVersion": "3"},
             "data": {"cpu": "1"}}  # fmt: skip
    clients = Clients()
    controller_with(clients, [foo], config_maps=[sizes]).sync_handler(f"{NS}/web")
    assert clients.applied[0]["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1"}, "limits": {"cpu": "1"}}  # fmt: skip
    assert find_status_condition(clients.statuses[0]["conditions"], "Ready")["reason"] == (
        "ReplicasUnavailable")  # fmt: skip


def test_a_missing_config_map_is_reported_and_not_retried() -> None:
    clients = Clients()
    controller_with(clients, [cached_foo(config_map="later")]).sync_handler(f"{NS}/web")
    assert clients.applied == []
    ready = find_status_condition(clients.statuses[0]["conditions"], "Ready")
    assert (ready["reason"], ready["message"]) == (
        "ConfigMapNotFound",
        'ConfigMap "later" not found',
    )


def test_somebody_elses_deployment_is_not_applied_to_and_is_retried() -> None:
    foo = cached_foo()
    theirs = deployment_of(foo)
    theirs["metadata"]["ownerReferences"][0]["uid"] = "somebody-else"
    clients = Clients()
    with pytest.raises(Problem) as raised:
        controller_with(clients, [foo], [theirs]).sync_handler(f"{NS}/web")
    assert raised.value.retry and clients.applied == [] and clients.events == ["ErrResourceExists"]
    assert find_status_condition(clients.statuses[0]["conditions"], "Ready")["reason"] == (
        "ErrResourceExists")  # fmt: skip


def test_a_refusal_goes_into_the_conditions_and_other_errors_are_retried() -> None:
    refused = ApiException(status=422, reason="Unprocessable Entity")
    refused.body = '{"kind": "Status", "code": 422, "message": "too long"}'
    clients = Clients(refuse=refused)
    controller_with(clients, [cached_foo()]).sync_handler(f"{NS}/web")
    ready = find_status_condition(clients.statuses[0]["conditions"], "Ready")
    assert (ready["reason"], ready["message"]) == ("DeploymentInvalid", "too long")
    clients = Clients(refuse=ApiException(status=500, reason="Internal Server Error"))
    with pytest.raises(ApiException):
        controller_with(clients, [cached_foo()]).sync_handler(f"{NS}/web")
    assert clients.statuses == []


# --- the map function ----------------------------------------------------------------------------


def test_a_config_map_change_enqueues_the_foos_that_name_it() -> None:
    foos = [cached_foo("a", config_map="sizes"), cached_foo("b", config_map="sizes"),
            cached_foo("c", config_map="other"), cached_foo("d")]  # fmt: skip
    assert config_map_index(foos[0]) == [f"{NS}/sizes"] and config_map_index(foos[3]) == []
    controller = controller_with(Clients(), foos)
    sizes = {"metadata": {"name": "sizes", "namespace": NS, "resourceVersion": "3"}}
    controller.enqueue_foos_for(sizes)
    assert queued(controller) == [f"{NS}/a", f"{NS}/b"]
    controller.enqueue_foos_for(DeletedFinalStateUnknown(f"{NS}/other", sizes))
    assert queued(controller) == [f"{NS}/c"]
    controller.handle_config_map_update(sizes, sizes)  # a resync: nothing changed
    assert queued(controller) == []
    changed = {"metadata": {**sizes["metadata"], "resourceVersion": "4"}}
    controller.handle_config_map_update(sizes, changed)
    assert queued(controller) == [f"{NS}/a", f"{NS}/b"]
    assert controller.foo_informer.indexer.list_index_func_values(CONFIG_MAP_INDEX) == [
        f"{NS}/other", f"{NS}/sizes"]  # fmt: skip
    controller.workqueue.shut_down()


def test_field_owners_reads_managed_fields() -> None:
    obj = {"metadata": {"managedFields": [
        {"manager": "a", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:containers": {
            'k:{"name":"web"}': {".": {}, "f:image": {}}}}}},
        {"manager": "b", "fieldsV1": {"f:spec": {"f:replicas": {}},
                                      "f:metadata": {"f:finalizers": {'v:"x"': {}}}}},
    ]}}  # fmt: skip
    owners = field_owners(obj)
    assert owners["spec.replicas"] == ["a", "b"]
    assert owners["spec.containers[web].image"] == ["a"]
    assert owners["metadata.finalizers[x]"] == ["b"]


def test_chapter_05s_observer_is_refused_with_a_sentence() -> None:
    controller = controller_with(Clients())
    with pytest.raises(TypeError, match="apply_deployment"):
        controller.observe(object())
    controller.workqueue.shut_down()


# --- on the cluster ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chapter_10_crd(api: kubernetes.client.ApiClient) -> Iterator[None]:
    """The Foo CRD with chapter 10's fields while these tests run, as it was afterwards."""
    had = set(foo_crd_additions(api))
    extend_foo_crd(api)
    yield
    if not had >= {"spec.configMapRef", "status.conditions"}:
        restore_foo_crd(api)


@pytest.mark.cluster
def test_a_config_map_that_comes_later_brings_its_foo_to_ready(
    api: kubernetes.client.ApiClient, namespace: str, chapter_10_crd: None
) -> None:
    custom = kubernetes.client.CustomObjectsApi(api)
    foos = {"group": "samplecontroller.k8s.io", "version": "v1alpha1", "namespace": namespace,
            "plural": "foos"}  # fmt: skip
    controller = ApplyFooController.new(api, namespace=namespace)
    stop = StopEvent()
    runner = threading.Thread(target=run_controller, args=(controller, 2, stop), name="foo-test")
    runner.start()
    try:
        foo = foo_body("late", "late", 1)
        foo["spec"]["configMapRef"] = {"name": "sizes"}
        custom.create_namespaced_custom_object(body=foo, **foos)
        waiting = wait_for_condition(custom.list_namespaced_custom_object, "late", "Ready", "False",
                                     **foos)  # fmt: skip
        assert find_status_condition(waiting["status"]["conditions"], "Ready")["reason"] == (
            "ConfigMapNotFound")  # fmt: skip
        body = {"metadata": {"name": "sizes"}, "data": {"cpu": "10m"}}
        kubernetes.client.CoreV1Api(api).create_namespaced_config_map(namespace, body)
        ready = wait_for_condition(custom.list_namespaced_custom_object, "late", "Ready", **foos)
        assert field_owners(ready)["status.conditions[Ready]"] == [FIELD_MANAGER]
        deployment = api.sanitize_for_serialization(
            kubernetes.client.AppsV1Api(api).read_namespaced_deployment("late", namespace)
        )
        assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"] == {
            "requests": {"cpu": "10m"}, "limits": {"cpu": "10m"}}  # fmt: skip
        # With the controller stopped, a new spec: the Ready that answered generation 1 is no
        # answer to generation 2, and the wait says so.
        stop.set()
        runner.join(30)
        custom.patch_namespaced_custom_object(name="late", body={"spec": {"replicas": 2}}, **foos)
        with pytest.raises(Exception, match="late to be Ready=True"):
            wait_for_condition(custom.list_namespaced_custom_object, "late", "Ready", timeout=2,
                               **foos)  # fmt: skip
    finally:
        stop.set()
        runner.join(30)
