"""A chapter's namespace: made fresh at the top, deleted at the end, and only if it is ours.

Every chapter works in a namespace of its own (``ch04-workqueue``, ...). It
deletes a leftover from an interrupted run when it starts and its namespace
when it ends, so it can always be run again from the top. A namespace of the
same name that the course did not make (it lacks :data:`COURSE_LABELS`) is a
learner's: it and everything in it are left alone, with a sentence that says
so. The check and the delete cannot be fooled by a namespace replaced in
between: the delete carries the UID that was checked as a precondition.

In attendee mode (:mod:`helpers.workshop_mode`) the chapter works in the
attendee's own namespace, which the facilitator made: it is emptied, never
deleted, since an attendee may not create namespaces. Emptying asks the API
server first who the client is and whose the namespace is
(:func:`helpers.workshop_mode.verify`): an admin's context pointed at an
attendee's namespace is refused, and nothing is deleted.
"""

from __future__ import annotations

import time
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.resource import ResourceList

from .errors import CourseError
from .waiting import wait_for
from .workshop_mode import WORKSHOP_LABEL, attendee, chapter_namespace, verify

COURSE_LABELS = {"course": "controllers-from-scratch"}
"""Every namespace the course makes carries these labels; only such a namespace is deleted."""
# Kept when a namespace is emptied: the API server's controllers recreate them at once anyway.
_KEEP_BY_NAME = {"configmaps": "kube-root-ca.crt", "serviceaccounts": "default"}


def is_the_courses(namespace: Any) -> bool:
    """Did the course make this namespace (a V1Namespace)? Its labels say."""
    labels = namespace.metadata.labels or {}
    return all(labels.get(key) == value for key, value in COURSE_LABELS.items())


def not_ours(name: str) -> CourseError:
    """The sentence for a namespace of the course's name that the course did not make."""
    wanted = ",".join(f"{key}={value}" for key, value in COURSE_LABELS.items())
    return CourseError(
        f"Namespace {name} exists but the course did not make it (it lacks the label {wanted}), "
        "so the course leaves it and everything in it alone.",
        f"if it is yours, run the chapter on another cluster; if it is an old leftover you no "
        f"longer need, delete it yourself (`kubectl delete namespace {name}`) and run the cell "
        "again.",
    )


def _read(core: kubernetes.client.CoreV1Api, name: str) -> Any | None:
    try:
        return core.read_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
    return None


def _create(core: kubernetes.client.CoreV1Api, name: str) -> None:
    core.create_namespace({"metadata": {"name": name, "labels": dict(COURSE_LABELS)}})


def _wait_gone(core: kubernetes.client.CoreV1Api, name: str, timeout: float, what: str) -> None:
    wait_for(
        core.list_namespace,
        lambda namespaces: name not in namespaces,
        what=what,
        timeout=timeout,
        field_selector=f"metadata.name={name}",
    )


def _delete_if_unchanged(core: kubernetes.client.CoreV1Api, found: Any) -> bool:
    """Delete namespace ``found`` unless it was replaced since it was read; True if deleted."""
    preconditions = kubernetes.client.V1Preconditions(uid=found.metadata.uid)
    try:
        core.delete_namespace(
            found.metadata.name, body=kubernetes.client.V1DeleteOptions(preconditions=preconditions)
        )
    except ApiException as exc:
        if exc.status == 404:
            return True  # gone already: what we wanted
        if exc.status == 409:  # another namespace of that name now (precondition failed)
            return False
        raise
    return True


def ensure_namespace(api: kubernetes.client.ApiClient, name: str) -> str:
    """Make sure namespace ``name`` exists (create it if missing); returns its name.

    For exercises: after "Run All" the chapter's last cell has deleted its
    namespace, and an exercise run later must not fail with a 404.
    A namespace still being deleted is waited for, then created again.
    In attendee mode the facilitator's namespaces always exist (they are only
    ever emptied), so nothing is asked of the API server.
    """
    if attendee() is not None:
        return chapter_namespace(name)
    core = kubernetes.client.CoreV1Api(api)
    found = _read(core, name)
    if found is not None:
        if not is_the_courses(found):
            raise not_ours(name)
        if found.metadata.deletion_timestamp is None:
            return name
        _wait_gone(core, name, 120, f"namespace {name} to finish deleting")
    try:
        _create(core, name)
    except ApiException as exc:
        if exc.status != 409:  # created meanwhile (another cell, another kernel): fine
            raise
    return name


def fresh_namespace(api: kubernetes.client.ApiClient, name: str, *, timeout: float = 120) -> str:
    """Create namespace ``name``; the course's leftover from an interrupted run is deleted first.

    A namespace of that name that the course did not make is refused with a
    sentence (:func:`not_ours`). In attendee mode the chapter works in
    ``<attendee>-name`` instead, which is emptied. Returns the name the chapter
    must use.
    """
    if (who := attendee()) is not None:
        chosen = chapter_namespace(name)
        empty_namespace(api, chosen, who, timeout=timeout)
        return chosen
    core = kubernetes.client.CoreV1Api(api)
    found = _read(core, name)
    if found is not None:
        if not is_the_courses(found) or not _delete_if_unchanged(core, found):
            raise not_ours(name)
        _wait_gone(core, name, timeout, f"the old namespace {name} to be deleted")
    _create(core, name)
    return name


