"""A stale cache on purpose: an informer that stops hearing, and an object that moves on.

A controller writes from what its cache says. When the cache is behind the
API server, a write that carries the cached resourceVersion gets 409 Conflict:
optimistic concurrency doing its job. In a running cluster that happens now
and then (chapter 06 caught one: the controller's own status write not yet
back through the watch); a test needs it every time. So:

* :func:`stale_cache` holds the informer's watch back (a
  :class:`helpers.held_watch.HeldListWatch`), so its cache keeps the versions
  it has for as long as the block lasts, then lets the watch catch up;
* :func:`touch` changes an object in a way no controller cares about (an
  annotation), so the API server's copy moves on and the cached one is old.

A write based on the cached copy then gets its 409 every time, until the
block ends. The drill shows how a controller answers a conflict: requeue and
read again (right), or send the same stale object again (wrong: every retry
conflicts, however many there are).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator

import kubernetes

from helpers.errors import CourseError
from helpers.held_watch import HeldListWatch

TOUCH_ANNOTATION = "controllers-from-scratch/touched"


@contextlib.contextmanager
def stale_cache(watch: HeldListWatch, timeout: float = 30.0) -> Iterator[None]:
    """While inside, the informer built on ``watch`` hears nothing; afterwards it catches up.

    The open watch is ended and the next one held at the gate, so nothing
    reaches the cache; on the way out the watch resumes from the cache's last
    resourceVersion and delivers what it missed.
    """
    watch.hold(cut=True)
    try:
        if not watch.wait_until_held(timeout):
            raise CourseError(
                f"The informer did not come back to watch within {timeout:g} s.",
                "check that it runs (it must be started, and on a ListWatch that is this one).",
            )
        yield
    finally:
        watch.release()


def touch(api: kubernetes.client.ApiClient, path: str) -> str:
    """Give the object at ``path`` a new resourceVersion and nothing else; return it.

    ``path`` is the object's API path, for example
    ``/apis/samplecontroller.k8s.io/v1alpha1/namespaces/NS/foos/NAME``. The
    change is a merge patch of one annotation, which no controller here reads.
    """
    patch = {"metadata": {"annotations": {TOUCH_ANNOTATION: uuid.uuid4().hex}}}  # always new
    headers = {"Content-Type": "application/merge-patch+json", "Accept": "application/json"}
    response = api.call_api(
        path,
        "PATCH",
        header_params=headers,
        body=patch,
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
        _preload_content=False,
        _request_timeout=30,
    )
    try:
        return json.loads(response.data)["metadata"]["resourceVersion"]
    finally:
        response.release_conn()
