"""Checks for chapter 03's exercises, in its two parts.

03a, the informer: check 1 asks for a prediction (a handler stuck in a call:
what waits in its buffer, what the other handler hears) and runs the case on
the cluster; check 2 runs the learner's handler, twice and with different
counts, on a real :class:`SharedInformer` of PodTemplates that sees some deletes
while watching and misses others across a real 410 (held-back watch, etcd
compaction) and a re-list, as 03a does. 03b, the indexer and the lister: check 3 runs the
learner's function on a store the check fills itself; check 4 runs a
lister-reading loop against the cluster and counts its requests; check 5 registers the
learner's index function (Pods by node) on a running informer; check 6 runs the learner's
fixed sync beside a mutation detector.

Check 7 is 03a's exercise 3: the learner's pure function, on re-lists no cell ran (some
drawn at random), against what client-go's ``processReplacedAllInfo`` tells the informer.

Verdicts name the exercise as its notebook numbers it (checks 1, 2 and 7 are
03a's exercises 1, 2 and 3; checks 3 to 6 are 03b's exercises 1 to 4). Checks
1, 2 and 4 bring the chapter's namespace back first (after "Run All" its last
cell has deleted it); check 2 says it cannot judge on a cluster without etcd
access. A wrong answer's message says which rule it broke, never the answer: an
answer copied from what the chapter printed, or a class that holds fixed
counts, is told "wrong".
"""

from __future__ import annotations

import copy
import random
import threading
from collections.abc import Callable
from typing import Any

import kubernetes

from .. import namespaces, store
from ..cluster.info import describe
from ..etcd import EtcdClient
from ..held_watch import HeldListWatch
from ..informer import SharedInformer, wait_for_cache_sync
from ..lister import MutationDetector
from ..listwatch import ListWatch
from ..request_log import RequestLog
from ..store import DeletedFinalStateUnknown, Indexer
from ..waiting import wait_for
from . import CannotCheck, Verdict, correct, not_attempted, wrong

GUARD_SECONDS = 15.0
"""How long a check waits for something that should take well under a second."""


