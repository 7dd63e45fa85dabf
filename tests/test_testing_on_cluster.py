"""helpers.testing.on_cluster: the whole controller in a test, against the real API server.

ControllerUnderTest must converge a good controller, fail at once (not at its
timeout) when the API server refuses a write for good, keep two controllers in
one namespace apart, and leave nothing behind: no thread, no Foo.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import kubernetes
import pytest

from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, FooController
from helpers.testing.on_cluster import RUN_LABEL, ControllerUnderTest, refused

pytestmark = pytest.mark.cluster


class NoResourceVersion(FooController):
    """Writes the status without a resourceVersion: the API server refuses it (422), always."""

    def update_foo_status(self, foo: Any, deployment: Any) -> None:
        bare = copy.deepcopy(dict(foo))
        del bare["metadata"]["resourceVersion"]
        bare["status"] = {"availableReplicas": 0}
        self.clients.update_foo_status(bare["metadata"]["namespace"], bare)


def foos_labelled(api: kubernetes.client.ApiClient, namespace: str, run: str) -> list[str]:
    listed = kubernetes.client.CustomObjectsApi(api).list_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, label_selector=f"{RUN_LABEL}={run}"
    )
    return [foo["metadata"]["name"] for foo in listed["items"]]


def test_converges_and_leaves_nothing_behind(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    with ControllerUnderTest(api, namespace, run="tidy") as run:
        run.create_foo("web", 2)
        run.wait_converged("web")
        deployment = run.deployment("web-deployment")
        assert deployment is not None and deployment["spec"]["replicas"] == 2
        assert "availableReplicas" in run.foo("web")["status"]
    assert foos_labelled(api, namespace, "tidy") == []
    ours = ("controller-under-test-tidy", "informer-tidy", "reflector-tidy")
    assert [t.name for t in threading.enumerate() if t.name.startswith(ours)] == []


def test_a_refused_write_ends_the_wait_at_once_with_the_api_servers_reason(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    with ControllerUnderTest(
        api, namespace, controller_class=NoResourceVersion, run="no-rv"
    ) as run:
        run.create_foo("web")
        with pytest.raises(AssertionError) as failed:
            run.wait_converged("web", timeout=120)
    message = str(failed.value)
    assert "will repeat" in message and "resourceVersion" in message, message
    assert "not within" not in message, "it waited for the timeout instead"


def test_a_wait_that_times_out_says_what_it_waited_for(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    never = r"not within 0.5 s: something that never holds"
    with (
        ControllerUnderTest(api, namespace, run="timeout") as run,
        pytest.raises(AssertionError, match=never),
    ):
        run.wait_until(lambda: False, "something that never holds", timeout=0.5)


def test_scale_is_seen_before_it_returns_and_resync_returns_the_next_sync(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    with ControllerUnderTest(api, namespace, run="scale") as run:
        run.create_foo("web", 1)
        run.wait_converged("web")
        run.scale_foo("web", 3)
        assert run.foo("web")["spec"]["replicas"] == 3, "the view was behind the write"
        run.wait_converged("web")
        # Converged means a status, not the last one: the Deployment's Pods become available
        # one by one, and each step is an event that queues the Foo again. Wait until the
        # Deployment has settled and the controller's caches hold what the test sees.
        run.wait_until(lambda: settled(run, "web", 3), "Foo web and its Deployment to settle")
        run.wait_handled()
        again = run.resync("web")
        assert again.finished and again.error is None
        assert [verb for verb, _, _ in again.writes] == ["update Foo status", "Event Synced"]
        assert run.wait_handled() == 0  # its status write changed nothing: no event, no sync


def settled(run: ControllerUnderTest, name: str, replicas: int) -> bool:
    """Foo ``name``'s Deployment has all ``replicas`` available, the Foo says so, and the
    controller's caches are at the same resourceVersions as the test's view."""
    foo, deployment = run.foo(name), run.deployment(f"{name}-deployment")
    if foo is None or deployment is None:
        return False
    status = deployment.get("status") or {}
    done = status.get("observedGeneration") == deployment["metadata"]["generation"] and all(
        status.get(field) == replicas
        for field in ("replicas", "updatedReplicas", "availableReplicas")
    )
    reported = (foo.get("status") or {}).get("availableReplicas") == replicas
    caches = run.controller.foo_informer.indexer, run.controller.deployment_informer.indexer
    seen = [cache.get_by_key(run.key(obj["metadata"]["name"])) for cache, obj in
            zip(caches, (foo, deployment), strict=True)]  # fmt: skip
    current = all(
        cached is not None
        and cached["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
        for cached, obj in zip(seen, (foo, deployment), strict=True)
    )
    return done and reported and current


def test_two_controllers_in_one_namespace_each_sync_only_their_own_foos(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    with (
        ControllerUnderTest(api, namespace, run="left") as left,
        ControllerUnderTest(api, namespace, run="right") as right,
    ):
        left.create_foo("l")
        right.create_foo("r")
        left.wait_converged("l")
        right.wait_converged("r")
        assert {sync.key for sync in left.log.syncs()} == {left.key("l")}
        assert {sync.key for sync in right.log.syncs()} == {right.key("r")}


def test_refused_is_a_4xx_other_than_404_409_429() -> None:
    def error(status: int) -> kubernetes.client.ApiException:
        return kubernetes.client.ApiException(status=status)

    assert [status for status in (400, 403, 404, 409, 422, 429, 500, 503)
            if refused(error(status))] == [400, 403, 422]  # fmt: skip
    assert not refused(None) and not refused(RuntimeError("boom"))


def test_a_timeline_records_beside_the_sync_log_and_both_hear_every_sync(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """``timeline()`` adds chapter 06's recorder; the test's own log, which the waits need, still
    hears every sync and write."""
    with ControllerUnderTest(api, namespace, run="drawn") as run:
        recorder = run.timeline()
        run.create_foo("web")
        run.wait_converged("web")
        again = run.resync("web")  # a wait that needs the log
        logged = [sync for sync in run.log.syncs(run.key("web")) if sync.finished]
        recorded = [sync for sync in recorder.syncs(run.key("web")) if sync.ended is not None]
        assert again.finished and again.error is None
        assert len(recorded) == len(logged) >= 2
        assert {write.verb for write in recorder.writes()} >= {"create Deployment"}


def test_held_watches_that_come_back_expired_deliver_a_tombstone(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """The drill of chapter 09b, on any cluster: hold both watches once the controller is quiet,
    delete, come back from an expired version; the reflector meets the API server's 410, lists
    again, and hands a tombstone, which alone wakes the controller."""
    apps = kubernetes.client.AppsV1Api(api)
    with ControllerUnderTest(api, namespace, run="gap") as run:
        run.create_foo("gap")
        run.wait_converged("gap")
        run.hold_watches("gap")
        syncs = len(run.log.syncs(run.key("gap")))
        apps.delete_namespaced_deployment("gap-deployment", namespace)
        run.wait_until(lambda: run.deployment("gap-deployment") is None, "the delete")
        run.deployment_watch.release(expired=True)
        run.wait_until(lambda: ("Deployment", "tombstone", "gap-deployment") in run.delivered, "it")
        error = run.controller.deployment_informer.reflector.last_error
        assert getattr(error, "status", None) == 410
        assert run.wait_handled() + len(run.log.syncs(run.key("gap"))) > syncs  # the tombstone
        run.foo_watch.release()
        run.wait_converged("gap")  # FooController makes the Deployment again
        assert run.deployment("gap-deployment") is not None
