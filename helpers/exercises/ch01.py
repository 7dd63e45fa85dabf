"""Checks for chapter 01's exercises (list and watch by hand).

Each check runs against the real cluster: exercise 1 runs the learner's watch
generator, exercise 2 makes a resourceVersion expire for real (etcd compaction
of PodTemplates, which have no watch cache on the course's clusters) and sends
the two LISTs the learner predicts, and exercise 3 counts the requests of a
real list+watch loop. Each check brings the chapter's namespace back first
(after "Run All" its last cell deleted it). On a cluster without etcd access
exercise 2 cannot make a version expire, and its check says so instead of
judging.

A wrong answer is told why, never what is right: exercise 1 watches a
ConfigMap whose name and number of changes are new on every run, so a
generator that yields remembered pairs does not pass; exercise 2 asks about
LISTs the chapter does not show, so its printed 410 is not the answer.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import namespaces
from ..cluster.info import describe
from ..etcd import EtcdClient
from ..request_log import RequestLog
from . import CannotCheck, Verdict, correct, not_attempted, wrong

WATCH_DEADLINE_SECONDS = 15.0


def _configmaps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def _changes(api: kubernetes.client.ApiClient, namespace: str) -> list[tuple[str, str]]:
    """Create, change (one to three times) and delete a ConfigMap; the events a watch sees."""
    core = kubernetes.client.CoreV1Api(api)
    name = core.create_namespaced_config_map(
        namespace, {"metadata": {"generateName": "exercise-w-"}}
    ).metadata.name
    changes = random.randint(1, 3)
    for n in range(changes):
        core.patch_namespaced_config_map(name, namespace, {"data": {"n": str(n)}})
    core.delete_namespaced_config_map(name, namespace)
    return [("ADDED", name), *[("MODIFIED", name)] * changes, ("DELETED", name)]


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
    expected = _changes(api, namespace)  # a new name, and a new number of changes, each run
    name = expected[0][1]

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
    pairs = [tuple(item) for item in seen if isinstance(item, tuple | list) and len(item) == 2]
    ours = [pair for pair in pairs if pair[1] == name]
    if ours != expected:
        return wrong(
            "1",
            f"the check just created, changed and deleted ConfigMap {name}; for it your "
            f"generator yielded {ours}, which is not what the server sent. Watch from the "
            "resource_version you are given, and yield one (type, name) pair for every event",
        )
    return correct(
        "1",
        f"{len(expected)} events for {name}, in order; the stream ended after "
        f"{time.monotonic() - started:.0f} s",
    )


def _expired_lists(api: kubernetes.client.ApiClient, namespace: str) -> tuple[int, int]:
    """Make a PodTemplate list's resourceVersion expire; the HTTP status of two LISTs at it.

    The first LIST leaves ``resourceVersionMatch`` out (the version is a lower
    bound); the second does too, but asks for pages of 500, which makes the
    version exact (pages must all show one moment).
    """
    core = kubernetes.client.CoreV1Api(api)
    template = {
        "metadata": {"generateName": "exercise-expiry-"},
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }
    name = core.create_namespaced_pod_template(namespace, template).metadata.name
    old = core.list_namespaced_pod_template(namespace).metadata.resource_version
    # Two writes after the list, so that the revision we compact at is newer than `old`.
    for n in range(2):
        core.patch_namespaced_pod_template(name, namespace, {"metadata": {"labels": {"n": str(n)}}})
    etcd = EtcdClient(describe().etcd_url)
    etcd.compact(etcd.revision())
    statuses = []
    for limit in (None, 500):
        try:
            core.list_namespaced_pod_template(namespace, resource_version=old, limit=limit)
        except ApiException as error:
            statuses.append(error.status)
        else:
            statuses.append(200)
    core.delete_namespaced_pod_template(name, namespace)
    return statuses[0], statuses[1]


_LIST_HINTS = (
    "(a): to a LIST without resourceVersionMatch, is a resourceVersion 'exactly this moment' "
    "or 'this moment or any later one'? Could the server answer with a later one?",
    "(b): every page of a list in pages must show the same moment; which moment can the "
    "server promise that for, when you give it a version?",
)


def check_2(
    answer: tuple[int, int] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``(a, b)``: the HTTP status of a LIST at an expired version, without and with a limit."""
    if answer is None:
        return not_attempted("2", "set answer_2 to a tuple of two status codes, such as (404, 404)")
    try:
        first, second = (int(code) for code in answer)
    except (TypeError, ValueError):
        return wrong("2", "answer_2 should be a tuple of two HTTP status codes, such as (404, 404)")
    if describe().etcd_url is None:
        return CannotCheck(
            "2",
            "not attempted yet",
            "can't check this on a cluster without etcd access (an expired version needs an "
            "etcd compaction); compare your answer with solutions/ch01.py",
        )
    namespaces.ensure_namespace(api, namespace)
    expected = _expired_lists(api, namespace)
    answers = zip(_LIST_HINTS, (first, second), expected, strict=True)
    misses = [hint for hint, given, got in answers if given != got]
    if misses:
        return wrong("2", "; ".join(misses))
    return correct(
        "2",
        f"{expected[0]} and {expected[1]}: without a limit the version is a lower bound, and "
        "the server answers with its newest state; in pages it must be exact, and is gone. "
        "Chapter 02b's reflector re-lists at its last version without a limit",
    )


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
