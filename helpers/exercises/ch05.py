"""Checks for chapter 05's exercises (the controller).

Exercises 1 and 2 are pure functions, checked on made-up objects: the owner
lookup of ``handle_object`` against a real lister over a hand-filled cache, and
a Deployment that carries its Foo's labels. Exercise 3 runs the chapter's
controller on the cluster and makes two Foos ask for one Deployment. Exercise 4
reads Foo statuses through a real, started informer and counts the learner's
API requests.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes

from ..clock import StopEvent
from ..controller import (
    ERR_RESOURCE_EXISTS,
    FOO_GROUP,
    FOO_KIND,
    FOO_PLURAL,
    FOO_VERSION,
    FooController,
    controller_of,
    foo_body,
    new_deployment,
    run_controller,
)
from ..informer import SharedInformer, wait_for_cache_sync
from ..lister import Lister
from ..listwatch import ListWatch
from ..request_log import RequestLog
from ..store import DeletedFinalStateUnknown, Indexer
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


def _deployment(namespace: str, *owners: tuple[str, str, bool]) -> dict[str, Any]:
    """A Deployment "web" with owner references (kind, name, controller)."""
    references = [
        {
            "apiVersion": f"{FOO_GROUP}/{FOO_VERSION}" if kind == FOO_KIND else "apps/v1",
            "kind": kind,
            "name": name,
            "uid": f"uid-{name}",
            "controller": is_controller,
        }
        for kind, name, is_controller in owners
    ]
    return {"metadata": {"name": "web", "namespace": namespace, "ownerReferences": references}}


def _owner_cases() -> list[tuple[str, Any, str | None]]:
    """(what, object, the key handle_object would enqueue) for exercise 1."""
    owned = _deployment("shop", (FOO_KIND, "a", True))
    return [
        ("a Deployment controlled by Foo shop/a", owned, "shop/a"),
        (
            "a tombstone of that Deployment",
            DeletedFinalStateUnknown("shop/web", copy.deepcopy(owned)),
            "shop/a",
        ),
        ("a Deployment with no owner references", _deployment("shop"), None),
        (
            "a Deployment controlled by a ReplicaSet that is also called a",
            _deployment("shop", ("ReplicaSet", "a", True)),
            None,
        ),
        (
            "a Deployment owned by Foo a (not as controller) and controlled by Foo b",
            _deployment("shop", (FOO_KIND, "a", False), (FOO_KIND, "b", True)),
            "shop/b",
        ),
        (
            "a Deployment controlled by Foo gone, which is not in the cache",
            _deployment("shop", (FOO_KIND, "gone", True)),
            None,
        ),
        (
            "a Deployment in namespace other controlled by a Foo called a",
            _deployment("other", (FOO_KIND, "a", True)),
            None,
        ),
    ]


def check_1(foo_key_for: Callable[[Any, Lister], str | None] | None) -> Verdict:
    """``foo_key_for(obj, foos_lister)``: the key of the Foo controlling ``obj``, or None."""
    if foo_key_for is None:
        return not_attempted("1", "set foo_key_for to your function")
    indexer = Indexer()
    for name in ("a", "b"):
        indexer.add(_foo(name, "shop", deploymentName=name))
    lister = Lister(indexer, FOO_PLURAL, FOO_GROUP)
    for what, obj, expected in _owner_cases():
        try:
            got = foo_key_for(obj, lister)
        except Exception as exc:  # reported to the learner, not swallowed
            return wrong("1", f"for {what} it raised {type(exc).__name__}: {exc}")
        if got != expected:
            return wrong("1", f"for {what} it returned {got!r}, not {expected!r}")
    return correct("1", f"all {len(_owner_cases())} cases, tombstones and orphans included")


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


# --- exercise 3: two Foos, one Deployment --------------------------------------------------------

ANSWER_3 = "c"


def _run_two_foos(api: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    """Run the controller; Foo first makes Deployment shared, then Foo second asks for it too.

    Leaves the namespace as it found it: both Foos deleted, and the Deployment
    garbage collected, so that the check can run again.
    """
    custom = kubernetes.client.CustomObjectsApi(api)
    apps = kubernetes.client.AppsV1Api(api)
    core = kubernetes.client.CoreV1Api(api)

    def create(name: str, replicas: int) -> dict[str, Any]:
        body = foo_body(name, "shared", replicas)
        return custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, body
        )

    def owned_by(uid: str) -> Callable[[dict[str, Any]], bool]:
        def condition(deployments: dict[str, Any]) -> bool:
            owner = controller_of(deployments["shared"]) if "shared" in deployments else None
            return owner is not None and owner.get("uid") == uid

        return condition

    controller = FooController.new(api, namespace=namespace)
    stop = StopEvent()
    runner = threading.Thread(
        target=run_controller, args=(controller, 2, stop), name="foo-controller-exercise-3"
    )
    runner.start()
    try:
        first = create("exercise-3-first", 1)
        shared = wait_for(
            apps.list_namespaced_deployment,
            owned_by(first["metadata"]["uid"]),
            what="the controller to create Deployment shared for Foo exercise-3-first",
            timeout=TIMEOUT,
            namespace=namespace,
        )["shared"]
        second = create("exercise-3-second", 2)
        events = wait_for(
            core.list_namespaced_event,
            lambda events: any(e["reason"] == ERR_RESOURCE_EXISTS for e in events.values()),
            what="an Event about Foo exercise-3-second",
            timeout=TIMEOUT,
            namespace=namespace,
            field_selector=f"involvedObject.uid={second['metadata']['uid']}",
        )
        # Read it again: by the time of the Warning, the sync of second has done all it will.
        shared = wait_for(
            apps.list_namespaced_deployment,
            lambda deployments: "shared" in deployments,
            what="Deployment shared",
            timeout=TIMEOUT,
            namespace=namespace,
        )["shared"]
    finally:
        stop.set()
        runner.join(TIMEOUT)
        for name in ("exercise-3-first", "exercise-3-second"):
            try:
                custom.delete_namespaced_custom_object(
                    FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, name
                )
            except kubernetes.client.exceptions.ApiException as exc:
                if exc.status != 404:
                    raise
    wait_for(
        apps.list_namespaced_deployment,
        lambda deployments: "shared" not in deployments,
        what="the garbage collector to delete Deployment shared",
        timeout=TIMEOUT,
        namespace=namespace,
    )
    owner = controller_of(shared) or {}
    return {
        "event": next(e for e in events.values() if e["reason"] == ERR_RESOURCE_EXISTS),
        "owner_uid": owner.get("uid"),
        "first_uid": first["metadata"]["uid"],
        "replicas": shared["spec"]["replicas"],
    }


def check_3(answer: str | None, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """What happens to a Foo whose Deployment is another Foo's: checked on the cluster."""
    if answer is None:
        return not_attempted("3", 'set answer_3 to "a", "b", "c" or "d"')
    if answer not in ("a", "b", "c", "d"):
        return wrong("3", f'{answer!r} is not one of "a", "b", "c", "d"')
    seen = _run_two_foos(api, namespace)
    happened = (
        seen["event"]["type"] == "Warning"
        and seen["owner_uid"] == seen["first_uid"]
        and seen["replicas"] == 1
    )
    if not happened:
        return wrong("3", f"the cluster did something unexpected (check the controller): {seen}")
    if answer != ANSWER_3:
        return wrong(
            "3",
            "that is not what the controller did; read sync_handler's is_controlled_by check "
            "(and what it compares)",
        )
    event = seen["event"]
    return correct("3", f"{event['type']} {event['reason']}: {event['message']}")


