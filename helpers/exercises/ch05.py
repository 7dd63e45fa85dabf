"""Checks for chapter 05's exercises (the controller).

Exercise 1 asks for a prediction (the Deployment deleted while the controller is
down: what happens when it starts?) and runs the case on the cluster, with the
resync switched off. Exercise 2 is a pure function, checked on made-up
objects: a Deployment that carries its Foo's labels. Exercise 3 runs the
chapter's controller on the cluster, changes the Deployment a Foo names, then
scales the Foo. Exercise 4 takes the learner's ``reconcile(foo, deployment, clients)``, the
decision at the heart of ``sync_handler``: first on cached objects with clients
that only record, then in a running controller on real Foos. The checks that
use the cluster bring the chapter's namespace back first (after "Run All" its
last cell has deleted it).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import namespaces
from ..apierrors import explain
from ..clock import StopEvent
from ..controller import (
    ERR_RESOURCE_EXISTS,
    FOO_GROUP,
    FOO_KIND,
    FOO_PLURAL,
    FOO_VERSION,
    IF_NOT_PRESENT,
    WARNING,
    FooController,
    controller_of,
    foo_body,
    new_deployment,
    run_controller,
)
from ..errors import CourseError
from ..lister import NotFoundError
from ..store import split_meta_namespace_key
from ..waiting import wait_for
from . import Verdict, correct, not_attempted, wrong

TIMEOUT = 30.0
"""Seconds a change on the cluster may take before the check gives up."""


def _foo(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{FOO_GROUP}/{FOO_VERSION}",
        "kind": FOO_KIND,
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": spec,
    }


# --- exercise 1: the Deployment deleted while the controller is down ------------------------------

ANSWER_1 = "c"

HINTS_1 = {
    "a": "a controller does not need to have seen the delete: on start, its Foo informer lists "
    "every Foo and hands each to on_add, and the sync compares what is with what should be",
    "b": "the garbage collector only ever deletes; nothing but our controller makes a "
    "Deployment for a Foo",
    "d": "the check switched the resync off, and the Deployment came back anyway: look at "
    "what the informer's first list does",
}


def _controller_down_then_up(api: kubernetes.client.ApiClient, namespace: str) -> float:
    """Run the case of exercise 1 on the cluster; the seconds from the restart to the repair.

    Both controllers run with the resync switched off, so that only the first
    list can bring the Foo to a worker. Leaves the namespace as it found it.
    """
    custom = kubernetes.client.CustomObjectsApi(api)
    apps = kubernetes.client.AppsV1Api(api)
    name = "exercise-1-web"

    def run(until: Callable[[], Any]) -> Any:
        controller = FooController.new(api, namespace=namespace, resync_period=0)
        stop = StopEvent()
        runner = threading.Thread(
            target=run_controller, args=(controller, 2, stop), name="foo-controller-exercise-1"
        )
        runner.start()
        try:
            return until()
        finally:
            stop.set()
            runner.join(TIMEOUT)

    def deployment_of(uid: str | None) -> dict[str, Any]:
        return wait_for(
            apps.list_namespaced_deployment,
            lambda deployments: name in deployments and deployments[name]["metadata"]["uid"] != uid,
            what=f"the controller to create Deployment {name}",
            timeout=TIMEOUT,
            namespace=namespace,
        )[name]

    _delete_foos(custom, apps, namespace, [name], [name])
    custom.create_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body(name, name, 1)
    )
    try:
        first = run(lambda: deployment_of(None))
        # The controller is down now: nobody hears of this delete.
        apps.delete_namespaced_deployment(name, namespace)
        wait_for(
            apps.list_namespaced_deployment,
            lambda deployments: name not in deployments,
            what=f"Deployment {name} to be deleted",
            timeout=TIMEOUT,
            namespace=namespace,
        )
        started = time.monotonic()
        run(lambda: deployment_of(first["metadata"]["uid"]))
        return time.monotonic() - started
    finally:
        _delete_foos(custom, apps, namespace, [name], [name])


def _not_a_choice(number: str, answer: str | None) -> Verdict | None:
    """The verdict on a multiple-choice answer that is missing or not a-d; None for a choice."""
    if answer is None:
        return not_attempted(number, f'set answer_{number} to "a", "b", "c" or "d"')
    if answer not in ("a", "b", "c", "d"):
        return wrong(number, f'{answer!r} is not one of "a", "b", "c", "d"')
    return None


def check_1(answer: str | None, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """What a controller does on start about a delete it never saw: checked on the cluster."""
    if (unanswered := _not_a_choice("1", answer)) is not None:
        return unanswered
    assert answer is not None  # _not_a_choice answered a missing one
    namespaces.ensure_namespace(api, namespace)
    took = _controller_down_then_up(api, namespace)
    if answer != ANSWER_1:
        return wrong(
            "1", f"the Deployment was back {took:.1f} s after the restart; {HINTS_1[answer]}"
        )
    return correct(
        "1",
        f"back {took:.1f} s after the restart, with no resync: the first list is an add for "
        "every Foo, and the sync compares state (level-triggered)",
    )


def _delete_foos(
    custom: kubernetes.client.CustomObjectsApi,
    apps: kubernetes.client.AppsV1Api,
    namespace: str,
    foos: list[str],
    deployments: list[str],
) -> None:
    """Delete ``foos`` and ``deployments`` if they exist, and wait until the Deployments are gone
    (a check's earlier, interrupted run may have left them)."""
    for name in foos:
        try:
            custom.delete_namespaced_custom_object(
                FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, name
            )
        except kubernetes.client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
    for name in deployments:
        try:
            apps.delete_namespaced_deployment(name, namespace)
        except kubernetes.client.exceptions.ApiException as exc:
            if exc.status != 404:
                raise
    wait_for(
        apps.list_namespaced_deployment,
        lambda found: not set(deployments) & set(found),
        what=f"Deployments {', '.join(deployments)} to be gone",
        timeout=TIMEOUT,
        namespace=namespace,
    )


def check_2(labelled_deployment: Callable[[Mapping[str, Any]], dict[str, Any]] | None) -> Verdict:
    """``labelled_deployment(foo)``: new_deployment(foo) plus the Foo's labels on its metadata."""
    if labelled_deployment is None:
        return not_attempted("2", "set labelled_deployment to your function")
    foo = _foo("web", "shop", deploymentName="web", replicas=2)
    foo["metadata"]["labels"] = {"team": "payments", "tier": "front"}
    unlabelled = _foo("plain", "shop", deploymentName="plain", replicas=1)
    for given in (foo, unlabelled):
        before = copy.deepcopy(given)
        try:
            got = labelled_deployment(given)
        except Exception as exc:  # reported to the learner, not swallowed
            name = given["metadata"]["name"]
            return wrong("2", f"for Foo {name} it raised {type(exc).__name__}: {exc}")
        if given != before:
            return wrong("2", "it changed the Foo it was given (in a controller, the cache's copy)")
        plain = new_deployment(before)
        labels = before["metadata"].get("labels") or {}
        got_labels = (got.get("metadata") or {}).get("labels") or {}
        if got_labels != labels:
            return wrong(
                "2",
                f"the Deployment's metadata.labels are {got_labels}, not the Foo's {labels}",
            )
        if got["spec"]["selector"] != plain["spec"]["selector"]:
            return wrong("2", "it changed the selector, which cannot change after creation")
        if got["spec"]["template"] != plain["spec"]["template"]:
            return wrong("2", "it changed the Pod template: every label change would roll Pods")
        got_rest = {k: v for k, v in got["metadata"].items() if k != "labels"}
        if got_rest != plain["metadata"] or got["spec"] != plain["spec"]:
            return wrong("2", "the rest of the Deployment should be what new_deployment makes")
    return correct("2", "labels on the Deployment only; selector and Pod template untouched")


# --- exercise 3: a Foo that changes its deploymentName -------------------------------------

RENAMED, OLD_NAME, NEW_NAME = "renamed", "a", "b"
KEYS_3 = ("a", "b", "available")
WHAT_HAPPENED_3 = {"a": 2, "b": 3, "available": 3}
"""What sample-controller's logic does (syncHandler looks up, writes and reports only the
Deployment the Foo names now); the check also makes sure the cluster did just that."""

HINT_3 = (
    "that is not what the cluster showed. Follow one sync after each change: which Deployment "
    "does sync_handler look up, which one does it write, and from which one does "
    "update_foo_status copy? Then ask what happens to a Deployment that no sync looks up any more"
)


def _replicas(deployments: dict[str, Any], name: str) -> int | None:
    deployment = deployments.get(name)
    return None if deployment is None else (deployment.get("spec") or {}).get("replicas")


def _run_rename(api: kubernetes.client.ApiClient, namespace: str) -> dict[str, int | None]:
    """Run the controller: Foo renamed asks for Deployment a (2 replicas), then for b, then for
    3 replicas. What exists afterwards: {"a": replicas or None, "b": ..., "available": ...}.

    Leaves the namespace as it found it: the Foo deleted, and both Deployments garbage
    collected, so that the check can run again.
    """
    custom = kubernetes.client.CustomObjectsApi(api)
    apps = kubernetes.client.AppsV1Api(api)

    def patch(spec: dict[str, Any]) -> None:
        custom.patch_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, RENAMED, {"spec": spec}
        )

    def deployments_where(condition: Callable[[dict[str, Any]], bool], what: str) -> None:
        wait_for(
            apps.list_namespaced_deployment,
            condition,
            what=what,
            timeout=TIMEOUT,
            namespace=namespace,
        )

    def available(name: str, replicas: int) -> Callable[[dict[str, Any]], bool]:
        def condition(deployments: dict[str, Any]) -> bool:
            deployment = deployments.get(name) or {}
            spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
            return spec.get("replicas") == replicas == status.get("availableReplicas")

        return condition

    def foo_reports(replicas: int) -> Callable[[dict[str, Any]], bool]:
        def condition(foos: dict[str, Any]) -> bool:
            status = (foos.get(RENAMED) or {}).get("status") or {}
            return status.get("availableReplicas") == replicas

        return condition

    def foo_where(condition: Callable[[dict[str, Any]], bool], what: str) -> None:
        wait_for(
            custom.list_namespaced_custom_object,
            condition,
            what=what,
            timeout=TIMEOUT,
            group=FOO_GROUP,
            version=FOO_VERSION,
            namespace=namespace,
            plural=FOO_PLURAL,
        )

    _delete_foos(custom, apps, namespace, [RENAMED], [OLD_NAME, NEW_NAME])
    controller = FooController.new(api, namespace=namespace)
    stop = StopEvent()
    runner = threading.Thread(
        target=run_controller, args=(controller, 2, stop), name="foo-controller-exercise-3"
    )
    runner.start()
    try:
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body(RENAMED, OLD_NAME, 2)
        )
        deployments_where(available(OLD_NAME, 2), f"Deployment {OLD_NAME}: 2 replicas available")
        foo_where(foo_reports(2), f"Foo {RENAMED} to report 2 available replicas")
        patch({"deploymentName": NEW_NAME})
        deployments_where(available(NEW_NAME, 2), f"Deployment {NEW_NAME}: 2 replicas available")
        patch({"replicas": 3})
        deployments_where(available(NEW_NAME, 3), f"Deployment {NEW_NAME}: 3 replicas available")
        foo_where(foo_reports(3), f"Foo {RENAMED} to report 3 available replicas")
        deployments = wait_for(
            apps.list_namespaced_deployment,
            lambda found: True,
            what="the Deployments",
            timeout=TIMEOUT,
            namespace=namespace,
        )
        foo = custom.get_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, RENAMED
        )
    finally:
        stop.set()
        runner.join(TIMEOUT)
        _delete_foos(custom, apps, namespace, [RENAMED], [])
    wait_for(
        apps.list_namespaced_deployment,
        lambda found: not {OLD_NAME, NEW_NAME} & set(found),
        what=f"the garbage collector to delete Deployments {OLD_NAME} and {NEW_NAME}",
        timeout=TIMEOUT,
        namespace=namespace,
    )
    return {
        "a": _replicas(deployments, OLD_NAME),
        "b": _replicas(deployments, NEW_NAME),
        "available": (foo.get("status") or {}).get("availableReplicas"),
    }


