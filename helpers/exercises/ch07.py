"""Checks for chapter 07's exercises (from Deployment to Pod).

Each check runs what it asks about on the cluster, in the chapter's namespace
(brought back if Run All has deleted it), and deletes what it made: exercise 1
fails two Pods of a Deployment and scales it, recorded by
:class:`helpers.chain.ChainRecorder`, and compares the counts with the
learner's prediction; exercise 2 makes one Pod of a Deployment not Ready, runs
a rolling update and compares what happened with the learner's prediction;
exercise 3 creates a Pod no scheduler takes and lets the learner's function
bind it.

An answer of the wrong shape is "wrong" at once, before anything runs. A check
that waits on the cluster says so in a line every few seconds ("still
waiting"), and one the cluster cannot finish says that, instead of a traceback.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import namespaces
from ..apierrors import explain
from ..attribution import YOU, Change, names, pod_counts, state
from ..chain import ChainRecorder
from ..errors import CourseError
from ..waiting import wait_for
from . import CannotCheck, Verdict, correct, not_attempted, wrong

TIMEOUT = 60.0
"""Seconds a check waits for the cluster in all (kind pulls the image)."""
PATIENCE = 5.0
"""Seconds between two "still waiting" lines."""

IMAGES = ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.10")


def _say(exercise: str, text: str) -> None:
    """A line while a check works (the verdict comes after)."""
    print(f"… Exercise {exercise}: {text}", flush=True)


def _deployment(name: str, replicas: int) -> dict:
    labels = {"app": name}
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "pause", "image": IMAGES[0]}]},
        },
    }
    return {"metadata": {"name": name}, "spec": spec}


def _delete(apps: kubernetes.client.AppsV1Api, name: str, namespace: str) -> None:
    try:
        apps.delete_namespaced_deployment(name, namespace)
    except ApiException as err:
        if err.status != 404:
            raise


def _mine(changes: Sequence[Change], name: str) -> list[Change]:
    """The changes of Deployment ``name`` and of what it owns (named after it)."""
    return [change for change in changes if change.name.startswith(name)]


def _kwok_only(api: kubernetes.client.ApiClient) -> bool:
    """Does kwok play every node's kubelet (so that a Pod's status is ours to write)?"""
    nodes = kubernetes.client.CoreV1Api(api).list_node().items
    return bool(nodes) and all(
        "kwok.x-k8s.io/node" in (node.metadata.annotations or {}) for node in nodes
    )


class _Unfinished(Exception):
    """The cluster did not reach what a check waited for within ``TIMEOUT``."""


def _waiting(exercise: str, wait: Callable[[float], list[Change]], what: str) -> list[Change]:
    """``wait(timeout)`` (a recorder's wait) in steps of ``PATIENCE`` seconds, saying "still
    waiting for <what>" after each; :class:`_Unfinished` after ``TIMEOUT`` in all."""
    started = time.monotonic()
    while True:
        left = TIMEOUT - (time.monotonic() - started)
        try:
            return wait(min(PATIENCE, max(left, 0.1)))
        except CourseError as err:
            waited = time.monotonic() - started
            if waited >= TIMEOUT:
                raise _Unfinished(str(err).splitlines()[0]) from err
            _say(exercise, f"still waiting for {what} ({waited:.0f} s so far)")


def _settle(
    exercise: str,
    recorder: ChainRecorder,
    name: str,
    replicas: int,
    *,
    since: float,
    also: Callable[[list[Change]], bool] | None = None,
    what: str = "",
) -> list[Change]:
    """:meth:`ChainRecorder.wait_settled`, saying "still waiting" while it waits."""
    return _waiting(
        exercise,
        lambda timeout: recorder.wait_settled(
            name, replicas, since=since, also=also, timeout=timeout
        ),
        what or f"Deployment {name} to settle at {replicas} Ready Pods",
    )


def _fail(core: kubernetes.client.CoreV1Api, namespace: str, pod: str) -> None:
    """Write the status a kubelet would write for a Pod evicted from its node."""
    failed = {"status": {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False"}]}}
    core.patch_namespaced_pod_status(pod, namespace, failed, field_manager=YOU)


def _not_ready(core: kubernetes.client.CoreV1Api, namespace: str, pod: str) -> None:
    """Write the status a kubelet would write for a Pod whose container has crashed."""
    container = {
        "name": "pause", "image": IMAGES[0], "imageID": "", "ready": False, "restartCount": 1,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
    }  # fmt: skip
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "False"}]}
    status["containerStatuses"] = [container]
    core.patch_namespaced_pod_status(pod, namespace, {"status": status}, field_manager=YOU)


