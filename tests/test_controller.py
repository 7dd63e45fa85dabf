"""FooController's logic, as sample-controller's controller_test.go specifies it.

Like upstream's fixture, each test seeds the informers' caches directly (the
informers never start) and runs one ``sync_handler``; instead of fake
clientsets, a :class:`~helpers.testing.fakes.RecordingClients` records the writes the
controller asks for. Tests are named ``test_<what>__<UpstreamTest>`` where upstream has one.
Nothing talks to an API server and nothing sleeps; the few tests with threads
wait on conditions with a real-time guard. The same controller against the
real cluster: ``test_controller_e2e.py``.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from helpers.clock import FakeClock, StopEvent
from helpers.controller import (
    ERR_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_SYNCED,
    SUCCESS_SYNCED,
    CacheSyncError,
    FooController,
    ResourceExistsError,
    foo_rate_limiter,
    new_deployment,
)
from helpers.events import EventRecorder
from helpers.informer import SharedInformer
from helpers.store import DeletedFinalStateUnknown
from helpers.testing.fakes import (
    GUARD,
    Action,
    CapturingInformer,
    RecordingClients,
    RecordingQueue,
    StaticSource,
    new_foo,
)
from helpers.workqueue import RateLimitingQueue

# --- objects -------------------------------------------------------------------------------------


def with_status(foo: dict[str, Any], available: int) -> dict[str, Any]:
    expected = copy.deepcopy(foo)
    expected["status"] = {"availableReplicas": available}
    return expected


def key_of(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def owned_deployment(
    owner_kind: str = "Foo", owner_name: str = "test", rv: str = "5"
) -> dict[str, Any]:
    deployment = new_deployment(new_foo(owner_name, 1))
    deployment["metadata"]["ownerReferences"][0]["kind"] = owner_kind
    deployment["metadata"]["resourceVersion"] = rv
    return deployment


def queued(controller: FooController) -> list[str]:
    """Every key waiting in the queue, taken out in order."""
    keys = []
    while controller.workqueue.len():
        key, _ = controller.workqueue.get()
        assert key is not None
        keys.append(key)
        controller.workqueue.done(key)
    return keys


# --- the fixture (upstream: newFixture / newController / run / runExpectError) -------------------


class Fixture:
    """Objects to put in the caches, then one sync, then the writes to compare."""

    def __init__(self) -> None:
        self.foos: list[dict[str, Any]] = []
        self.deployments: list[dict[str, Any]] = []
        self.clients = RecordingClients()
        self.controllers: list[FooController] = []

    def new_controller(self, queue: RateLimitingQueue[str] | None = None) -> FooController:
        foo_informer = CapturingInformer(name="foos")
        deployment_informer = CapturingInformer(name="deployments")
        controller = FooController(
            self.clients, foo_informer, deployment_informer, workqueue=queue or RecordingQueue()
        )
        self.controllers.append(controller)
        for foo in self.foos:
            foo_informer.indexer.add(foo)
        for deployment in self.deployments:
            deployment_informer.indexer.add(deployment)
        return controller

    def run(self, key: str) -> FooController:
        controller = self.new_controller()
        controller.sync_handler(key)
        return controller

    def run_expect_error(self, key: str) -> Exception:
        controller = self.new_controller()
        with pytest.raises(Exception) as raised:
            controller.sync_handler(key)
        return raised.value

    def close(self) -> None:
        for controller in self.controllers:
            controller.workqueue.shut_down()


@pytest.fixture
def f() -> Iterator[Fixture]:
    fixture = Fixture()
    yield fixture
    fixture.close()


# --- syncHandler: controller_test.go -------------------------------------------------------------


def test_creates_deployment__TestCreatesDeployment(f: Fixture) -> None:
    """No Deployment yet: create it from the Foo, then write the Foo's status."""
    foo = new_foo("test", 1)
    f.foos.append(foo)

    f.run(key_of(foo))

    assert f.clients.actions == [
        Action("create", "deployments", "default", new_deployment(foo)),
        Action("update", "foos/status", "default", with_status(foo, 0)),
    ]
    assert f.clients.events == [("test", "Normal", SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED)]


def test_do_nothing__TestDoNothing(f: Fixture) -> None:
    """The Deployment already matches: only the status is written."""
    foo = new_foo("test", 1)
    f.foos.append(foo)
    f.deployments.append(new_deployment(foo))

    f.run(key_of(foo))

    assert f.clients.actions == [Action("update", "foos/status", "default", with_status(foo, 0))]