def _shape_3(answer: Any) -> str | None:
    """Why ``answer`` is not a dict of the three counts, or None if it is one."""
    shape = 'a dict {"a": ..., "b": ..., "available": ...} of whole numbers (None for a gone one)'
    if type(answer) is not dict or set(answer) != set(KEYS_3):
        return f"answer with {shape}"
    for key in KEYS_3:
        value = answer[key]
        if value is not None and type(value) is not int:
            return f"{key!r} is {value!r}: answer with {shape}"
    return None


def check_3(answer: Any, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """A Foo whose deploymentName changes, then its replicas: checked on the cluster."""
    if answer is None:
        return not_attempted("3", 'set answer_3 to a dict {"a": ..., "b": ..., "available": ...}')
    if (problem := _shape_3(answer)) is not None:
        return wrong("3", problem)
    namespaces.ensure_namespace(api, namespace)
    seen = _run_rename(api, namespace)
    if seen != WHAT_HAPPENED_3:
        return wrong("3", f"the cluster did something unexpected (check the controller): {seen}")
    if any(answer[key] != seen[key] for key in KEYS_3):
        return wrong("3", HINT_3)
    return correct(
        "3",
        f"Deployment {OLD_NAME} keeps its {seen['a']} replicas: sync_handler only ever reads "
        f"and writes the Deployment the Foo names now, and {OLD_NAME} goes only when its owner "
        f"does. {NEW_NAME} follows the Foo, and the status reports {NEW_NAME} alone",
    )


# --- exercise 4: the heart of a sync, yours ------------------------------------------------------

Reconcile = Callable[[Mapping[str, Any], Mapping[str, Any] | None, Any], None]


class _Recorded:
    """Clients that record each write and answer like the API server would, without one."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, dict[str, Any]]] = []

    def create_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(("create Deployment", copy.deepcopy(deployment)))
        return copy.deepcopy(deployment)  # a new Deployment has no status yet

    def update_deployment(self, namespace: str, deployment: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(("update Deployment", copy.deepcopy(deployment)))
        return copy.deepcopy(deployment)

    def update_foo_status(self, namespace: str, foo: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(("update Foo status", copy.deepcopy(foo)))
        return copy.deepcopy(foo)

    def record_event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.writes.append(("Event", {"type": event_type, "reason": reason, "message": message}))

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.writes]

    def status_written(self) -> Any:
        bodies = [body for verb, body in self.writes if verb == "update Foo status"]
        return (bodies[-1].get("status") or {}).get("availableReplicas") if bodies else None


def _dry_cases() -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """(situation, cached Foo, cached Deployment or None) for the first half of check 4."""
    foo = _foo("web", "shop", deploymentName="web", replicas=2)
    ours = new_deployment(foo) | {"status": {"availableReplicas": 2}}
    scaled = _foo("web", "shop", deploymentName="web", replicas=3)
    theirs = {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 1}}
    return [
        ("no Deployment yet", foo, None),
        ("its Deployment as the Foo wants it", foo, ours),
        ("the Foo scaled from 2 to 3", scaled, ours),
        ("a Deployment of that name that is somebody else's", foo, theirs),
    ]


def _judge_dry(situation: str, foo: dict[str, Any], clients: _Recorded, raised: Any) -> str | None:
    """Why the writes for ``situation`` are wrong, or None if they are right."""
    verbs, wanted = clients.verbs(), foo["spec"]["replicas"]
    deployments = [body for verb, body in clients.writes if verb.endswith("Deployment")]
    if situation.startswith("a Deployment of that name"):
        if raised is None:
            return "it returned normally: raise, so that the key is retried with backoff"
        if deployments:
            return f"it wrote the Deployment ({verbs}): it is not ours, leave it alone"
        events = [body for verb, body in clients.writes if verb == "Event"]
        if not any(e["type"] == WARNING and e["reason"] == ERR_RESOURCE_EXISTS for e in events):
            return f"the Foo's owner is not told: record a Warning Event {ERR_RESOURCE_EXISTS}"
        return None
    if raised is not None:
        return f"it raised {type(raised).__name__}: {raised}"
    expected = {
        "no Deployment yet": ["create Deployment"],
        "its Deployment as the Foo wants it": [],
        "the Foo scaled from 2 to 3": ["update Deployment"],
    }[situation]
    made = [verb for verb in verbs if verb.endswith("Deployment")]
    if made != expected:
        return f"its Deployment writes were {made}, not {expected}"
    for body in deployments:
        owner = controller_of(body) or {}
        if body["spec"].get("replicas") != wanted or owner.get("uid") != foo["metadata"]["uid"]:
            return "the Deployment it wrote is not new_deployment(foo): replicas or owner differ"
    available: int | None = 2 if situation.startswith("its Deployment") else 0
    if situation.startswith("the Foo scaled"):
        available = None  # what the update answered: our recording clients keep the old status
    got = clients.status_written()
    if got is None and "update Foo status" not in verbs:
        return "it wrote no status: update_foo_status with the Deployment's availableReplicas"
    if available is not None and got != available:
        return f"it wrote status.availableReplicas={got!r}, not {available} (0 when none yet)"
    return None


def _reconcile_dry(reconcile: Reconcile) -> str | None:
    for situation, foo, deployment in _dry_cases():
        before = copy.deepcopy(foo), copy.deepcopy(deployment)
        clients, raised = _Recorded(), None
        try:
            reconcile(foo, deployment, clients)
        except Exception as exc:  # judged below: raising is right in one situation
            raised = exc
        if (foo, deployment) != before:
            return (
                f"for {situation} it changed the objects it was given; in a controller they "
                "are the cache's copies, shared by every reader: change a deep copy"
            )
        problem = _judge_dry(situation, foo, clients, raised)
        if problem is not None:
            return f"for {situation}: {problem}"
    return None


class _Stuck(RuntimeError):
    """The learner's controller did not bring the cluster where it should be."""


def _learner_sync(
    controller: FooController, reconcile: Reconcile, failures: list[str], key: str
) -> None:
    """sync_handler up to the decision (the listers' reads), then the learner's ``reconcile``."""
    namespace, name = split_meta_namespace_key(key)
    try:
        foo = controller.foos_lister.namespace(namespace).get(name)
    except NotFoundError:
        return
    deployment_name = (foo.get("spec") or {}).get("deploymentName")
    if not deployment_name:
        return
    try:
        deployment = controller.deployments_lister.namespace(namespace).get(deployment_name)
    except NotFoundError:
        deployment = None
    try:
        reconcile(foo, deployment, controller.clients)
    except Exception as exc:
        detail = explain(exc) if isinstance(exc, ApiException) else str(exc)
        failures.append(f"{name}: {type(exc).__name__}: {detail}")
        raise


def _reconcile_on_cluster(
    reconcile: Reconcile, api: kubernetes.client.ApiClient, namespace: str
) -> str:
    """Run a controller with the learner's ``reconcile`` on real Foos; what went right.

    Raises :class:`_Stuck` (what was awaited, and what the function raised) when
    the cluster never got there.
    """
    custom = kubernetes.client.CustomObjectsApi(api)
    apps = kubernetes.client.AppsV1Api(api)
    core = kubernetes.client.CoreV1Api(api)
    web, greedy, taken = "exercise-4-web", "exercise-4-greedy", "exercise-4-taken"

    def foos_where(condition: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        return wait_for(
            custom.list_namespaced_custom_object,
            condition,
            what=what,
            timeout=TIMEOUT,
            group=FOO_GROUP,
            version=FOO_VERSION,
            namespace=namespace,
            plural=FOO_PLURAL,
        )

    def available(n: int) -> Callable[[dict[str, Any]], bool]:
        return lambda foos: (
            ((foos.get(web) or {}).get("status") or {}).get("availableReplicas") == n
        )

    _delete_foos(custom, apps, namespace, [web, greedy], [web, taken])
    labels = {"app": "theirs"}
    apps.create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": taken},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "app", "image": "busybox", **IF_NOT_PRESENT}]},
                },
            },
        },
    )
    controller = FooController.new(api, namespace=namespace)
    failures: list[str] = []
    # The learner's reconcile in place of this one controller's sync_handler (mypy refuses any
    # assignment to a method, hence the ignore).
    controller.sync_handler = lambda key: _learner_sync(controller, reconcile, failures, key)  # type: ignore[method-assign]
    stop = StopEvent()
    runner = threading.Thread(
        target=run_controller, args=(controller, 2, stop), name="foo-controller-exercise-4"
    )
    runner.start()
    try:
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body(web, web, 1)
        )
        foos_where(available(1), f"Foo {web}: a Deployment made, status.availableReplicas 1")
        custom.patch_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, web, {"spec": {"replicas": 2}}
        )
        foos_where(available(2), f"Foo {web} scaled to 2: status.availableReplicas 2")
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body(greedy, taken, 2)
        )
        wait_for(
            core.list_namespaced_event,
            lambda events: any(e["reason"] == ERR_RESOURCE_EXISTS for e in events.values()),
            what=f"a Warning Event {ERR_RESOURCE_EXISTS} on Foo {greedy}",
            timeout=TIMEOUT,
            namespace=namespace,
            field_selector=f"involvedObject.name={greedy}",
        )
        theirs = apps.read_namespaced_deployment(taken, namespace)
    except CourseError as exc:
        unexpected = [f for f in failures if not f.startswith(greedy)]
        raised = f"; your function raised {unexpected[-1]}" if unexpected else ""
        raise _Stuck(f"{exc.problem}{raised}") from None
    finally:
        stop.set()
        runner.join(TIMEOUT)
        _delete_foos(custom, apps, namespace, [web, greedy], [web, taken])
    if theirs.metadata.owner_references or theirs.spec.replicas != 1:
        raise _Stuck(f"Deployment {taken}, somebody else's, was changed; leave it alone")
    return f"Foo {web} created and scaled, {greedy} warned; Deployment {taken} untouched"


def check_4(
    reconcile: Reconcile | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``reconcile(foo, deployment, clients)``: on cached objects, then in a real controller."""
    if reconcile is None:
        return not_attempted("4", "set reconcile to your function")
    problem = _reconcile_dry(reconcile)
    if problem is not None:
        return wrong("4", problem)
    namespaces.ensure_namespace(api, namespace)
    try:
        done = _reconcile_on_cluster(reconcile, api, namespace)
    except _Stuck as exc:
        return wrong("4", f"on the cluster: {exc}")
    return correct("4", done)
