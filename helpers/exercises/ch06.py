"""Checks for chapter 06's exercises (the reconcile loop, live).

Exercises 1 and 2 change part of the sync, and their checks run a Foo controller with the
learner's function on the cluster, in the chapter's namespace, with a
:class:`helpers.timeline.TimelineRecorder` attached to see what each sync wrote; each check
deletes the Foo it made. Exercise 3's check asks sample-controller's real rate limiter.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from ..clock import FakeClock, StopEvent
from ..controller import (
    FOO_GROUP,
    FOO_PLURAL,
    FOO_VERSION,
    FooController,
    ResourceExistsError,
    foo_body,
    foo_rate_limiter,
    is_controlled_by,
    new_deployment,
    run_controller,
)
from ..lister import NotFoundError
from ..reconcile import extend_foo_status
from ..store import split_meta_namespace_key
from ..timeline import SYNCED, TimelineRecorder
from ..waiting import wait_for
from . import Verdict, correct, not_attempted, wrong

TIMEOUT = 60.0
"""Seconds a check waits for the cluster (kind may pull an image)."""

QUIET = 1.5
"""Seconds of quiet that show a controller has stopped writing."""

Deployment = dict[str, Any]
Foo = dict[str, Any]


def _foo(name: str, replicas: int, image: str = "nginx:latest") -> tuple[Foo, Deployment]:
    """A cached-looking Foo, and the Deployment it asks for, as an offline sanity test."""
    foo = foo_body(name, name, replicas)
    foo["metadata"].update(namespace="ns", uid=f"uid-{name}", generation=1, resourceVersion="1")
    deployment = new_deployment(foo)
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return foo, deployment


class _Run:
    """A controller of ``controller_class`` in the background, with a recorder; ``stop()``."""

    def __init__(self, controller: FooController) -> None:
        self.controller = controller
        self.recorder = TimelineRecorder(controller)
        self._stop = StopEvent()
        self._thread = threading.Thread(
            target=run_controller, args=(controller, 1, self._stop), name="foo-controller-check"
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT)
        self.recorder.detach()


def _delete_foo(api: kubernetes.client.ApiClient, namespace: str, name: str) -> None:
    try:
        kubernetes.client.CustomObjectsApi(api).delete_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, name
        )
    except ApiException as exc:
        if exc.status != 404:
            raise


def _foos(api: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    return {
        "group": FOO_GROUP,
        "version": FOO_VERSION,
        "namespace": namespace,
        "plural": FOO_PLURAL,
    }


# --- exercise 1: repair image drift --------------------------------------------------------------


def _repairing(needs_update: Callable[[Foo, Deployment], bool]) -> type[FooController]:
    class Repairing(FooController):
        """sample-controller's sync, deciding with the learner's ``needs_update``."""

        def sync_handler(self, key: str) -> None:
            namespace, name = split_meta_namespace_key(key)
            try:
                foo = self.foos_lister.namespace(namespace).get(name)
            except NotFoundError:
                return
            deployment_name = (foo.get("spec") or {}).get("deploymentName")
            if not deployment_name:
                return
            try:
                deployment = self.deployments_lister.namespace(namespace).get(deployment_name)
            except NotFoundError:
                deployment = self.clients.create_deployment(namespace, new_deployment(foo))
            if not is_controlled_by(deployment, foo):
                raise ResourceExistsError(f"Deployment {deployment_name} is not ours")
            if needs_update(foo, deployment):
                deployment = self.clients.update_deployment(namespace, new_deployment(foo))
            self.update_foo_status(foo, deployment)

    return Repairing


def _offline_1(needs_update: Callable[[Foo, Deployment], bool]) -> str | None:
    """Why ``needs_update`` is wrong on plain dicts, or None."""
    same_foo, same = _foo("same", 2)
    scaled_foo, scaled = _foo("scaled", 2)
    scaled["spec"]["replicas"] = 5
    drifted_foo, drifted = _foo("drifted", 2, image="nginx:1.27")
    cases = [
        (same_foo, same, False, "a Deployment exactly as the Foo asks"),
        (scaled_foo, scaled, True, "a Deployment scaled to 5 for a Foo of 2"),
        (drifted_foo, drifted, True, "a Deployment whose image is nginx:1.27"),
    ]
    for foo, deployment, expected, what in cases:
        before = copy.deepcopy((foo, deployment))
        answer = needs_update(foo, deployment)
        if (foo, deployment) != before:
            return "it changed the objects it was given: they are the cache's, read-only"
        if bool(answer) != expected:
            return f"it says {answer!r} for {what}; it should say {expected}"
    return None


def check_1(
    needs_update: Callable[[Foo, Deployment], bool] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """``needs_update(foo, deployment)`` repairs replicas and image drift, and nothing else."""
    if needs_update is None:
        return not_attempted("1", "set needs_update to your function")
    try:
        problem = _offline_1(needs_update)
    except Exception as exc:  # reported to the learner, not swallowed
        return wrong("1", f"it raised {type(exc).__name__}: {exc}")
    if problem:
        return wrong("1", problem)
    apps = kubernetes.client.AppsV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    name = "exercise-1-drift"
    _delete_foo(api, namespace, name)
    run = _Run(_repairing(needs_update).new(api, namespace=namespace))
    try:
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body(name, name, 1)
        )
        wait_for(
            apps.list_namespaced_deployment,
            lambda found: name in found,
            what=f"Deployment {name}",
            timeout=TIMEOUT,
            namespace=namespace,
        )
        container = {"name": "nginx", "image": "nginx:1.27"}
        image = {"spec": {"template": {"spec": {"containers": [container]}}}}
        apps.patch_namespaced_deployment(name, namespace, image)
        try:
            repaired = wait_for(
                apps.list_namespaced_deployment,
                lambda found: _image(found.get(name)) == "nginx:latest",
                what=f"the image of Deployment {name} to be nginx:latest again",
                timeout=30,
                namespace=namespace,
            )[name]
        except TimeoutError:
            return wrong("1", "the image stayed nginx:1.27: the sync never updated it")
        # A change that is not about the Deployment: its sync must not update the Deployment.
        touched = custom.patch_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, name,
            {"metadata": {"annotations": {"exercise": "touched"}}},
        )  # fmt: skip
        sync = run.recorder.wait_saw("Foo", name, touched["metadata"]["resourceVersion"])
        if any(w.verb == "update Deployment" for w in sync.writes):
            return wrong("1", "a sync updated a Deployment that had not drifted at all")
    finally:
        run.stop()
        _delete_foo(api, namespace, name)
    return correct("1", f"image back to {_image(repaired)}; no update when nothing drifted")


def _image(deployment: Mapping[str, Any] | None) -> str | None:
    try:
        return deployment["spec"]["template"]["spec"]["containers"][0]["image"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return None


# --- exercise 2: a careful status ----------------------------------------------------------------


def _careful(careful_status: Callable[[Foo, Deployment], dict | None]) -> type[FooController]:
    class Careful(FooController):
        """Writes whatever the learner's ``careful_status`` returns, unless it returns None."""

        def update_foo_status(self, foo: Mapping[str, Any], deployment: Mapping[str, Any]) -> None:
            status = careful_status(copy.deepcopy(dict(foo)), copy.deepcopy(dict(deployment)))
            if status is None:
                return
            foo_copy = copy.deepcopy(dict(foo))
            foo_copy["status"] = status
            self.clients.update_foo_status(foo_copy["metadata"]["namespace"], foo_copy)

    return Careful