def test_needs_update_is_the_one_step_a_variant_changes(f: Fixture) -> None:
    """A subclass that overrides needs_update (chapter 06a's exercise) keeps the rest of the
    sync: the same Foo and Deployment as TestDoNothing, now rewritten, then the status."""
    foo = new_foo("test", 1)
    deployment = new_deployment(foo)
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"  # drifted
    f.foos.append(foo)
    f.deployments.append(deployment)
    seen = []

    class Repairing(FooController):
        def needs_update(self, foo: Any, deployment: Any) -> bool:
            seen.append(deployment["spec"]["template"]["spec"]["containers"][0]["image"])
            return True

    controller = Repairing(f.clients, CapturingInformer(name="foos"), CapturingInformer(
        name="deployments"), workqueue=RecordingQueue())  # fmt: skip
    controller.foo_informer.indexer.add(foo)
    controller.deployment_informer.indexer.add(deployment)
    controller.sync_handler(key_of(foo))
    controller.workqueue.shut_down()

    assert seen == ["nginx:1.27"]
    assert f.clients.actions == [
        Action("update", "deployments", "default", new_deployment(foo)),
        Action("update", "foos/status", "default", with_status(foo, 0)),
    ]
    assert f.new_controller().needs_update(foo, deployment) is False  # replicas alone: equal


def test_update_deployment__TestUpdateDeployment(f: Fixture) -> None:
    """The Foo asks for 2 replicas, the Deployment has 1: replace it, then write the status."""
    foo = new_foo("test", 1)
    deployment = new_deployment(foo)
    foo["spec"]["replicas"] = 2
    f.foos.append(foo)
    f.deployments.append(deployment)

    f.run(key_of(foo))

    expected = new_deployment(foo)
    assert expected["spec"]["replicas"] == 2
    assert f.clients.actions == [
        Action("update", "deployments", "default", expected),
        Action("update", "foos/status", "default", with_status(foo, 0)),
    ]


def test_not_controlled_by_us__TestNotControlledByUs(f: Fixture) -> None:
    """A Deployment of that name without our owner reference: error, Warning Event, no writes."""
    foo = new_foo("test", 1)
    deployment = new_deployment(foo)
    deployment["metadata"]["ownerReferences"] = []
    f.foos.append(foo)
    f.deployments.append(deployment)

    err = f.run_expect_error(key_of(foo))

    message = 'Resource "test-deployment" already exists and is not managed by Foo'
    assert isinstance(err, ResourceExistsError)
    assert str(err) == message
    assert f.clients.actions == []
    assert f.clients.events == [("test", "Warning", ERR_RESOURCE_EXISTS, message)]


def test_controlled_by_another_foo_of_the_same_name_is_not_ours(f: Fixture) -> None:
    """Ownership is by UID: a Deployment left by an earlier Foo called "test" is not ours."""
    foo = new_foo("test", 1)
    earlier = copy.deepcopy(foo)
    earlier["metadata"]["uid"] = "uid-of-an-earlier-test"
    f.foos.append(foo)
    f.deployments.append(new_deployment(earlier))

    assert isinstance(f.run_expect_error(key_of(foo)), ResourceExistsError)


# --- syncHandler: the other branches -------------------------------------------------------------


def test_status_copies_available_replicas_and_leaves_the_cache_alone(f: Fixture) -> None:
    foo = new_foo("test", 3)
    deployment = new_deployment(foo)
    deployment["status"] = {"availableReplicas": 2}
    f.foos.append(foo)
    f.deployments.append(deployment)

    controller = f.run(key_of(foo))

    assert f.clients.actions == [Action("update", "foos/status", "default", with_status(foo, 2))]
    cached = controller.foos_lister.namespace("default").get("test")
    assert "status" not in cached, "the controller changed the informer's cache"


def test_foo_without_replicas_leaves_the_deployment_replicas_alone(f: Fixture) -> None:
    foo = new_foo("test", None)
    deployment = new_deployment(new_foo("test", 4))
    f.foos.append(foo)
    f.deployments.append(deployment)

    f.run(key_of(foo))

    assert "replicas" not in new_deployment(foo)["spec"]
    assert [a.resource for a in f.clients.actions] == ["foos/status"]


def test_foo_gone_is_not_an_error(f: Fixture, caplog: pytest.LogCaptureFixture) -> None:
    """The key outlived its Foo: nothing to do, and a retry could not help."""
    f.run("default/vanished")

    assert f.clients.actions == []
    assert "Foo referenced by item in work queue no longer exists: default/vanished" in (
        caplog.messages
    )