# --- exercise 4: read through the cache ----------------------------------------------------------


def _set_status(custom: kubernetes.client.CustomObjectsApi, namespace: str, name: str) -> None:
    foo = custom.get_namespaced_custom_object(FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, name)
    foo["status"] = {"availableReplicas": 2}
    custom.replace_namespaced_custom_object_status(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, name, foo
    )


def check_4(
    available_replicas: Callable[[Lister, str], Mapping[str, int]] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """``available_replicas(foos_lister, namespace)`` from the cache, with no API request."""
    if available_replicas is None:
        return not_attempted("4", "set available_replicas to your function")
    custom = kubernetes.client.CustomObjectsApi(api)
    for name in ("exercise-4-ready", "exercise-4-new"):
        body = foo_body(name, name, 2)
        try:
            custom.create_namespaced_custom_object(
                FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, body
            )
        except kubernetes.client.exceptions.ApiException as exc:
            if exc.status != 409:  # made by an earlier run of this check
                raise
    _set_status(custom, namespace, "exercise-4-ready")
    listed = custom.list_namespaced_custom_object(FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL)
    expected = {
        item["metadata"]["name"]: (item.get("status") or {}).get("availableReplicas", 0)
        for item in listed["items"]
    }
    # The informer has a client of its own, so that only the learner's requests are counted.
    own_api = kubernetes.client.ApiClient(api.configuration)
    path = f"/apis/{FOO_GROUP}/{FOO_VERSION}/namespaces/{namespace}/{FOO_PLURAL}"
    informer = SharedInformer(ListWatch(own_api, path), name="exercise-4-foos")
    try:
        informer.start()
        if not wait_for_cache_sync(informer, timeout=TIMEOUT):
            return wrong("4", "the check's informer did not sync; is the cluster up?")
        with RequestLog(api) as requests:
            try:
                got = dict(available_replicas(informer.lister(FOO_PLURAL, FOO_GROUP), namespace))
            except Exception as exc:  # reported to the learner, not swallowed
                return wrong("4", f"it raised {type(exc).__name__}: {exc}")
    finally:
        informer.stop()
        informer.join(TIMEOUT)
        own_api.close()
    if requests.requests:
        return wrong("4", f"it made {len(requests.requests)} API request(s); use the lister only")
    if got != expected:
        return wrong("4", f"it returned {got}, not {expected}")
    return correct("4", f"{len(got)} Foos, no API request")
