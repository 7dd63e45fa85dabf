"""Waiting for the cluster to reach a state, by watching rather than polling.

``wait_for`` lists a collection once, then follows a watch from the list's
resourceVersion and re-checks the condition on every event. It returns as soon
as the condition holds and raises :class:`CourseError` when the deadline passes.
No sleeps: the API server tells us when to look.

A connection can also die without a word (a laptop that slept, a NAT entry
that expired): no RST, no EOF, just silence, and a read without a timeout
waits for ever (the problem :mod:`helpers.listwatch` solves the same way). So
every watch asks the server to end it after ``WATCH_SECONDS`` (or the time
left), every request gives up reading ``READ_GRACE_SECONDS`` after that (and
never much past the deadline), and a request that went silent is followed by
a fresh list and watch, on a new connection, for as long as the deadline allows.

A timeout says what the wait last saw (how many objects, and a few by name with
their phase and Ready or Available condition): "waiting for one Ready Pod" that
saw no Pod at all points at the controllers, one that saw a Pod "Pending" at the
scheduler or the node.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from .errors import CourseError

Objects = dict[str, dict[str, Any]]

WATCH_SECONDS = 10
READ_GRACE_SECONDS = 2.0
CONNECT_TIMEOUT_SECONDS = 5.0
PAST_DEADLINE_SECONDS = 0.5  # how long a last read may run past the deadline


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
    objects: Objects | None = None  # what the last list and its watch showed
    while (window := _window(deadline)) is not None:
        stream = watch.Watch()
        try:
            listed = list_func(**list_kwargs, _request_timeout=_timeouts(deadline, window))
            objects, resource_version = _listed(list_func, listed)
            if condition(objects):
                return objects
            if (window := _window(deadline)) is None:
                break
            for event in stream.stream(
                list_func,
                resource_version=resource_version,
                timeout_seconds=window,
                _request_timeout=_timeouts(deadline, window),
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
            # our resourceVersion expired: list again
        except urllib3.exceptions.HTTPError as exc:
            if not _went_silent(exc):
                raise
            # the connection went quiet or broke mid-answer: list again, on a new one
        finally:
            stream.stop()
    raise CourseError(
        f"Timed out after {timeout:.0f}s waiting for {what}; {last_seen(objects)}.",
        "look at the cluster's logs (`python -m helpers.cluster logs`) and run the command again.",
    )


SHOWN_OBJECTS = 5
SHOWN_CONDITIONS = ("Ready", "Available", "Established")


def last_seen(objects: Objects | None, limit: int = SHOWN_OBJECTS) -> str:
    """A clause for the timeout message: how many objects the wait last saw, and a few of them.

    For example ``it last saw 2: web-1 (Running, Ready=True); web-2 (Pending, Ready=False)``.
    """
    if objects is None:
        return "the list itself never answered"
    if not objects:
        return "it last saw none"
    shown = []
    for name, obj in sorted(objects.items())[:limit]:
        status = obj.get("status") or {}
        state = [status["phase"]] if isinstance(status.get("phase"), str) else []
        state += [
            f"{condition.get('type')}={condition.get('status')}"
            for condition in status.get("conditions") or []
            if condition.get("type") in SHOWN_CONDITIONS
        ]
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            state.append("being deleted")
        shown.append(f"{name} ({', '.join(state)})" if state else name)
    more = f" and {len(objects) - limit} more" if len(objects) > limit else ""
    return f"it last saw {len(objects)}: {'; '.join(shown)}{more}"


def _window(deadline: float) -> int | None:
    """Seconds the next request may take (at most WATCH_SECONDS), or None past the deadline."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    return max(1, min(WATCH_SECONDS, math.ceil(remaining)))


def _timeouts(deadline: float, window: int) -> tuple[float, float]:
    """(connect, read) timeouts for a request the server should end within ``window`` seconds."""
    read = min(window + READ_GRACE_SECONDS, deadline - time.monotonic() + PAST_DEADLINE_SECONDS)
    return CONNECT_TIMEOUT_SECONDS, max(read, PAST_DEADLINE_SECONDS)


def _went_silent(exc: urllib3.exceptions.HTTPError) -> bool:
    """A read timeout or a connection broken mid-answer (urllib3 may wrap either)."""
    reason = exc.reason if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
    return isinstance(reason, urllib3.exceptions.TimeoutError | urllib3.exceptions.ProtocolError)


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