def _object(name: str, namespace: str = "demo", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def _names(objs: list[Any]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objs]


# --- check 1 (03a, exercise 1): predict a stuck handler's buffer --------------------------


EXERCISE_1_LABEL = "exercise=ch03-1"


def _stuck_handler_drill(api: kubernetes.client.ApiClient, namespace: str) -> tuple[int, int]:
    """Three changes to one ConfigMap while one of two handlers is stuck in a call.

    Returns (notifications waiting in the stuck handler's buffer, changes the
    other handler heard), measured on a real informer once the other handler has
    heard all three.
    """
    core = kubernetes.client.CoreV1Api(api)
    core.delete_collection_namespaced_config_map(namespace, label_selector=EXERCISE_1_LABEL)
    gate, waiting = threading.Event(), threading.Event()
    gate.set()
    heard: list[str] = []
    changed = threading.Condition()

    def stuck(*_: Any) -> None:
        if not gate.is_set():
            waiting.set()
            gate.wait(GUARD_SECONDS * 4)

    def other(*_: Any) -> None:
        with changed:
            heard.append("heard")
            changed.notify_all()

    path = f"/api/v1/namespaces/{namespace}/configmaps"
    lw = ListWatch(api, path, label_selector=EXERCISE_1_LABEL)
    informer = SharedInformer(lw, name="exercise-1")
    stuck_registration = informer.add_event_handler(on_add=stuck, on_update=stuck)
    informer.add_event_handler(on_add=other, on_update=other)
    metadata = {"name": "exercise-1", "labels": dict([EXERCISE_1_LABEL.split("=")])}
    try:
        with informer:
            try:
                assert wait_for_cache_sync(informer, timeout=GUARD_SECONDS), "no sync"
                gate.clear()
                core.create_namespaced_config_map(namespace, {"metadata": metadata})
                for step in ("one", "two"):
                    body = {"data": {"step": step}}
                    core.patch_namespaced_config_map("exercise-1", namespace, body)
                assert waiting.wait(GUARD_SECONDS), "the stuck handler was never called"
                with changed:
                    assert changed.wait_for(lambda: len(heard) == 3, GUARD_SECONDS), "no 3 events"
                return stuck_registration.pending(), len(heard)
            finally:
                gate.set()  # before the informer stops: its thread must leave the call
    finally:
        core.delete_collection_namespaced_config_map(namespace, label_selector=EXERCISE_1_LABEL)


def check_1(answer: Any, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """``answer`` = (waiting in the stuck handler's buffer, heard by the other handler)."""
    if answer is None:
        return not_attempted("1", "set answer_1 to a pair of numbers, (waiting, heard)")
    if (
        not isinstance(answer, tuple | list)
        or len(answer) != 2
        or not all(isinstance(n, int) for n in answer)
    ):
        return wrong("1", f"{answer!r} is not a pair of whole numbers like (1, 2)")
    namespaces.ensure_namespace(api, namespace)
    measured = _stuck_handler_drill(api, namespace)
    waiting, heard = answer
    if heard != measured[1]:
        return wrong(
            "1",
            f"the other handler did not hear {heard}: it has a thread and a buffer of its "
            "own, so nothing the stuck one does holds it back; how many changes were made?",
        )
    if waiting == measured[0] + 1:
        return wrong("1", "the change the stuck handler is in the middle of has left its buffer")
    if waiting < measured[0]:
        return wrong(
            "1",
            f"{waiting} waiting is too few: nothing is merged, each change to the same object "
            "is a notification of its own, and the informer never waits for a handler",
        )
    if waiting != measured[0]:
        return wrong(
            "1",
            f"{waiting} waiting is too many: one change is in the stuck call, and the informer "
            "hands each handler every change once",
        )
    return correct(
        "1",
        f"{tuple(measured)}: one change in the stuck call, {measured[0]} in its buffer, "
        f"and the other handler heard all {measured[1]}",
    )


# --- check 2 (03a, exercise 2): a handler that counts deletes, tombstones included --------


EXERCISE_3_LABEL = "exercise=ch03-3"

DRILLS_2 = ((1, 2), (2, 1))
"""(deletes seen live, deletes missed across a re-list) in each of check 2's runs: two runs
with different counts, so a class that only holds the right numbers cannot pass both."""


def _missed_delete_drill(
    learner: Any,
    api: kubernetes.client.ApiClient,
    namespace: str,
    etcd: EtcdClient,
    live: int,
    missed: int,
) -> list[Any]:
    """Run ``learner`` on a real PodTemplate informer: ``live`` deletes seen, ``missed`` missed.

    The missed deletes happen while the informer's next watch is held back and
    etcd is compacted, so the watch meets a real 410, the reflector re-lists,
    and the informer delivers a tombstone for each. Returns the deletes our own
    handler saw.
    """
    core = kubernetes.client.CoreV1Api(api)
    core.delete_collection_namespaced_pod_template(namespace, label_selector=EXERCISE_3_LABEL)
    container = {"name": "app", "image": "nginx"}
    names = [f"exercise-3-{n}" for n in range(live + missed + 1)]
    for name in names:
        metadata = {"name": name, "labels": dict([EXERCISE_3_LABEL.split("=")])}
        body = {"metadata": metadata, "template": {"spec": {"containers": [container]}}}
        core.create_namespaced_pod_template(namespace, body)
    ours: list[Any] = []
    seen = threading.Condition()

    def on_delete(obj: Any) -> None:
        with seen:
            ours.append(obj)
            seen.notify_all()

    def wait_for_deletes(count: int, what: str) -> None:
        with seen:
            assert seen.wait_for(lambda: len(ours) == count, GUARD_SECONDS), what

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
                for name in names[:live]:
                    core.delete_namespaced_pod_template(name, namespace)
                wait_for_deletes(live, "the live deletes never arrived")
                held.hold(cut=True)
                assert held.wait_until_held(GUARD_SECONDS), "the next watch never came"
                for name in names[live:-1]:
                    core.delete_namespaced_pod_template(name, namespace)
                # One more write, so the compaction passes the version the watch resumes
                # from (a 410), not only the delete's predecessor (etcd answers that with
                # a 500 "PrevKv=nil"; the reflector re-lists too, but logs an error).
                patch = {"metadata": {"labels": {"touched": "yes"}}}
                core.patch_namespaced_pod_template(names[-1], namespace, patch)
                etcd.compact(etcd.revision())
                held.release()
                wait_for_deletes(live + missed, "the missed deletes never arrived")
                registration.wait_until_idle(GUARD_SECONDS)
            finally:
                held.release()  # before the informer stops: it must not wait at the gate
    finally:
        core.delete_collection_namespaced_pod_template(namespace, label_selector=EXERCISE_3_LABEL)
    tombstones = sum(isinstance(obj, DeletedFinalStateUnknown) for obj in ours)
    assert tombstones == missed, f"the drill made {tombstones} tombstones, not {missed}"
    return ours


def _judge_2(counter: Any, live: int, missed: int) -> str | None:
    """Why ``counter``'s counts after a drill are wrong, or None. Says which rule it broke,
    never the numbers it should have had."""
    deletes = getattr(counter, "deletes", None)
    tombstones = getattr(counter, "tombstones", None)
    if (deletes, tombstones) == (live, 0):
        return "it counted only the deletes that came live; did on_delete fail on a tombstone?"
    if deletes != live + missed:
        return (
            f"deletes is {deletes!r}, not the number of on_delete calls: count every call, "
            "an object or a tombstone"
        )
    if tombstones != missed:
        return (
            f"tombstones is {tombstones!r}, not the number of DeletedFinalStateUnknown "
            "objects on_delete received"
        )
    return None


def check_2(
    delete_counter: type | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``DeleteCounter()`` counts ``deletes`` and, among them, ``tombstones``, in two runs."""
    if delete_counter is None:
        return not_attempted("2", "set DeleteCounter to your class")
    etcd_url = describe().etcd_url
    if etcd_url is None:
        return CannotCheck(
            "2",
            "not attempted yet",
            "can't check this on a cluster without etcd access (a real tombstone needs an etcd "
            "compaction); compare your class with solutions/ch03.py",
        )
    namespaces.ensure_namespace(api, namespace)
    counted = 0
    for run, (live, missed) in enumerate(DRILLS_2, start=1):
        learner = delete_counter()
        _missed_delete_drill(learner, api, namespace, EtcdClient(etcd_url), live, missed)
        problem = _judge_2(learner, live, missed)
        if problem is not None:
            return wrong("2", f"in run {run} of {len(DRILLS_2)}, {problem}")
        counted += live + missed
    return correct(
        "2",
        f"{len(DRILLS_2)} runs, {counted} deletes counted, the tombstones among them too",
    )


# --- check 7 (03a, exercise 3): what a re-list tells the informer ---------------------------


def _fruit(name: str, version: int, uid: str = "") -> dict[str, Any]:
    metadata = {"name": name, "namespace": "shop", "resourceVersion": str(version)}
    return {"metadata": {**metadata, "uid": uid or f"uid-{name}"}}


def _keyed(*objects: dict[str, Any]) -> dict[str, Any]:
    return {store.meta_namespace_key(obj): obj for obj in objects}


def _relists(rng: random.Random) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """(what happened, the cache before, the new list): re-lists the chapter never ran, then
    three drawn at random (different on every run)."""
    apple, cherry, fig = _fruit("apple", 11), _fruit("cherry", 12), _fruit("fig", 13)
    cases = [
        ("a first list", {}, [_fruit("apple", 11), _fruit("banana", 14)]),
        (
            "a re-list after a missed delete, a create and a change",
            _keyed(apple, cherry, fig),
            [_fruit("apple", 11), _fruit("banana", 20), _fruit("cherry", 21)],
        ),
        (
            "a re-list after apple was deleted and created again",
            _keyed(apple, cherry),
            [_fruit("apple", 30, uid="uid-apple-2"), _fruit("cherry", 12)],
        ),
        ("a re-list that finds nothing", _keyed(apple, cherry), []),
    ]
    names = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "lime"]
    for n in range(3):
        cached = {name: _fruit(name, rng.randint(1, 50)) for name in rng.sample(names, 5)}
        listed = []
        for name in sorted(rng.sample(names, 5)):
            old = cached.get(name)
            if old is not None and rng.random() < 0.5:
                listed.append(dict(old))
            else:
                listed.append(_fruit(name, rng.randint(51, 99)))
        cases.append((f"random re-list {n + 1}", _keyed(*cached.values()), listed))
    return cases


def _replace_all_expected(cache_before: dict[str, Any], listed: list[Any]) -> list[tuple]:
    """client-go v0.36.3 ``processReplacedAllInfo``, which the chapter's ``_replace_all``
    follows: a tombstone for each cached key the list lacks, then, in list order, an update
    (changed or not) for each listed key that was cached and an add for the others:
    https://github.com/kubernetes/client-go/blob/v0.36.3/tools/cache/controller.go#L756-L800
    """
    keys = [store.meta_namespace_key(obj) for obj in listed]
    gone = [key for key in cache_before if key not in set(keys)]
    told: list[tuple] = [("delete", DeletedFinalStateUnknown(k, cache_before[k])) for k in gone]
    for key, obj in zip(keys, listed, strict=True):
        told.append(("update", cache_before[key], obj) if key in cache_before else ("add", obj))
    return told


def _judge_7(answer: Any, cache_before: dict[str, Any], listed: list[Any]) -> str | None:
    """Which rule ``answer`` broke for this re-list, or None. Names the rule, not the answer."""
    shapes = {"delete": 2, "update": 3, "add": 2}
    if not isinstance(answer, list) or not all(
        isinstance(n, tuple) and n and n[0] in shapes and len(n) == shapes[n[0]] for n in answer
    ):
        return (
            f"it returned {answer!r:.80}: return a list of tuples, each ('delete', tombstone), "
            "('update', old, new) or ('add', obj)"
        )
    kinds = [n[0] for n in answer]
    if "delete" in kinds[next((i for i, k in enumerate(kinds) if k != "delete"), len(kinds)) :]:
        return "a delete came after an update or an add: every tombstone comes first"
    listed_keys = [store.meta_namespace_key(obj) for obj in listed]
    deleted: list[str] = []
    for _, tombstone in (n for n in answer if n[0] == "delete"):
        if not isinstance(tombstone, DeletedFinalStateUnknown):
            return (
                "a delete carries no DeletedFinalStateUnknown: nobody saw the object's final "
                "state, so handlers get the key and the last state the cache had"
            )
        key = tombstone.key
        if key in listed_keys:
            return (
                f"{key} is in the list, yet it was deleted: a key listed again is an update, "
                "whatever changed (even its uid)"
            )
        if key not in cache_before:
            return f"it deleted {key}, which was not in the cache"
        if tombstone.obj != cache_before[key]:
            return f"the tombstone of {key} does not carry the last state the cache had"
        deleted.append(key)
    if len(deleted) != len(set(deleted)):
        return "a key got two tombstones"
    missing = [key for key in cache_before if key not in listed_keys and key not in deleted]
    if missing:
        return f"{missing[0]} was cached and is not in the list, and nothing was said of it"
    rest = [n for n in answer if n[0] != "delete"]
    try:
        told_keys = [store.meta_namespace_key(n[2] if n[0] == "update" else n[1]) for n in rest]
    except (ValueError, TypeError, AttributeError):
        return "an update or an add carries something that is not an API object"
    for key, obj in zip(listed_keys, listed, strict=True):
        if key in told_keys:
            continue
        old = cache_before.get(key)
        if old is not None and old == obj:
            return (
                f"{key} was listed again unchanged, and the function left it out: the informer "
                "hears of it as an update of the same version (only _distribute holds it back, "
                "from handlers whose resync is not due)"
            )
        return f"{key} is in the list, and the function said nothing of it"
    if len(told_keys) != len(listed_keys) or set(told_keys) != set(listed_keys):
        return "it told of an object more than once, or of one that is not in the list"
    for n, key in zip(rest, told_keys, strict=True):
        if n[0] == "add" and key in cache_before:
            return f"{key} was cached, so the list brings an update, not an add"
        if n[0] == "update" and key not in cache_before:
            return f"{key} was not cached, so the list brings an add, not an update"
    if told_keys != listed_keys:
        return "the updates and adds are not in the order of the list"
    for n, obj in zip(rest, listed, strict=True):
        key = store.meta_namespace_key(obj)
        if n[0] == "update" and (n[1] != cache_before[key] or n[2] != obj):
            return f"the update of {key} must carry (old, new): the cached, then the listed object"
        if n[0] == "add" and n[1] != obj:
            return f"the add of {key} must carry the listed object"
    return None


def check_7(replace_all_notifications: Callable[[dict, list], Any] | None) -> Verdict:
    """``replace_all_notifications(cache_before, listed)``: what a re-list tells the informer."""
    if replace_all_notifications is None:
        return not_attempted("3", "set replace_all_notifications to your function")
    cases = _relists(random.Random())
    for what, cache_before, listed in cases:
        expected = _replace_all_expected(cache_before, listed)
        try:
            answer = replace_all_notifications(copy.deepcopy(cache_before), copy.deepcopy(listed))
        except Exception as exc:
            return wrong("3", f"for {what} it raised {type(exc).__name__}: {exc}")
        problem = _judge_7(answer, cache_before, listed)
        if problem is None and _sorted_deletes(answer) != _sorted_deletes(expected):
            problem = "it differs from what the informer is told"  # a guard: no rule caught it
        if problem is not None:
            return wrong("3", f"for {what}, {problem}")
    return correct(
        "3",
        f"{len(cases)} re-lists: tombstones first, then updates and adds in list order, "
        "unchanged objects included",
    )


def _sorted_deletes(told: list[tuple]) -> list[tuple]:
    """The notifications with the tombstones in key order (client-go promises no order there)."""
    deletes = sorted((n for n in told if n[0] == "delete"), key=lambda n: n[1].key)
    return deletes + [n for n in told if n[0] != "delete"]


# --- check 3 (03b, exercise 1): a lister query --------------------------------------------


def check_3(same_colour: Callable[[Any, str, str], Any] | None, lister_class: type) -> Verdict:
    """``same_colour(lister, namespace, name)``: the other names with ``name``'s colour."""
    if same_colour is None:
        return not_attempted("1", "set same_colour to your function")
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
            return wrong("1", f"for {namespace}/{name} it raised {type(exc).__name__}: {exc}")
        problem = _judge_3(store, namespace, name, answer, expected)
        if problem is not None:
            return wrong("1", f"for {namespace}/{name} {problem}")
    return correct("1", "one namespace, the object itself left out, None for a miss")


def _judge_3(
    store: Indexer, namespace: str, name: str, answer: Any, expected: list[str] | None
) -> str | None:
    """Which rule ``answer`` broke, or None; it names what is wrong, not the whole answer."""
    if expected is None:
        return None if answer is None else f"(no such ConfigMap) it returned {answer!r}, not None"
    if not isinstance(answer, list):
        return f"it returned {answer!r}: return a sorted list of names"
    if name in answer:
        return f"the list has {name} itself; the exercise asks for the *other* ConfigMaps"
    where = {obj["metadata"]["name"]: obj["metadata"]["namespace"] for obj in store.list()}
    elsewhere = [n for n in answer if where.get(n) not in (None, namespace)]
    if elsewhere:
        return f"the list has {elsewhere[0]}, which is in another namespace"
    if set(answer) - set(expected):
        return f"the list has {sorted(set(answer) - set(expected))[0]}, of another colour"
    if set(expected) - set(answer):
        return "the list leaves out a ConfigMap of the same colour in the same namespace"
    if answer != sorted(answer):
        return "the names are not sorted"
    return None


# --- check 4 (03b, exercise 2): the requests of a loop that reads through a lister --------


def check_4(answer: int | None, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """Requests of: an informer; for five ConfigMaps, a lister read and a patch."""
    if answer is None:
        return not_attempted("2", "set answer_2 to a number of requests")
    namespaces.ensure_namespace(api, namespace)
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
                return wrong("2", "the check's informer did not sync; is the cluster up?")
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
        return wrong("2", f"{answer} is not what the loop made; count the informer's own too")
    return correct("2", f"{len(log)}: one LIST, one WATCH, five PATCHes, and no reads")


def _notify(cond: threading.Condition) -> None:
    with cond:
        cond.notify_all()


# --- check 5 (03b, exercise 3): an index function, registered on a running informer --------


EXERCISE_5_LABEL = "exercise=ch03-5"
NOWHERE = {"exercise-ch03-5": "no-such-node"}  # a nodeSelector no node matches: never scheduled


def _pod(name: str, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    container = {"name": "web", "image": "nginx", "imagePullPolicy": "IfNotPresent"}
    spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"metadata": {"name": name, "labels": {"exercise": "ch03-5"}}, "spec": spec}


def check_5(
    by_node: Callable[[Any], Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``by_node(pod)``: an index function filing each Pod under its node's name.

    The check makes five Pods (one the scheduler cannot place), registers the
    function on a running informer of them, and compares each value's Pods with
    what the API server lists for ``fieldSelector=spec.nodeName=<node>``; then it
    adds a Pod, and compares again once the scheduler has placed it.
    """
    if by_node is None:
        return not_attempted("3", "set by_node to your index function")
    namespaces.ensure_namespace(api, namespace)
    core = kubernetes.client.CoreV1Api(api)
    core.delete_collection_namespaced_pod(
        namespace, label_selector=EXERCISE_5_LABEL, grace_period_seconds=0
    )
    wait_for(
        core.list_namespaced_pod,
        lambda pods: not pods,
        what="the last run's Pods gone",
        timeout=GUARD_SECONDS,
        namespace=namespace,
        label_selector=EXERCISE_5_LABEL,
    )
    for n in range(4):
        core.create_namespaced_pod(namespace, _pod(f"exercise-5-{n}"))
    core.create_namespaced_pod(namespace, _pod("exercise-5-nowhere", NOWHERE))
    _wait_placed(core, namespace, 4)
    problems: list[str] = []
    informer = SharedInformer(
        ListWatch(api, f"/api/v1/namespaces/{namespace}/pods", label_selector=EXERCISE_5_LABEL),
        name="exercise-5",
    )
    changed = threading.Condition()
    informer.add_event_handler(on_update=lambda old, new: _notify(changed))
    try:
        with informer:
            if not wait_for_cache_sync(informer, timeout=GUARD_SECONDS):
                return wrong("3", "the check's informer did not sync; is the cluster up?")
            informer.add_indexers({"byNode": _guarded(by_node, problems)})  # while it runs
            problem = problems[0] if problems else _judge_5(informer.indexer, core, namespace)
            if problem is not None:
                return wrong("3", problem)
            core.create_namespaced_pod(namespace, _pod("exercise-5-late"))
            late = f"{namespace}/exercise-5-late"

            def placed_in_cache() -> bool:
                pod = informer.indexer.get_by_key(late)
                return pod is not None and bool(pod["spec"].get("nodeName"))

            with changed:
                if not changed.wait_for(placed_in_cache, GUARD_SECONDS * 2):
                    return CannotCheck(
                        "3",
                        "not attempted yet",
                        "its last Pod was not placed on a node in 30 s: is the scheduler up?",
                    )
            problem = problems[0] if problems else _judge_5(informer.indexer, core, namespace)
            if problem is not None:
                return wrong("3", f"after a new Pod was placed, {problem}")
    finally:
        core.delete_collection_namespaced_pod(
            namespace, label_selector=EXERCISE_5_LABEL, grace_period_seconds=0
        )
    return correct(
        "3",
        "each node's Pods as the API server lists them, the unplaced Pod under "
        "no node, and a Pod placed after the index was added filed under its node",
    )


def _wait_placed(core: kubernetes.client.CoreV1Api, namespace: str, count: int) -> None:
    def placed(pods: dict[str, Any]) -> bool:
        return sum(1 for pod in pods.values() if pod["spec"].get("nodeName")) >= count

    wait_for(
        core.list_namespaced_pod,
        placed,
        what=f"{count} Pods placed on nodes",
        timeout=GUARD_SECONDS * 2,
        namespace=namespace,
        label_selector=EXERCISE_5_LABEL,
    )


def _guarded(index_func: Callable[[Any], Any], problems: list[str]) -> Callable[[Any], list[str]]:
    """The learner's function, as the informer calls it: what it did wrong goes to ``problems``
    (the informer's thread must not die of it), and the Pod is then filed under nothing."""

    def guarded(pod: Any) -> list[str]:
        name = pod["metadata"]["name"]
        where = f"on {pod['spec']['nodeName']}" if pod["spec"].get("nodeName") else "on no node"
        try:
            values = index_func(pod)
        except Exception as exc:
            problems.append(f"for Pod {name} ({where}) it raised {type(exc).__name__}: {exc}")
            return []
        if isinstance(values, str) or not isinstance(values, list | tuple | set):
            problems.append(
                f"for Pod {name} it returned {values!r}: an index function returns a list of values"
            )
            return []
        if not all(isinstance(value, str) for value in values):
            problems.append(f"for Pod {name} it returned {values!r}: each value is a string")
            return []
        if not pod["spec"].get("nodeName") and values:
            problems.append(
                f"Pod {name}, on no node yet, is filed under {list(values)!r}; a Pod "
                "the scheduler has not placed belongs under no value"
            )
        return list(values)

    return guarded


def _judge_5(indexer: Indexer, core: kubernetes.client.CoreV1Api, namespace: str) -> str | None:
    """Whether each index value holds exactly the Pods the API server lists on that node."""
    placed = {
        pod.spec.node_name
        for pod in core.list_namespaced_pod(namespace, label_selector=EXERCISE_5_LABEL).items
        if pod.spec.node_name
    }
    values = indexer.list_index_func_values("byNode")
    if not values:
        return f"the index is empty, yet the API server has these Pods on {len(placed)} node(s)"
    strangers = [value for value in values if value not in placed]
    if strangers:
        return (
            f"the index has the value {strangers[0]!r}, which is not a node any of these "
            "Pods runs on"
        )
    for node in sorted(placed):
        listed = core.list_namespaced_pod(
            namespace, label_selector=EXERCISE_5_LABEL, field_selector=f"spec.nodeName={node}"
        )
        expected = sorted(pod.metadata.name for pod in listed.items)
        indexed = sorted(pod["metadata"]["name"] for pod in indexer.by_index("byNode", node))
        if indexed != expected:
            return f"under {node} the index has {indexed}, the API server lists {expected}"
    return None


# --- check 6 (03b, exercise 4): sync_colour, fixed ------------------------------------------


EXERCISE_6_NAME = "exercise-colour"


def check_6(
    sync_colour: Callable[..., Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``sync_colour(lister, core, namespace, name, want, lose_the_write=False)``, fixed.

    On a ConfigMap of its own, with a :class:`MutationDetector` on the informer:
    a sync whose write is lost, the retry, and a third sync with nothing to do.
    """
    if sync_colour is None:
        return not_attempted("4", "set fixed_sync_colour to your function")
    namespaces.ensure_namespace(api, namespace)
    core = kubernetes.client.CoreV1Api(api)
    name = EXERCISE_6_NAME
    labels = {"exercise": "ch03-6", "colour": "red"}
    try:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": labels}})
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:  # left over from an earlier check: make it red again
            raise
        core.patch_namespaced_config_map(name, namespace, {"metadata": {"labels": labels}})
    learner_api = kubernetes.client.ApiClient(api.configuration)  # its requests counted alone
    learner_core = kubernetes.client.CoreV1Api(learner_api)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    informer = SharedInformer(
        ListWatch(api, path, label_selector="exercise=ch03-6"), name="exercise-6"
    )
    detector = MutationDetector()
    changed = threading.Condition()
    informer.add_event_handler(on_update=lambda old, new: _notify(changed))
    lister = informer.lister().namespace(namespace)

    def colour_in_cache() -> str:
        return lister.get(name)["metadata"]["labels"].get("colour", "")

    def on_server() -> str:
        return core.read_namespaced_config_map(name, namespace).metadata.labels.get("colour", "")

    try:
        with informer:
            registration = informer.add_event_handler(detector)
            if not wait_for_cache_sync(informer, registration, timeout=GUARD_SECONDS):
                return wrong("4", "the check's informer did not sync; is the cluster up?")
            with changed:  # the patch to red, if there was one, is in the cache
                changed.wait_for(lambda: colour_in_cache() == "red", GUARD_SECONDS)
            try:
                said = sync_colour(
                    lister, learner_core, namespace, name, "green", lose_the_write=True
                )
            except ConnectionError:
                pass
            else:
                return wrong(
                    "4",
                    f"told to lose the write, it returned {said!r}: raise "
                    "ConnectionError, as cell 28's does",
                )
            if altered := detector.changed():
                return wrong("4", f"the sync whose write was lost changed the cache: {altered[0]}")
            said = sync_colour(lister, learner_core, namespace, name, "green")
            if on_server() != "green":
                return wrong(
                    "4",
                    f"the retry returned {said!r}, and the API server still has "
                    f"colour {on_server()!r}",
                )
            with changed:
                changed.wait_for(lambda: colour_in_cache() == "green", GUARD_SECONDS)
            if altered := detector.changed():
                return wrong("4", f"the retry changed the cache: {altered[0]}")
            with RequestLog(learner_api) as log:
                said = sync_colour(lister, learner_core, namespace, name, "green")
            if len(log) or said != "nothing to do":
                return wrong(
                    "4",
                    f"with the ConfigMap green already, it returned {said!r} "
                    f"after {len(log)} request(s): compare first, and write only what "
                    "differs",
                )
            if altered := detector.changed():
                return wrong("4", f"a sync with nothing to do changed the cache: {altered[0]}")
    finally:
        learner_api.close()
    return correct(
        "4",
        "the lost write left the cache alone, the retry wrote green, a third "
        "sync found nothing to do, and the detector saw no change",
    )
