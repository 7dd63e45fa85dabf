"""Checks for chapter 03's exercises (the informer, the indexer and the lister).

Exercises 1 and 2 run the learner's function on a store the check fills
itself. Exercise 3 runs the learner's handler on a real :class:`SharedInformer` of
PodTemplates that sees one delete while watching and misses another across a
real 410 (held-back watch, etcd compaction) and a re-list, as chapter 03 does.
Exercise 4 runs a lister-reading loop against the cluster and counts its
requests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import kubernetes

from ..cluster.info import describe
from ..etcd import EtcdClient
from ..held_watch import HeldListWatch
from ..informer import SharedInformer, wait_for_cache_sync
from ..listwatch import ListWatch
from ..request_log import RequestLog
from ..store import DeletedFinalStateUnknown, Indexer
from . import Verdict, correct, not_attempted, wrong

GUARD_SECONDS = 15.0
"""How long a check waits for something that should take well under a second."""


def _object(name: str, namespace: str = "demo", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def _names(objs: list[Any]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objs]


# --- exercise 1: an index function ---------------------------------------------------


def check_1(app_index: Callable[[Any], list[str]] | None) -> Verdict:
    """``app_index(obj)`` indexes by the ``app`` label; unlabelled objects are not indexed."""
    if app_index is None:
        return not_attempted("1", "set app_index to your index function")
    store = Indexer({"app": app_index})
    web = _object("web-1", app="web")
    try:
        store.add(web)
        store.add(_object("web-2", app="web"))
        store.add(_object("db-1", app="db"))
        store.add(_object("plain"))
        values = store.list_index_func_values("app")
        if values != ["db", "web"]:
            return wrong("1", f"the index holds the values {values}, not ['db', 'web']")
        if _names(store.by_index("app", "web")) != ["web-1", "web-2"]:
            return wrong("1", "by_index('app', 'web') does not find web-1 and web-2")
        store.update(_object("web-1", app="db"))  # relabelled: it must move
        moved = _names(store.by_index("app", "db"))
    except Exception as exc:  # the learner's function raised: say which and why
        return wrong("1", f"it raised {type(exc).__name__}: {exc} (an object may have no labels)")
    if moved != ["db-1", "web-1"]:
        return wrong("1", f"after web-1 was relabelled app=db, the db value holds {moved}")
    return correct("1", "two values, the unlabelled object left out, and a relabel moves the key")


# --- exercise 2: a lister query -------------------------------------------------------


def check_2(same_colour: Callable[[Any, str, str], Any] | None, lister_class: type) -> Verdict:
    """``same_colour(lister, namespace, name)``: the other names with ``name``'s colour."""
    if same_colour is None:
        return not_attempted("2", "set same_colour to your function")
    store = Indexer({"namespace": lambda obj: [obj["metadata"].get("namespace") or ""]})
    for name, namespace, colour in [
        ("apple", "a", "red"),
        ("cherry", "a", "red"),
        ("strawberry", "b", "red"),
        ("banana", "a", "yellow"),
        ("grape", "a", "green"),
        ("lime", "a", "green"),
        ("plum", "a", "purple"),
    ]:
        store.add(_object(name, namespace, colour=colour))
    lister = lister_class(store, "configmaps", "")
    cases = [
        (("a", "apple"), ["cherry"]),
        (("a", "grape"), ["lime"]),
        (("a", "plum"), []),
        (("b", "strawberry"), []),
        (("a", "elderberry"), None),
    ]
    for (namespace, name), expected in cases:
        try:
            answer = same_colour(lister, namespace, name)
        except Exception as exc:
            return wrong("2", f"for {namespace}/{name} it raised {type(exc).__name__}: {exc}")
        if answer != expected:
            return wrong("2", f"for {namespace}/{name} it returned {answer!r}, not {expected!r}")
    return correct("2", "one namespace, the object itself left out, None for a miss")


# --- exercise 3: a handler that counts deletes, tombstones included ---------------------


EXERCISE_3_LABEL = "exercise=ch03-3"


