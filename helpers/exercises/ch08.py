"""Checks for chapter 08's exercises (production patterns).

Exercise 1 is a prediction about failover, checked against what the elector's
rules imply (and the chapter measured). Exercise 2 builds the RBAC verb a
request needs, checked on requests of every kind the controller makes and a
few it does not. Exercise 3 is a prediction about finalizers that the check
then carries out on the cluster, so the answer is compared with what really
happens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import kubernetes
from kubernetes.client.exceptions import ApiException

from ..controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from ..finalizers import FINALIZER, is_being_deleted, set_foo_finalizers
from ..waiting import wait_for
from . import Verdict, correct, not_attempted, wrong

ANSWERS_1 = {
    "a": "the standby cannot tell a dead leader from a slow one: it waits until the record "
    "has not changed for a whole LeaseDuration (15 s) after a crash",
    "c": "RenewDeadline (10 s) is how long a *leader* keeps trying to renew; the standby "
    "counts LeaseDuration (15 s) from the last change it saw. And SIGTERM releases the Lease",
    "d": "a released Lease (empty holder) is free at once, and an unreleased one expires "
    "after LeaseDuration; nothing waits forever",
}


def check_1(answer: str | None) -> Verdict:
    """Failover after a crash and after a clean stop (client-go's default durations)."""
    if answer is None:
        return not_attempted("1", 'set answer_1 to "a", "b", "c" or "d"')
    answer = str(answer).strip().lower()
    if answer == "b":
        return correct(
            "1",
            "after a crash the standby waits out the lease it last saw change (15 s, plus up "
            "to two jittered retries); a clean stop releases the Lease, so the standby takes "
            "it at its next try (2 to 4.4 s)",
        )
    if answer in ANSWERS_1:
        return wrong("1", ANSWERS_1[answer])
    return wrong("1", f'{answer!r} is not one of "a", "b", "c", "d"')


VERB_CASES: list[tuple[str, str, dict[str, str], tuple[str, str]]] = [
    ("GET", "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/shop/foos", {"limit": "500"},
     ("list", "foos.samplecontroller.k8s.io")),
    ("GET", "/apis/apps/v1/namespaces/shop/deployments", {"watch": "true"},
     ("watch", "deployments.apps")),
    ("GET", "/apis/coordination.k8s.io/v1/namespaces/shop/leases/foo-controller", {},
     ("get", "leases.coordination.k8s.io")),
    ("POST", "/apis/apps/v1/namespaces/shop/deployments", {}, ("create", "deployments.apps")),
    ("PUT", "/apis/apps/v1/namespaces/shop/deployments/web", {}, ("update", "deployments.apps")),
    ("PUT", "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/shop/foos/a/status", {},
     ("update", "foos/status.samplecontroller.k8s.io")),
    ("POST", "/api/v1/namespaces/shop/events", {}, ("create", "events")),
    ("PATCH", "/api/v1/namespaces/shop/events/a.17f0", {}, ("patch", "events")),
    ("DELETE", "/api/v1/namespaces/shop/configmaps/x", {}, ("delete", "configmaps")),
    ("GET", "/api/v1/nodes", {}, ("list", "nodes")),
    ("GET", "/apis/apps/v1/deployments", {"watch": "1"}, ("watch", "deployments.apps")),
]  # fmt: skip
"""(method, path, query, (verb, resource as RBAC names it)) for exercise 2."""


def check_2(rbac_verb: Callable[[str, str, Mapping[str, str]], tuple[str, str]] | None) -> Verdict:
    """The RBAC verb and resource of an HTTP request."""
    if rbac_verb is None:
        return not_attempted("2", "set rbac_verb to your function (method, path, query)")
    for method, path, query, expected in VERB_CASES:
        try:
            got = tuple(rbac_verb(method, path, dict(query)))
        except Exception as err:
            return wrong("2", f"{method} {path} raised {type(err).__name__}: {err}")
        if got != expected:
            shown = f"{method} {path}" + (f"?{next(iter(query))}=..." if query else "")
            return wrong(
                "2",
                f"{shown} needs {expected}, you said {got}. Hint: a GET of a collection is "
                "list (or watch with watch=true/1), of one object get; a subresource is "
                "written resource/subresource; the core group has no suffix.",
            )
    return correct("2", f"all {len(VERB_CASES)} requests")


def check_3(answer: str | None, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """Delete a Foo that carries our finalizer while no controller runs: what happens?

    The check does it: creates Foo ``exercise-3`` with the finalizer, deletes it,
    looks, then removes the finalizer itself (the cleanup a controller would do).
    """
    if answer is None:
        return not_attempted("3", 'set answer_3 to "a", "b", "c" or "d"')
    custom = kubernetes.client.CustomObjectsApi(api)
    body = foo_body("exercise-3", "exercise-3", 1)
    body["metadata"]["finalizers"] = [FINALIZER]
    custom.create_namespaced_custom_object(FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, body)
    custom.delete_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, "exercise-3"
    )
    try:
        foo = custom.get_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, "exercise-3"
        )
    except ApiException as err:
        if err.status != 404:
            raise
        foo = None
    seen = "c" if foo is not None and is_being_deleted(foo) else "a"
    if foo is not None:
        set_foo_finalizers(api, foo, [])  # what the controller would do after its cleanup
        wait_for(
            custom.list_namespaced_custom_object,
            lambda foos: "exercise-3" not in foos,
            what="Foo exercise-3 to go once its finalizer is removed",
            timeout=30,
            group=FOO_GROUP, version=FOO_VERSION, namespace=namespace, plural=FOO_PLURAL,
        )  # fmt: skip
    answer = str(answer).strip().lower()
    if answer == seen == "c":
        return correct(
            "3",
            "the DELETE only set deletionTimestamp; the Foo stayed (Terminating) until its "
            "finalizer was removed, then the API server deleted it",
        )
    hints = {
        "a": "with a finalizer, a DELETE only marks the object (deletionTimestamp) and waits",
        "b": "the API server accepts the DELETE (200); it just does not remove the object yet",
        "d": "the garbage collector follows owner references, not finalizers; nothing removes "
        "another controller's finalizer for it",
    }
    return wrong("3", hints.get(answer, f'{answer!r} is not one of "a", "b", "c", "d"'))
