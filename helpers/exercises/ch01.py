"""Checks for chapter 01's exercises (list and watch by hand).

Each check runs against the real cluster. Exercise 1 runs the learner's
one-watch function three times: the changes after a version; a replay from no
version, ended by a bookmark; and an ERROR event, from a watch of Foos at version
"1", which their watch cache never had (so it works on any cluster). Exercise
2 makes a resourceVersion expire for real (etcd compaction of PodTemplates,
which have no watch cache on the course's clusters) and sends the two LISTs
the learner predicts, and exercise 3 counts the requests of a real list+watch
loop. Each check brings the chapter's namespace back first (after "Run All"
its last cell deleted it). On a cluster without etcd access exercise 2 cannot
make a version expire, and its check says so instead of judging.

A wrong answer is told why, never what is right. Exercise 1 watches a
ConfigMap whose name and number of changes are new on every run, so a
function that returns remembered pairs does not pass; and the replay's last
object is older than its first, so only a function that keeps the version of
the bookmark that ends the replay passes. Exercise 2 asks about LISTs the
chapter does not show, so its printed 410 is not the answer.
"""

from __future__ import annotations

import json
import random
import secrets
import threading
import time
from collections.abc import Callable
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


def _foos(namespace: str) -> str:
    return f"/apis/samplecontroller.k8s.io/v1alpha1/namespaces/{namespace}/foos"


def _call(function: Callable[..., Any], *args: Any) -> tuple[Any, BaseException | None, bool]:
    """Run ``function(*args)`` on a thread of its own: (its result, what it raised, whether it
    ended within the deadline)."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(function(*args))
        except BaseException as exc:  # reported to the learner, not swallowed
            failure.append(exc)

    worker = threading.Thread(target=run, name="exercise-1-watch", daemon=True)
    worker.start()
    worker.join(WATCH_DEADLINE_SECONDS)
    if worker.is_alive():
        return None, None, False
    return (result[0] if result else None), (failure[0] if failure else None), True


def _too_slow() -> Verdict:
    return wrong(
        "1",
        f"it did not end within {WATCH_DEADLINE_SECONDS:.0f} s of a short watch: did you pass "
        "timeoutSeconds to the server, and stop when the response has no more lines?",
    )


def _shape(result: Any) -> tuple[list[tuple[Any, ...]], str] | None:
    """``(changes, version)`` as the exercise asks for it, or None."""
    if not isinstance(result, tuple | list) or len(result) != 2:
        return None
    changes, version = result
    if not isinstance(version, str) or not isinstance(changes, list | tuple):
        return None
    return [tuple(change) for change in changes if isinstance(change, tuple | list)], version


def _not_older(version: str, than: str) -> bool:
    """Whether ``version`` is at least ``than`` (the course's clusters count etcd revisions)."""
    return version.isdigit() and int(version) >= int(than)


def check_1(
    watch_once: Callable[..., Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``watch_once(api, path, resource_version, timeout_seconds)`` returns ``(changes,
    version)`` and raises an exception with ``code`` 410 on an ERROR event of a 410.

    Three watches: from a version before a new ConfigMap's changes (every change, in order);
    from ``""`` (no version), where a replay's last object is not its newest and only the
    bookmark that ends the replay gives the right version; and of Foos from version ``"1"``,
    which the Foo watch cache never had (an ERROR event with a 410, on any cluster).
    """
    if watch_once is None:
        return not_attempted("1", "set watch_once to your function")
    namespaces.ensure_namespace(api, namespace)
    core = kubernetes.client.CoreV1Api(api)
    path = _configmaps(namespace)

    # 1. The changes after a version: a new name, and a new number of changes, each run.
    version = core.list_namespaced_config_map(namespace).metadata.resource_version
    expected = _changes(api, namespace)
    name = expected[0][1]
    result, failure, ended = _call(watch_once, api, path, version, 2)
    if not ended:
        return _too_slow()
    if failure is not None:
        return wrong(
            "1",
            f"it raised {type(failure).__name__}: {failure} on a watch with no ERROR in it (run "
            "your function by hand on the chapter's PATH to see where)",
        )
    shaped = _shape(result)
    if shaped is None:
        return wrong(
            "1",
            "it should return a tuple (changes, version): a list of (type, name) "
            "pairs and a resourceVersion string",
        )
    changes, _ = shaped
    if any(change and change[0] not in ("ADDED", "MODIFIED", "DELETED") for change in changes):
        return wrong(
            "1",
            "a bookmark (or an ERROR) is not a change: changes should hold only "
            "ADDED, MODIFIED and DELETED events",
        )
    ours = [change for change in changes if len(change) == 2 and change[1] == name]
    if ours != expected:
        return wrong(
            "1",
            f"the check just created, changed and deleted ConfigMap {name}; for it your "
            f"function returned {ours}, which is not what the server sent. Watch from the "
            "resource_version you are given, and keep one (type, name) pair for every change",
        )

    # 2. A replay: the object last in key order is older than the one first in key order.
    suffix = secrets.token_hex(3)
    older = core.create_namespaced_config_map(namespace, {"metadata": {"name": f"zz-{suffix}"}})
    newer = core.create_namespaced_config_map(namespace, {"metadata": {"name": f"aa-{suffix}"}})
    try:
        result, failure, ended = _call(watch_once, api, path, "", 3)
    finally:
        for made in (older, newer):
            core.delete_namespaced_config_map(made.metadata.name, namespace)
    if not ended:
        return _too_slow()
    if failure is not None:
        return wrong("1", f'from no version ("") it raised {type(failure).__name__}: {failure}')
    shaped = _shape(result)
    if shaped is None:
        return wrong("1", 'from no version ("") it did not return a tuple (changes, version)')
    changes, version = shaped
    if any(change and change[0] not in ("ADDED", "MODIFIED", "DELETED") for change in changes):
        return wrong(
            "1",
            'from no version ("") a bookmark came too: it is not a change, and '
            "changes should hold only ADDED, MODIFIED and DELETED events",
        )
    if not {("ADDED", older.metadata.name), ("ADDED", newer.metadata.name)} <= set(changes):
        return wrong(
            "1",
            'from no version ("") the server replays every ConfigMap as ADDED; yours left some out',
        )
    if not _not_older(version, newer.metadata.resource_version):
        return wrong(
            "1",
            'from no version ("") it returned a version older than an object the watch '
            "replayed: a watch from there would show that object again. A replay's versions "
            "are not in order; what marks where it ends (and did you allow bookmarks)?",
        )

    # 3. An ERROR event: Foos from version 1, which their watch cache never had.
    result, failure, ended = _call(watch_once, api, _foos(namespace), "1", 2)
    if not ended:
        return _too_slow()
    if failure is None:
        return wrong(
            "1",
            'a watch of Foos from version "1" ended with an ERROR event, and your function '
            "returned instead of raising WatchFailed(code)",
        )
    if getattr(failure, "code", None) != 410:
        return wrong(
            "1",
            f"on the ERROR event it raised {type(failure).__name__}: {failure}; it should raise "
            "WatchFailed(code), with the code of the event's Status",
        )
    return correct(
        "1",
        f"{len(expected)} changes of {name} in order; the replay's end found by its bookmark; "
        "and the watch cache's 410 raised",
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
    etcd_url = describe().etcd_url
    assert etcd_url is not None, "the check makes sure the cluster gives etcd access first"
    etcd = EtcdClient(etcd_url)
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