def _running(recorder: ChainRecorder, name: str) -> list[str]:
    """The names of Deployment ``name``'s Running Pods, in the recorder's cache, sorted."""
    return sorted(
        p["metadata"]["name"]
        for p in recorder.objects("Pod")
        if p["metadata"]["name"].startswith(f"{name}-")
        and (p.get("status") or {}).get("phase") == "Running"
        and not p["metadata"].get("deletionTimestamp")
    )


NEEDS_KWOK = (
    "a real kubelet owns its Pods' status, so this drill needs the local control plane "
    "(kwok); compare your answer with the solution in notebooks/solutions/ch07.py"
)


# --- exercise 1: the Failed-Pod drill, predicted --------------------------------------------------

KEYS_1 = ("Running", "Failed", "created", "deleted")
HINTS_1 = {
    "Failed": "replicaset-controller never deletes a Pod it does not count, and a Failed Pod it "
    "does not count; PodGC waits for 12,500 terminated Pods",
    "created": "a Failed Pod is not active: the ReplicaSet is one short each time",
    "deleted": "scaling down deletes only active Pods, the Failed ones are not among them",
    "Running": "the ReplicaSet keeps as many active Pods as it asks for",
}


def check_1(
    answer: Mapping[str, int | None] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``{"Running", "Failed", "created", "deleted"}`` for the drill, checked on the cluster."""
    if answer is None or not any(v is not None for v in answer.values()):
        return not_attempted("1", "fill in a number for each key of answer_1")
    if set(answer) != set(KEYS_1) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in answer.values()
    ):
        return wrong("1", f"answer_1 should give a whole number for each of {list(KEYS_1)}")
    if not _kwok_only(api):
        return CannotCheck("1", "not attempted yet", NEEDS_KWOK)
    namespace = namespaces.ensure_namespace(api, namespace)
    _say("1", "running the drill on the cluster (a few seconds)")
    try:
        seen = _drill_1(api, namespace)
    except _Unfinished as err:
        return CannotCheck("1", "not attempted yet", f"the cluster did not finish the drill: {err}")
    differ = [key for key in KEYS_1 if answer[key] != seen[key]]
    if differ:
        key = differ[0]
        return wrong("1", f"{key} was {seen[key]}, not {answer[key]}: {HINTS_1[key]}")
    return correct("1", ", ".join(f"{key} {seen[key]}" for key in KEYS_1))


def _drill_1(api: kubernetes.client.ApiClient, namespace: str) -> dict[str, int]:
    """Deployment of 3; fail two Pods, one after the other; scale to 2; count."""
    name = "ex1-fail"
    apps, core = kubernetes.client.AppsV1Api(api), kubernetes.client.CoreV1Api(api)
    _delete(apps, name, namespace)
    with ChainRecorder(api, namespace) as recorder:
        try:
            apps.create_namespaced_deployment(namespace, _deployment(name, 3), field_manager=YOU)
            first = _settle("1", recorder, name, 3, since=0.0)
            initial = names(_mine(first, name), "Pod", "created")
            for _ in range(2):
                since = recorder.now()
                _fail(core, namespace, _running(recorder, name)[0])
                replaced = lambda c: bool(names(_mine(c, name), "Pod", "created"))  # noqa: E731
                _settle("1", recorder, name, 3, since=since, also=replaced)
            since = recorder.now()
            apps.patch_namespaced_deployment(name, namespace, {"spec": {"replicas": 2}})
            _settle(
                "1", recorder, name, 2, since=since,
                also=lambda c: bool(names(_mine(c, name), "Pod", "deletionTimestamp")),
            )  # fmt: skip
            changes = _mine(recorder.changes(), name)
            pods = core.list_namespaced_pod(namespace, label_selector=f"app={name}").items
            live = [p for p in pods if p.metadata.deletion_timestamp is None]
            phases = [p.status.phase for p in live]
        finally:
            _delete(apps, name, namespace)
    return {
        "Running": phases.count("Running"),
        "Failed": phases.count("Failed"),
        "created": len(names(changes, "Pod", "created") - initial),
        "deleted": len(
            {
                c.name
                for c in changes
                if c.field == "deletionTimestamp" and c.actor == "replicaset-controller"
            }
        ),
    }


# --- exercise 2: a rollout that starts one Pod short ----------------------------------------------

KEYS_2 = ("finishes", "fewest Ready", "first to go")
FIRST_TO_GO = ("not Ready", "Ready")
HINTS_2 = {
    "finishes": "maxSurge lets the new ReplicaSet grow above spec.replicas whatever the old "
    "Pods' state, and what is already unavailable is not held against what may go",
    "fewest Ready": "the limits bound what deployment-controller takes away, not what was "
    "already missing when the update began",
    "first to go": "a ReplicaSet that scales down gives up the Pods furthest from being useful "
    "first (the ranking in the rolling update section)",
}


def check_2(
    answer: Mapping[str, Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``{"finishes": bool, "fewest Ready": int, "first to go": "not Ready" | "Ready"}`` for a
    rolling update of 3 replicas (default strategy) that starts with one Pod not Ready."""
    if answer is None or not any(v is not None for v in answer.values()):
        return not_attempted("2", 'fill in each key of answer_2 ("finishes", "fewest Ready", ...)')
    shape = (
        isinstance(answer, Mapping)
        and set(answer) == set(KEYS_2)
        and isinstance(answer["finishes"], bool)
        and isinstance(answer["fewest Ready"], int)
        and not isinstance(answer["fewest Ready"], bool)
        and answer["first to go"] in FIRST_TO_GO
    )
    if not shape:
        return wrong(
            "2",
            'answer_2 should be {"finishes": True or False, "fewest Ready": a whole number, '
            '"first to go": "not Ready" or "Ready"}',
        )
    if not _kwok_only(api):
        return CannotCheck("2", "not attempted yet", NEEDS_KWOK)
    namespace = namespaces.ensure_namespace(api, namespace)
    _say("2", "running the rolling update on the cluster (a few seconds)")
    try:
        seen = _drill_2(api, namespace)
    except _Unfinished as err:
        return CannotCheck(
            "2", "not attempted yet", f"the cluster did not get the Deployment ready: {err}"
        )
    differ = [key for key in KEYS_2 if answer[key] != seen[key]]
    if differ:
        key = differ[0]
        said = {True: "it did finish", False: "it did not finish"}
        got = said[seen[key]] if key == "finishes" else f"that was not {answer[key]!r}"
        return wrong("2", f"{key}: {got}; {HINTS_2[key]}")
    return correct(
        "2",
        f"it finishes, never fewer than {seen['fewest Ready']} Ready, and the "
        f"{seen['first to go']} Pod went first",
    )


def _drill_2(api: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    """Deployment of 3 (default strategy); one Pod not Ready; a new image; what happened."""
    name = "ex2-short"
    apps, core = kubernetes.client.AppsV1Api(api), kubernetes.client.CoreV1Api(api)
    _delete(apps, name, namespace)
    with ChainRecorder(api, namespace) as recorder:
        try:
            apps.create_namespaced_deployment(namespace, _deployment(name, 3), field_manager=YOU)
            _settle("2", recorder, name, 3, since=0.0)
            old = set(_running(recorder, name))
            down = min(old)
            since = recorder.now()
            _not_ready(core, namespace, down)
            reported = f"Deployment {name} to report 2 available"
            _waiting(  # the Deployment's own status says 2: deployment-controller has seen it
                "2",
                lambda timeout: recorder.wait_for(
                    lambda c: state(c, "Deployment", name).get("status.availableReplicas") == "2",
                    what=reported, since=since, timeout=timeout,
                ),
                reported,
            )  # fmt: skip
            start = recorder.now()
            image = {"containers": [{"name": "pause", "image": IMAGES[1]}]}
            apps.patch_namespaced_deployment(
                name, namespace, {"spec": {"template": {"spec": image}}}, field_manager=YOU
            )
            try:
                _settle(
                    "2", recorder, name, 3, since=start,
                    also=lambda c: old <= names(c, "Pod", "deleted"),
                    what="the rolling update to finish",
                )  # fmt: skip
                finished = True
            except _Unfinished:
                finished = False
            changes = _mine(recorder.changes(), name)
        finally:
            _delete(apps, name, namespace)
    times, _existing, ready = pod_counts(changes)
    before = [n for at, n in zip(times, ready, strict=True) if at < start][-1:]
    during = before + [n for at, n in zip(times, ready, strict=True) if at >= start]
    gone = [
        c.name
        for c in changes
        if c.at >= start and c.field == "deletionTimestamp" and c.actor == "replicaset-controller"
    ]
    return {
        "finishes": finished,
        "fewest Ready": min(during),
        "first to go": "not Ready" if gone and gone[0] == down else "Ready",
    }


# --- exercise 3: be the scheduler -------------------------------------------------------------

NOBODYS_SCHEDULER = "nobody-runs-this-scheduler"


def check_3(
    bind: Callable[[kubernetes.client.CoreV1Api, str, str, str], Any] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """``bind(core, namespace, pod, node)`` puts the Pod on the node, as the scheduler does.

    Judged on the Pod right after ``bind`` returns (a Binding sets ``spec.nodeName`` before
    the API server answers), then, once it is right, on the Pod running there."""
    if bind is None:
        return not_attempted("3", "set bind to your function (core, namespace, pod, node)")
    namespace = namespaces.ensure_namespace(api, namespace)
    core = kubernetes.client.CoreV1Api(api)
    node = sorted(n.metadata.name for n in core.list_node().items)[-1]
    name = "ex3-bind"
    _delete_pod(core, namespace, name)
    pod = {
        "metadata": {"name": name},
        "spec": {
            "schedulerName": NOBODYS_SCHEDULER,  # the real scheduler leaves it alone
            "containers": [{"name": "pause", "image": IMAGES[0]}],
        },
    }
    uid = core.create_namespaced_pod(namespace, pod).metadata.uid
    try:
        return _judge_3(bind, core, namespace, name, node, uid)
    finally:
        _delete_pod(core, namespace, name)


def _judge_3(
    bind: Callable[[kubernetes.client.CoreV1Api, str, str, str], Any],
    core: kubernetes.client.CoreV1Api,
    namespace: str,
    name: str,
    node: str,
    uid: str,
) -> Verdict:
    note = ""
    try:
        bind(core, namespace, name, node)
    except ApiException as err:
        if err.status == 403:  # the account may not: the answer cannot be judged here
            return CannotCheck(
                "3",
                "not attempted yet",
                f"this account may not do that here ({explain(err)}); a workshop attendee "
                "may not create Bindings: compare with notebooks/solutions/ch07.py",
            )
        return wrong("3", f"the API server refused it: {explain(err)}")
    except ValueError as err:  # the generated client reading the answer as a V1Binding
        note = (
            f" (your call raised ValueError: {err}. The Pod was bound; the API server "
            "answered with a Status, which the generated client tried to read as a V1Binding: "
            "pass _preload_content=False to take the answer raw)"
        )
    except Exception as err:
        return wrong("3", f"bind raised {type(err).__name__}: {err}")
    try:
        now = core.read_namespaced_pod(name, namespace)
    except ApiException as err:
        if err.status != 404:
            raise
        return wrong("3", f"Pod {name} is gone: the scheduler binds the Pod it has, and keeps it")
    if now.metadata.uid != uid:
        return wrong(
            "3", "that is another Pod of the same name: the scheduler binds the Pod it has"
        )
    if now.spec.node_name != node:
        if note:
            return wrong("3", f"bind raised ValueError and the Pod has no node{note}")
        where = f"is on {now.spec.node_name}" if now.spec.node_name else "has no node"
        return wrong(
            "3",
            f"right after bind returned, Pod {name} {where}, where it should be on {node}: a "
            "Binding sets spec.nodeName before the API server answers",
        )
    if not _runs(core, namespace, name):
        return CannotCheck(
            "3", "not attempted yet",
            f"Pod {name} is bound to {node}, and that node did not run it within "
            f"{TIMEOUT:.0f} s: look at the node (`python -m helpers.cluster logs`)",
        )  # fmt: skip
    return correct("3", f"a Binding: the API server set spec.nodeName to {node}, and it runs{note}")


def _runs(core: kubernetes.client.CoreV1Api, namespace: str, name: str) -> bool:
    """Wait for the Pod to run, saying "still waiting" every ``PATIENCE`` seconds."""
    started = time.monotonic()
    while time.monotonic() - started < TIMEOUT:
        try:
            wait_for(
                core.list_namespaced_pod,
                lambda pods: (pods.get(name) or {}).get("status", {}).get("phase") == "Running",
                what=f"Pod {name} to run",
                timeout=PATIENCE,
                namespace=namespace,
            )
            return True
        except CourseError:
            waited = time.monotonic() - started
            _say("3", f"the Pod is bound; still waiting for it to run ({waited:.0f} s so far)")
    return False


def _delete_pod(core: kubernetes.client.CoreV1Api, namespace: str, name: str) -> None:
    try:
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    except ApiException as err:
        if err.status != 404:
            raise