def _offline_2(careful_status: Callable[[Foo, Deployment], dict | None]) -> str | None:
    foo, deployment = _foo("offline", 2)
    foo["metadata"]["generation"] = 3
    deployment["status"] = {"availableReplicas": 2}
    wanted = {"availableReplicas": 2, "observedGeneration": 3}
    got = careful_status(copy.deepcopy(foo), copy.deepcopy(deployment))
    if got is None:
        return "it returned None for a Foo with no status yet: that one needs a write"
    if not isinstance(got, Mapping) or {k: got.get(k) for k in wanted} != wanted:
        return f"for a Foo of generation 3 and 2 available replicas it returned {got!r}"
    foo["status"] = dict(got)
    if careful_status(copy.deepcopy(foo), copy.deepcopy(deployment)) is not None:
        return "it asks for a write when the Foo already has that status"
    return None


def check_2(
    careful_status: Callable[[Foo, Deployment], dict | None] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """A status with observedGeneration, written only when it changes: reconciled, then quiet."""
    if careful_status is None:
        return not_attempted("2", "set careful_status to your function")
    try:
        problem = _offline_2(careful_status)
    except Exception as exc:  # reported to the learner, not swallowed
        return wrong("2", f"it raised {type(exc).__name__}: {exc}")
    if problem:
        return wrong("2", problem)
    extend_foo_status(api, namespace)  # the chapter did it at its start; a no-op then
    custom = kubernetes.client.CustomObjectsApi(api)
    name = "exercise-2-careful"
    _delete_foo(api, namespace, name)
    run = _Run(_careful(careful_status).new(api, namespace=namespace))
    try:
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body(name, name, 1)
        )
        _wait_reconciled(custom, namespace, name, 1)
        custom.patch_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, name, {"spec": {"replicas": 2}}
        )
        foo = _wait_reconciled(custom, namespace, name, 2)
        settled = run.recorder.now()
        key = f"{namespace}/{name}"

        def wrote_again(recorder: TimelineRecorder) -> bool:
            return any(s.writes for s in recorder.syncs(key, settled + 0.3))

        try:  # waiting for what must not happen: the timeout is the good outcome
            run.recorder.wait_for(wrote_again, "another status write", QUIET)
            return wrong("2", "it kept writing the status after the Foo was reconciled")
        except TimeoutError:
            pass
        syncs = run.recorder.syncs(key)
    finally:
        run.stop()
        _delete_foo(api, namespace, name)
    status = foo["status"]
    return correct(
        "2",
        f"status {status} after {sum(s.outcome == SYNCED for s in syncs)} writing syncs, then "
        "quiet",
    )


