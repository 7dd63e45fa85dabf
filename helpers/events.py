"""Events: telling people what a controller did to their object, in ``kubectl describe``.

client-go counterpart: ``tools/record`` (``EventRecorder``, ``EventBroadcaster``,
``EventCorrelator``) writing ``core/v1`` Events through ``EventSinkImpl``.

An Event is an ordinary API object in the object's namespace whose
``involvedObject`` points at the object it is about. ``kubectl describe foo x``
lists the Events that point at ``x``; that is how a user learns "your Foo could
not be synced because ..." without reading the controller's logs.

Like client-go's legacy recorder we write old-style Events (no ``eventTime``,
``firstTimestamp``/``lastTimestamp`` and ``count`` instead), named
``<object name>.<hex nanoseconds>``, with ``source.component`` and
``reportingComponent`` set to the controller's name.

A controller reports the same thing again and again ("Foo synced successfully"
on every sync). client-go's correlator turns repeats into one Event whose
``count`` grows, instead of thousands of Events; we do the same with a small
cache of the Events we wrote.

How this differs from client-go:

* Synchronous: ``event()`` makes the API call in the caller's thread.
  client-go queues Events to a broadcaster goroutine, so a slow API server never
  slows a sync. Ours keeps a sync waiting for one small write, and keeps the
  code short.
* Best effort, like client-go: a failed write is logged, never raised; an Event
  is a message to a human, not part of the controller's state.
* No spam filter (client-go's token bucket per object) and no aggregation of
  *similar* Events (same reason, different messages) into one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

log = logging.getLogger("helpers.events")

NORMAL = "Normal"
WARNING = "Warning"

CACHE_SIZE = 4096
"""How many distinct Events we remember for counting repeats (client-go ``maxLruCacheEntries``)."""

REQUEST_TIMEOUT = 10.0
"""Seconds an Event write may take; it is only a message, so we do not wait long."""


@dataclass(frozen=True)
class _Written:
    """An Event we wrote, so a repeat can bump its count instead of writing another."""

    namespace: str
    name: str
    count: int


class EventRecorder:
    """Records ``core/v1`` Events about API objects given as raw dicts.

    client-go ``record.EventRecorder`` (``Event(object, eventtype, reason,
    message)``) together with the part of ``EventCorrelator`` that counts
    repeats. Safe to call from several worker threads.
    """

    def __init__(
        self,
        core: kubernetes.client.CoreV1Api,
        component: str,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._core = core
        self.component = component
        self._now = now
        self._lock = threading.Lock()
        self._written: OrderedDict[tuple[str, ...], _Written] = OrderedDict()  # an LRU cache

    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        """Record that ``reason``/``message`` happened to ``obj`` (type Normal or Warning)."""
        reference = object_reference(obj)
        log.info(
            "Event(%s %s/%s): type=%s reason=%s message=%s",
            reference["kind"],
            reference["namespace"],
            reference["name"],
            event_type,
            reason,
            message,
        )
        identity = self._identity(reference, event_type, reason, message)
        with self._lock:
            before = self._written.get(identity)
        try:
            if before is not None and self._count_repeat(before):
                written = _Written(before.namespace, before.name, before.count + 1)
            else:
                written = self._create(reference, event_type, reason, message)
        except (ApiException, OSError) as err:
            # An Event is a note to a human: losing one must not fail the sync.
            log.warning("could not write Event %s about %s: %s", reason, reference["name"], err)
            return
        with self._lock:
            self._written[identity] = written
            self._written.move_to_end(identity)
            if len(self._written) > CACHE_SIZE:
                self._written.popitem(last=False)

    def _identity(
        self, reference: dict[str, Any], event_type: str, reason: str, message: str
    ) -> tuple[str, ...]:
        """What makes two Events "the same" (client-go ``getEventKey``); resourceVersion is not."""
        return (
            self.component,
            reference["kind"],
            reference["namespace"],
            reference["name"],
            reference["uid"],
            reference["apiVersion"],
            event_type,
            reason,
            message,
        )

    def _create(
        self, reference: dict[str, Any], event_type: str, reason: str, message: str
    ) -> _Written:
        stamp = self._timestamp()
        # Unique enough: nanoseconds since the epoch, as client-go names them.
        name = f"{reference['name']}.{time.time_ns():x}"
        namespace = reference["namespace"] or "default"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": reference,
            "type": event_type,
            "reason": reason,
            "message": message,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": "",
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        _discard(
            self._core.create_namespaced_event(
                namespace, body, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
            )
        )
        return _Written(namespace, name, 1)

    def _count_repeat(self, before: _Written) -> bool:
        """Bump ``count`` on the Event we wrote before; False if it is gone.

        The API server deletes Events after an hour (``--event-ttl``); a repeat
        after that gets a fresh Event.
        """
        patch = {"count": before.count + 1, "lastTimestamp": self._timestamp()}
        try:
            response = self._core.patch_namespaced_event(
                before.name,
                before.namespace,
                patch,
                # The client would label a dict as a JSON Patch; this is a merge patch.
                _content_type="application/merge-patch+json",
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        _discard(response)
        return True

    def _timestamp(self) -> str:
        # metav1.Time travels as RFC 3339 with whole seconds.
        return self._now().strftime("%Y-%m-%dT%H:%M:%SZ")


def _discard(response: Any) -> None:
    """Read the unwanted answer to its end, so its connection can serve the next request."""
    try:
        response.drain_conn()
    finally:
        response.release_conn()


def object_reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The ``involvedObject`` for ``obj`` (client-go ``reference.GetReference``)."""
    metadata = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "namespace": metadata.get("namespace", ""),
        "name": metadata.get("name", ""),
        "uid": metadata.get("uid", ""),
        "resourceVersion": metadata.get("resourceVersion", ""),
    }