def test_missing_deployment_name_is_not_an_error(
    f: Fixture, caplog: pytest.LogCaptureFixture
) -> None:
    """The Foo's next update will enqueue it again; retrying now could not help."""
    foo = new_foo("test", 1)
    del foo["spec"]["deploymentName"]
    f.foos.append(foo)

    f.run(key_of(foo))

    assert f.clients.actions == []
    assert f.clients.events == []
    assert "Deployment name missing from object reference: default/test" in caplog.messages


def test_api_error_is_raised_for_a_retry_and_nothing_else_is_written(f: Fixture) -> None:
    foo = new_foo("test", 1)
    f.foos.append(foo)
    f.clients.fail["create_deployment"] = ApiException(status=500, reason="Internal Server Error")

    err = f.run_expect_error(key_of(foo))

    assert isinstance(err, ApiException)
    assert f.clients.actions == []
    assert f.clients.events == []


def test_new_deployment_is_controlled_by_its_foo() -> None:
    foo = new_foo("example", 2)

    deployment = new_deployment(foo)

    labels = {"app": "nginx", "controller": "example"}
    assert deployment["metadata"]["name"] == "example-deployment"
    assert deployment["metadata"]["namespace"] == "default"
    assert deployment["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "name": "example",
            "uid": "uid-example",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["selector"] == {"matchLabels": labels}
    assert deployment["spec"]["template"]["metadata"]["labels"] == labels
    assert deployment["spec"]["template"]["spec"]["containers"] == [
        {"name": "nginx", "image": "nginx:latest", "imagePullPolicy": "IfNotPresent"}
    ]


# --- NewController: which informer event leads where ----------------------------------------------


def test_foo_add_and_update_enqueue_the_foo_and_delete_is_left_to_the_gc(f: Fixture) -> None:
    controller = f.new_controller()
    callbacks = controller.foo_informer.callbacks  # type: ignore[attr-defined]

    assert set(callbacks) == {"on_add", "on_update"}
    callbacks["on_add"](new_foo("a", 1), True)
    callbacks["on_update"](new_foo("b", 1), new_foo("b", 1))  # a resync too: Foos re-sync
    assert queued(controller) == ["default/a", "default/b"]


def test_deployment_add_update_delete_go_to_handle_object(f: Fixture) -> None:
    f.foos.append(new_foo("test", 1))
    controller = f.new_controller()
    callbacks = controller.deployment_informer.callbacks  # type: ignore[attr-defined]

    assert set(callbacks) == {"on_add", "on_update", "on_delete"}
    callbacks["on_add"](owned_deployment(), False)
    assert queued(controller) == ["default/test"]
    callbacks["on_update"](owned_deployment(rv="5"), owned_deployment(rv="6"))
    assert queued(controller) == ["default/test"]
    callbacks["on_delete"](owned_deployment())
    assert queued(controller) == ["default/test"]


# --- handleObject and the Deployment update filter -----------------------------------------------


def test_handle_object_enqueues_the_controlling_foo(f: Fixture) -> None:
    f.foos.append(new_foo("test", 1))
    controller = f.new_controller()

    controller.handle_object(owned_deployment())

    assert queued(controller) == ["default/test"]


def test_handle_object_unwraps_a_tombstone(f: Fixture) -> None:
    """A delete seen only through a re-list: the last known Deployment still names its owner."""
    f.foos.append(new_foo("test", 1))
    controller = f.new_controller()

    controller.handle_object(
        DeletedFinalStateUnknown("default/test-deployment", owned_deployment())
    )

    assert queued(controller) == ["default/test"]


@pytest.mark.parametrize(
    "deployment",
    [
        pytest.param(owned_deployment(owner_kind="ReplicaSet"), id="owner-not-a-Foo"),
        pytest.param(owned_deployment(owner_name="someone-else"), id="orphan-Foo-not-in-cache"),
        pytest.param(
            {"metadata": {"name": "plain", "namespace": "default", "resourceVersion": "5"}},
            id="no-owner",
        ),
        pytest.param(
            {
                "metadata": {
                    "name": "shared",
                    "namespace": "default",
                    "ownerReferences": [{"kind": "Foo", "name": "test", "uid": "uid-test"}],
                }
            },
            id="owner-but-not-controller",
        ),
    ],
)
def test_handle_object_ignores(f: Fixture, deployment: dict[str, Any]) -> None:
    f.foos.append(new_foo("test", 1))
    controller = f.new_controller()

    controller.handle_object(deployment)

    assert queued(controller) == []


def test_deployment_resync_with_equal_resource_version_is_ignored(f: Fixture) -> None:
    f.foos.append(new_foo("test", 1))
    controller = f.new_controller()

    controller.handle_deployment_update(owned_deployment(rv="5"), owned_deployment(rv="5"))
    assert queued(controller) == []

    controller.handle_deployment_update(owned_deployment(rv="5"), owned_deployment(rv="6"))
    assert queued(controller) == ["default/test"]


# --- processNextWorkItem -------------------------------------------------------------------------


def test_success_forgets_the_key_and_marks_it_done(f: Fixture) -> None:
    foo = new_foo("test", 1)
    f.foos.append(foo)
    queue = RecordingQueue()
    controller = f.new_controller(queue)
    queue.rate_limiter.when("default/test")  # an earlier failure, to be forgotten

    controller.workqueue.add("default/test")
    assert controller.process_next_work_item() is True

    assert queue.calls == [("forget", "default/test"), ("done", "default/test")]
    assert queue.num_requeues("default/test") == 0
    assert [a.verb for a in f.clients.actions] == ["create", "update"]


def test_error_requeues_rate_limited_and_marks_done(
    f: Fixture, caplog: pytest.LogCaptureFixture
) -> None:
    foo = new_foo("test", 1)
    deployment = new_deployment(foo)
    deployment["metadata"]["ownerReferences"] = []
    f.foos.append(foo)
    f.deployments.append(deployment)
    queue = RecordingQueue()
    controller = f.new_controller(queue)

    controller.workqueue.add("default/test")
    assert controller.process_next_work_item() is True

    assert queue.calls == [("add_rate_limited", "default/test"), ("done", "default/test")]
    assert queue.num_requeues("default/test") == 1
    assert any(m.startswith("Error syncing; requeuing for later retry") for m in caplog.messages)


def test_unexpected_exception_is_retried_too(f: Fixture) -> None:
    """Whatever a sync raises, the worker survives and the key comes back later."""
    queue = RecordingQueue()
    controller = f.new_controller(queue)

    def broken(key: str) -> None:
        raise KeyError("spec")

    controller.sync_handler = broken  # type: ignore[method-assign]
    controller.workqueue.add("default/test")
    assert controller.process_next_work_item() is True
    assert queue.calls == [("add_rate_limited", "default/test"), ("done", "default/test")]


def test_process_next_work_item_returns_false_after_shutdown(f: Fixture) -> None:
    controller = f.new_controller()
    controller.workqueue.shut_down()

    assert controller.process_next_work_item() is False


# --- the queue and its rate limiter --------------------------------------------------------------


def test_rate_limiter_is_sample_controllers() -> None:
    """Per key 5 ms doubling; overall 50 qps, burst 300 (client-go's default: 10 qps, 100)."""
    clock = FakeClock()
    limiter = foo_rate_limiter(clock)

    assert [limiter.when("ns/a") for _ in range(3)] == [0.005, 0.01, 0.02]
    for n in range(297):  # the bucket held 300 tokens; "ns/a" took 3
        assert limiter.when(f"ns/{n}") == 0.005
    assert limiter.when("ns/one-too-many") == pytest.approx(1 / 50)
    assert limiter.num_requeues("ns/a") == 3
    limiter.forget("ns/a")
    assert limiter.when("ns/a") == pytest.approx(2 / 50)  # the bucket still owes: 50 qps

    clock.step(1000)
    assert limiter.when("ns/a") == 0.01


def test_queue_is_named_foos_and_has_metrics(f: Fixture) -> None:
    controller = f.new_controller(RateLimitingQueue(foo_rate_limiter(), "Foos"))

    controller.enqueue_foo(new_foo("test", 1))

    assert controller.workqueue.name == "Foos"
    assert 'workqueue_adds_total{name="Foos"} 1' in controller.workqueue.metrics.to_prometheus()


def test_default_queue_uses_sample_controllers_limiter(f: Fixture) -> None:
    foo_informer = SharedInformer(StaticSource(), name="foos")
    deployment_informer = SharedInformer(StaticSource(), name="deployments")
    controller = FooController(f.clients, foo_informer, deployment_informer)
    f.controllers.append(controller)

    assert controller.workqueue.name == "Foos"
    assert [controller.workqueue.rate_limiter.when("k") for _ in range(2)] == [0.005, 0.01]


# --- Run -----------------------------------------------------------------------------------------


def test_run_fails_when_caches_never_sync(f: Fixture) -> None:
    """Informers not started and stop already set: Run gives up at once, queue shut down."""
    controller = f.new_controller()
    stop = StopEvent()
    stop.set()

    with pytest.raises(CacheSyncError, match="failed to wait for caches to sync"):
        controller.run(2, stop)

    assert controller.workqueue.shutting_down()
    assert controller.worker_threads == []


def test_run_syncs_with_named_workers_and_joins_them(f: Fixture) -> None:
    """Informers on a static source: the initial list is synced by the workers; stop joins them."""
    foo = new_foo("test", 1)
    controller = FooController(
        f.clients,
        SharedInformer(StaticSource(foo), name="foos"),
        SharedInformer(StaticSource(), name="deployments"),
    )
    f.controllers.append(controller)
    stop = StopEvent()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            controller.run(2, stop)
        except BaseException as err:
            errors.append(err)

    for informer in controller.informers:
        informer.start()
    runner = threading.Thread(target=run, name="test-run")
    runner.start()
    try:
        assert f.clients.wait_for(lambda c: len(c.actions) == 2), f.clients.actions
        assert {t.name for t in controller.worker_threads} == {"foo-worker-1", "foo-worker-2"}
    finally:
        stop.set()
        runner.join(GUARD)
        for informer in controller.informers:
            informer.stop()
            assert informer.join(GUARD)

    assert not runner.is_alive()
    assert errors == []
    assert all(t.ident is not None for t in controller.worker_threads), "a worker never started"
    assert not any(t.is_alive() for t in controller.worker_threads)
    assert controller.workqueue.shutting_down()
    assert [a.resource for a in f.clients.actions] == ["deployments", "foos/status"]


# --- Events --------------------------------------------------------------------------------------


class FakeCoreV1:
    """The two CoreV1Api calls the EventRecorder makes, recorded."""

    class Response:
        def drain_conn(self) -> None: ...

        def release_conn(self) -> None: ...

    def __init__(self) -> None:
        self.created: list[tuple[str, dict[str, Any]]] = []
        self.patched: list[tuple[str, str, dict[str, Any], str]] = []
        self.fail_patch: ApiException | None = None
        self.fail_create: ApiException | None = None

    def create_namespaced_event(self, namespace: str, body: dict[str, Any], **kw: Any) -> Response:
        if self.fail_create is not None:
            raise self.fail_create
        self.created.append((namespace, copy.deepcopy(body)))
        return self.Response()

    def patch_namespaced_event(
        self, name: str, namespace: str, body: dict[str, Any], **kw: Any
    ) -> Response:
        if self.fail_patch is not None:
            raise self.fail_patch
        self.patched.append((namespace, name, body, kw["_content_type"]))
        return self.Response()


def recorder_on(core: FakeCoreV1) -> EventRecorder:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return EventRecorder(core, "sample-controller", now=lambda: when)  # type: ignore[arg-type]


def test_event_is_a_core_v1_event_about_the_foo() -> None:
    core = FakeCoreV1()
    foo = new_foo("test", 1)

    recorder_on(core).event(foo, "Warning", "ErrResourceExists", "taken")

    [(namespace, event)] = core.created
    assert namespace == "default"
    assert event["metadata"]["name"].startswith("test.")
    assert event["involvedObject"] == {
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "namespace": "default",
        "name": "test",
        "uid": "uid-test",
        "resourceVersion": "1",
    }
    assert (event["type"], event["reason"], event["message"]) == (
        "Warning",
        "ErrResourceExists",
        "taken",
    )
    assert event["source"] == {"component": "sample-controller"}
    assert event["reportingComponent"] == "sample-controller"
    assert (event["firstTimestamp"], event["lastTimestamp"], event["count"]) == (
        "2026-01-02T03:04:05Z",
        "2026-01-02T03:04:05Z",
        1,
    )


def test_repeated_event_counts_up_instead_of_multiplying() -> None:
    core = FakeCoreV1()
    recorder = recorder_on(core)
    foo = new_foo("test", 1)

    for _ in range(3):
        recorder.event(foo, "Normal", "Synced", "Foo synced successfully")
    recorder.event(foo, "Warning", "ErrResourceExists", "taken")

    name = core.created[0][1]["metadata"]["name"]
    assert len(core.created) == 2
    assert [(p[1], p[2]["count"], p[3]) for p in core.patched] == [
        (name, 2, "application/merge-patch+json"),
        (name, 3, "application/merge-patch+json"),
    ]


def test_event_that_expired_is_written_afresh_and_errors_are_swallowed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = FakeCoreV1()
    recorder = recorder_on(core)
    foo = new_foo("test", 1)
    recorder.event(foo, "Normal", "Synced", "ok")

    core.fail_patch = ApiException(status=404, reason="Not Found")
    recorder.event(foo, "Normal", "Synced", "ok")
    assert len(core.created) == 2

    core.fail_patch = ApiException(status=500, reason="Internal Server Error")
    with caplog.at_level(logging.WARNING, logger="helpers.events"):
        recorder.event(foo, "Normal", "Synced", "ok")  # must not raise
    assert any("could not write Event Synced" in m for m in caplog.messages)
