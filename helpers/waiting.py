"""Waiting for the cluster to reach a state, by watching rather than polling.

``wait_for`` lists a collection once, then follows a watch from the list's
resourceVersion and re-checks the condition on every event. It returns as soon
as the condition holds and raises :class:`CourseError` with the last state it
saw when the deadline passes. No sleeps: the API server tells us when to look.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from .errors import CourseError

Objects = dict[str, dict[str, Any]]


def wait_for(
    list_func: Callable[..., Any],
    condition: Callable[[Objects], bool],
    *,
    what: str,
    timeout: float,
    **list_kwargs: Any,
) -> Objects:
    """Block until ``condition(objects by name)`` is true; return those objects.

    ``list_func`` is a list call of the official client (for example
    ``CoreV1Api(api).list_node``, or ``CustomObjectsApi(api).list_namespaced_custom_object``
    with ``group``, ``version``, ``namespace`` and ``plural`` as keywords). Listed
    items are turned into plain dicts shaped like the API's JSON, so
    ``condition`` sees the same form for listed and for watched objects.
    """
    deadline = time.monotonic() + timeout
    while True:
        objects, resource_version = _listed(list_func, list_func(**list_kwargs))
        if condition(objects):
            return objects
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        stream = watch.Watch()
        try:
            for event in stream.stream(
                list_func,
                resource_version=resource_version,
                timeout_seconds=max(1, int(remaining)),
                **list_kwargs,
            ):
                obj = event["raw_object"]
                name = obj["metadata"]["name"]
                if event["type"] == "DELETED":
                    objects.pop(name, None)
                else:
                    objects[name] = obj
                if condition(objects):
                    return objects
                if time.monotonic() >= deadline:
                    break
        except ApiException as exc:
            if exc.status != 410:
                raise
            continue  # our resourceVersion expired: list again
        finally:
            stream.stop()
        if time.monotonic() >= deadline:
            break
    raise CourseError(
        f"Timed out after {timeout:.0f}s waiting for {what}.",
        "look at the cluster's logs (`python -m helpers.cluster logs`) and run the command again.",
    )


def _listed(list_func: Callable[..., Any], listed: Any) -> tuple[Objects, str]:
    """Objects by name and the list's resourceVersion, from a typed or a raw list."""
    if isinstance(listed, dict):  # custom objects come back as the JSON dict already
        items = {item["metadata"]["name"]: item for item in listed["items"]}
        return items, listed["metadata"]["resourceVersion"]
    items = {item.metadata.name: _as_dict(list_func, item) for item in listed.items}
    return items, listed.metadata.resource_version


def _as_dict(list_func: Callable[..., Any], item: Any) -> dict[str, Any]:
    client = getattr(list_func, "__self__", None)
    api_client = getattr(client, "api_client", None)
    if api_client is None:
        return item.to_dict()
    return api_client.sanitize_for_serialization(item)
