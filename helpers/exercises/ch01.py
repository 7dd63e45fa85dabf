"""Checks for chapter 01's exercises (list and watch by hand).

Each check runs against the real cluster: exercise 1 runs the learner's watch
generator, exercise 2 makes a resourceVersion expire for real (etcd compaction
of PodTemplates, which have no watch cache on the course's clusters), and
exercise 3 counts the requests of a real list+watch loop. Each check brings
the chapter's namespace back first (after "Run All" its last cell deleted it).
On a cluster without etcd access exercise 2 cannot make a version expire, and
its check says so instead of judging.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import kubernetes

from .. import namespaces
from ..cluster.info import describe
from ..etcd import EtcdClient
from ..request_log import RequestLog
from . import CannotCheck, Verdict, correct, not_attempted, wrong

WATCH_DEADLINE_SECONDS = 15.0


def _configmaps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def check_1(
    watch_from: Callable[..., Iterable[tuple[str, str]]] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """``watch_from(api, path, resource_version, timeout_seconds)`` yields (type, name)."""
    if watch_from is None:
        return not_attempted("1", "set watch_from to your generator function")
    namespaces.ensure_namespace(api, namespace)
    core = kubernetes.client.CoreV1Api(api)
    version = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "exercise-w"}})
    core.patch_namespaced_config_map("exercise-w", namespace, {"data": {"n": "1"}})
    core.delete_namespaced_config_map("exercise-w", namespace)

    seen: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            seen.extend(watch_from(api, _configmaps(namespace), version, 2))
        except BaseException as exc:  # reported to the learner, not swallowed
            failure.append(exc)

    worker = threading.Thread(target=run, name="exercise-1-watch", daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(WATCH_DEADLINE_SECONDS)
    if worker.is_alive():
        return wrong(
            "1",
            f"it did not end within {WATCH_DEADLINE_SECONDS:.0f} s of a 2 s watch: did you pass "
            "timeoutSeconds to the server, and stop when the response has no more lines?",
        )
    if failure:
        return wrong(
            "1",
            f"it raised {type(failure[0]).__name__}: {failure[0]} (run your function by hand on "
            "the chapter's PATH to see where)",
        )
    ours = [tuple(item) for item in seen if len(item) == 2 and item[1] == "exercise-w"]
    expected = [("ADDED", "exercise-w"), ("MODIFIED", "exercise-w"), ("DELETED", "exercise-w")]
    if ours != expected:
        return wrong(
            "1",
            f"for ConfigMap exercise-w it yielded {ours}; the server sent three events for it "
            "(created, changed, deleted): yield one (type, name) pair for each",
        )
    return correct("1", f"three events, stream ended after {time.monotonic() - started:.0f} s")


def _expired_watch(api: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    """Make a PodTemplate watch's resourceVersion expire, and return the server's Status."""
    core = kubernetes.client.CoreV1Api(api)
    template = {
        "metadata": {"generateName": "exercise-expiry-"},
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }
    name = core.create_namespaced_pod_template(namespace, template).metadata.name
    version = core.list_namespaced_pod_template(namespace).metadata.resource_version
    # Two writes after the list, so that the first one (version + 1, where the watch
    # would start) is older than the revision we compact at.
    for n in range(2):
        core.patch_namespaced_pod_template(name, namespace, {"metadata": {"labels": {"n": str(n)}}})
    etcd = EtcdClient(describe().etcd_url)
    etcd.compact(etcd.revision())
    response = api.call_api(
        f"/api/v1/namespaces/{namespace}/podtemplates",
        "GET",
        query_params=[("watch", "true"), ("resourceVersion", version), ("timeoutSeconds", "2")],
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=(5, 10),
    )
    try:
        for line in iter(response.readline, b""):
            event = json.loads(line)
            if event["type"] == "ERROR":
                return event["object"]
    finally:
        # We stop at the ERROR event, before the end of the stream. Released as it is, the
        # connection would go back to the pool with that response unread, and the next request
        # to pick it before the server's final chunk arrives would fail with
        # ResponseNotReady('Request-sent'). Closing it gives the pool a fresh one instead.
        response.close()
        response.release_conn()
    raise AssertionError("the watch from a compacted resourceVersion did not fail")


def check_2(
    answer: tuple[int, str] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``(code, reason)`` of the Status in the ERROR event of an expired watch."""
    if answer is None:
        return not_attempted("2", "set answer_2 to a tuple such as (404, 'NotFound')")
    try:
        code, reason = answer
    except (TypeError, ValueError):
        return wrong("2", "answer_2 should be a tuple of two: (a number, a reason like 'NotFound')")
    if describe().etcd_url is None:
        return CannotCheck(
            "2",
            "not attempted yet",
            "can't check this on a cluster without etcd access (a real 410 needs an etcd "
            "compaction); compare your answer with the chapter's 410 section",
        )
    namespaces.ensure_namespace(api, namespace)
    status = _expired_watch(api, namespace)
    expected = (status["code"], status["reason"])
    if code != expected[0]:
        return wrong(
            "2",
            f"the code is not {code}: it is the HTTP status the same error has when it is the "
            "answer to a request",
        )
    if reason != expected[1]:
        return wrong("2", f"the reason is not {reason!r} (that may be the HTTP reason phrase)")
    return correct("2", f"{expected[0]} {expected[1]}: {status['message']}")


def check_3(answer: int | None, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """Requests made by a list+watch loop running 6 s with timeoutSeconds=2."""
    if answer is None:
        return not_attempted("3", "set answer_3 to a number of requests")
    namespaces.ensure_namespace(api, namespace)
    path = _configmaps(namespace)
    deadline = time.monotonic() + 6
    with RequestLog(api) as log:
        core = kubernetes.client.CoreV1Api(api)
        version = core.list_namespaced_config_map(namespace).metadata.resource_version
        while time.monotonic() < deadline - 0.5:
            response = api.call_api(
                path,
                "GET",
                query_params=[
                    ("watch", "true"),
                    ("resourceVersion", version),
                    ("timeoutSeconds", "2"),
                ],
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=(5, 10),
            )
            for line in iter(response.readline, b""):
                version = json.loads(line)["object"]["metadata"]["resourceVersion"]
            response.release_conn()
    if answer != len(log):
        return wrong(
            "3",
            f"{answer} is not what the loop made: count the list too, and a new watch each time "
            "one ends (when does the last one start?)",
        )
    return correct("3", f"{len(log)} requests: one list, then one watch every 2 s")