def _missed_delete_drill(
    learner: Any, api: kubernetes.client.ApiClient, namespace: str, etcd: EtcdClient
) -> list[Any]:
    """Run ``learner`` on a real PodTemplate informer: one delete seen live, one missed.

    The second delete happens while the informer's next watch is held back and
    etcd is compacted, so the watch meets a real 410, the reflector re-lists,
    and the informer delivers a tombstone. Returns the deletes our own handler saw.
    """
    core = kubernetes.client.CoreV1Api(api)
    core.delete_collection_namespaced_pod_template(namespace, label_selector=EXERCISE_3_LABEL)
    container = {"name": "app", "image": "nginx"}
    for name in ("exercise-3-a", "exercise-3-b", "exercise-3-c"):
        metadata = {"name": name, "labels": dict([EXERCISE_3_LABEL.split("=")])}
        body = {"metadata": metadata, "template": {"spec": {"containers": [container]}}}
        core.create_namespaced_pod_template(namespace, body)
    ours: list[Any] = []
    seen = threading.Condition()

    def on_delete(obj: Any) -> None:
        with seen:
            ours.append(obj)
            seen.notify_all()

    held = HeldListWatch(
        api, f"/api/v1/namespaces/{namespace}/podtemplates", label_selector=EXERCISE_3_LABEL
    )
    informer = SharedInformer(held, name="exercise-3", min_watch_timeout=1)
    registration = informer.add_event_handler(learner)
    informer.add_event_handler(on_delete=on_delete)
    try:
        with informer:
            try:
                assert wait_for_cache_sync(informer, timeout=GUARD_SECONDS), "no sync"
                core.delete_namespaced_pod_template("exercise-3-a", namespace)
                with seen:
                    assert seen.wait_for(lambda: len(ours) == 1, GUARD_SECONDS), "no live delete"
                held.hold()
                assert held.wait_until_held(GUARD_SECONDS), "the next watch never came"
                core.delete_namespaced_pod_template("exercise-3-b", namespace)
                etcd.compact(etcd.revision())
                held.release()
                with seen:
                    assert seen.wait_for(lambda: len(ours) == 2, GUARD_SECONDS), "no missed delete"
                registration.wait_until_idle(GUARD_SECONDS)
            finally:
                held.release()  # before the informer stops: it must not wait at the gate
    finally:
        core.delete_collection_namespaced_pod_template(namespace, label_selector=EXERCISE_3_LABEL)
    return ours


def check_3(
    delete_counter: type | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``DeleteCounter()`` counts ``deletes`` and, among them, ``tombstones``."""
    if delete_counter is None:
        return not_attempted("3", "set DeleteCounter to your class")
    etcd_url = describe().etcd_url
    if etcd_url is None:
        return not_attempted(
            "3",
            "this check makes a real tombstone by compacting etcd, which only the local "
            "control plane lets us reach; compare your class with solutions/ch03.py",
        )
    learner = delete_counter()
    ours = _missed_delete_drill(learner, api, namespace, EtcdClient(etcd_url))
    assert isinstance(ours[1], DeletedFinalStateUnknown), "the drill made no tombstone"
    deletes = getattr(learner, "deletes", None)
    tombstones = getattr(learner, "tombstones", None)
    if (deletes, tombstones) == (1, 0):
        return wrong("3", "it counted only the live delete; did on_delete fail on a tombstone?")
    if deletes != 2:
        return wrong("3", f"deletes is {deletes!r}: one delete came live, one as a tombstone")
    if tombstones != 1:
        return wrong("3", f"tombstones is {tombstones!r}, but one delete came as a tombstone")
    return correct("3", "one delete seen live, one missed and delivered as a tombstone")


# --- exercise 4: the requests of a loop that reads through a lister ----------------------


def check_4(answer: int | None, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """Requests of: an informer; for five ConfigMaps, a lister read and a patch."""
    if answer is None:
        return not_attempted("4", "set answer_4 to a number of requests")
    core = kubernetes.client.CoreV1Api(api)
    names = [f"exercise-4-{n}" for n in range(5)]
    for name in names:
        body = {"metadata": {"name": name, "labels": {"exercise": "ch03-4"}}}
        try:
            core.create_namespaced_config_map(namespace, body)
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:  # left over from an earlier check: fine
                raise
    loop_api = kubernetes.client.ApiClient(api.configuration)  # counted alone
    loop_core = kubernetes.client.CoreV1Api(loop_api)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    informer = SharedInformer(
        ListWatch(loop_api, path, label_selector="exercise=ch03-4"), name="exercise-4"
    )
    changed = threading.Condition()
    informer.add_event_handler(on_update=lambda old, new: _notify(changed))
    lister = informer.lister().namespace(namespace)
    marker = str(id(informer))

    def all_visited() -> bool:
        return all(lister.get(n)["metadata"]["labels"].get("visited") == marker for n in names)

    try:
        with RequestLog(loop_api) as log, informer:
            if not wait_for_cache_sync(informer, timeout=GUARD_SECONDS):
                return wrong("4", "the check's informer did not sync; is the cluster up?")
            for name in names:
                lister.get(name)
                patch = {"metadata": {"labels": {"visited": marker}}}
                loop_core.patch_namespaced_config_map(name, namespace, patch)
            # Seeing the patches means the watch is open, so its request is in the log.
            with changed:
                changed.wait_for(all_visited, GUARD_SECONDS)
    finally:
        loop_api.close()
    if answer != len(log):
        return wrong("4", f"{answer} is not what the loop made; count the informer's own too")
    return correct("4", f"{len(log)}: one LIST, one WATCH, five PATCHes, and no reads")


def _notify(cond: threading.Condition) -> None:
    with cond:
        cond.notify_all()