def delete_namespace(api: kubernetes.client.ApiClient, name: str) -> str:
    """A chapter's clean-up: delete namespace ``name`` if the course made it.

    Returns what happened, as the end of a sentence for the chapter to print
    after ``f"namespace {name} "``: "is being deleted" (a namespace already
    gone counts too), "was emptied" for an attendee, who keeps it, or "was
    left alone" for a namespace the course did not make.
    """
    if (who := attendee()) is not None:
        empty_namespace(api, name, who)
        return "was emptied (an attendee keeps their namespaces)"
    core = kubernetes.client.CoreV1Api(api)
    found = _read(core, name)
    if found is None:
        return "is being deleted"
    if not is_the_courses(found) or not _delete_if_unchanged(core, found):
        return "was left alone: the course did not make it"
    return "is being deleted"


def empty_namespace(
    api: kubernetes.client.ApiClient, name: str, who: str, *, timeout: float = 120
) -> None:
    """Delete everything in attendee ``who``'s namespace ``name`` that a chapter may have made.

    First the API server must confirm that ``api`` is ``who``'s ServiceAccount
    and ``name`` is ``who``'s namespace (:func:`helpers.workshop_mode.verify`);
    if not, a CourseError and nothing is deleted. Then it waits until all is gone.

    What deleting the namespace would do, with only rights inside it: one
    DELETE of each collection (every namespaced resource that allows it,
    found by discovery), keeping what the facilitator made (label
    :data:`WORKSHOP_LABEL`) and what the cluster recreates anyway. Objects held
    by a finalizer whose controller is gone (a chapter's stopped controller)
    have the finalizer removed, as a person would with kubectl.
    """
    verify(api, who, name)
    dynamic = kubernetes.dynamic.DynamicClient(api)
    resources = [
        resource
        for resource in dynamic.resources.search(namespaced=True)
        if not isinstance(resource, ResourceList)  # the ``...List`` kinds, not resources
        and "/" not in resource.name
        and {"list", "deletecollection"} <= set(resource.verbs or [])
        and resource.preferred
    ]
    deadline = time.monotonic() + timeout
    for resource in sorted(resources, key=_deletion_order):
        keep = _KEEP_BY_NAME.get(resource.name) if resource.group == "" else None
        selectors = {
            "label_selector": f"!{WORKSHOP_LABEL}",
            "field_selector": f"metadata.name!={keep}" if keep else None,
        }
        try:
            resource.delete(
                namespace=name,
                body={"propagationPolicy": "Background", "gracePeriodSeconds": 0},
                **{key: value for key, value in selectors.items() if value},
            )
        except ApiException as exc:
            if exc.status in (403, 405):  # not ours to touch (an attendee may not make it either)
                continue
            raise
        _wait_until_empty(resource, name, selectors, deadline)


def _deletion_order(resource: Any) -> int:
    """Owners before what they own, so that no controller recreates a child in between."""
    order = {"deployments": 0, "replicasets": 1, "foos": 0}
    return order.get(resource.name, 2)


def _wait_until_empty(resource: Any, namespace: str, selectors: dict[str, str | None],
                      deadline: float) -> None:  # fmt: skip
    """Watch ``resource`` in ``namespace`` until nothing matching ``selectors`` is left."""
    query = {key: value for key, value in selectors.items() if value}
    listed = resource.get(namespace=namespace, **query)
    left = {item.metadata.name: item for item in listed.items}
    for item in left.values():
        _drop_finalizers(resource, namespace, item)
    if not left:
        return
    remaining = {name for name in left}
    watching = resource.watch(
        namespace=namespace,
        resource_version=listed.metadata.resourceVersion,
        timeout=max(1, int(deadline - time.monotonic())),
        **query,
    )
    for event in watching:
        name = event["object"].metadata.name
        if event["type"] == "DELETED":
            remaining.discard(name)
        elif event["type"] == "ADDED":  # recreated by a controller not yet told: delete again
            remaining.add(name)
            resource.delete(name=name, namespace=namespace, body={"gracePeriodSeconds": 0})
        else:
            _drop_finalizers(resource, namespace, event["object"])
        if not remaining:
            return
    raise CourseError(
        f"Namespace {namespace} still holds {resource.kind} {', '.join(sorted(remaining))} "
        "after emptying it.",
        "look at those objects' finalizers (`kubectl get -o yaml`), then run the cell again.",
    )


def _drop_finalizers(resource: Any, namespace: str, item: Any) -> None:
    """Remove the finalizers of an object already being deleted (its controller has stopped)."""
    if item.metadata.deletionTimestamp and item.metadata.finalizers:
        try:
            resource.patch(
                name=item.metadata.name,
                namespace=namespace,
                body={"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