def _wait_reconciled(
    custom: kubernetes.client.CustomObjectsApi, namespace: str, name: str, replicas: int
) -> dict[str, Any]:
    def done(foos: dict[str, Any]) -> bool:
        foo = foos.get(name) or {}
        status = foo.get("status") or {}
        return (
            status.get("observedGeneration") == foo["metadata"]["generation"]
            and status.get("availableReplicas") == replicas
        )

    try:
        return wait_for(
            custom.list_namespaced_custom_object,
            done,
            what=f"Foo {name} to be reconciled with {replicas} available",
            timeout=TIMEOUT,
            **_foos(custom.api_client, namespace),
        )[name]
    except TimeoutError as exc:
        raise AssertionError(
            f"Foo {name} never showed observedGeneration == generation and "
            f"{replicas} available replicas: {exc}"
        ) from exc


# --- exercise 3: the twelfth retry ---------------------------------------------------------------

ANSWER_3 = "b"


def check_3(answer: str | None) -> Verdict:
    """The delay of a Foo's 12th retry, asked of sample-controller's real limiter."""
    if answer is None:
        return not_attempted("3", 'set answer_3 to "a", "b", "c" or "d"')
    if answer not in ("a", "b", "c", "d"):
        return wrong("3", f'{answer!r} is not one of "a", "b", "c", "d"')
    limiter = foo_rate_limiter(FakeClock())
    delays = [limiter.when("ns/failing") for _ in range(12)]
    if answer != ANSWER_3:
        return wrong(
            "3",
            f"the limiter says {delays[-1]:g} s: 5 ms doubles 11 times (the bucket still has "
            "tokens to spare, so the per-item delay is the larger)",
        )
    return correct("3", f"the delays were {', '.join(f'{d:g}' for d in delays)} s")
