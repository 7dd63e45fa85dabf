"""Checks for chapter 07's exercises (from Deployment to Pod).

Each check runs what it asks about on the cluster, in the chapter's namespace
(brought back if Run All has deleted it), and deletes what it made: exercise 1
fails two Pods of a Deployment and scales it, recorded by
:class:`helpers.chain.ChainRecorder`, and compares the counts with the
learner's prediction; exercise 2 runs a rolling update with the learner's
strategy and counts what the ReplicaSets asked for and the Ready Pods;
exercise 3 creates a Pod no scheduler takes and lets the learner's function
bind it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import namespaces
from ..apierrors import explain
from ..chain import YOU, ChainRecorder, names, pod_counts, replicas_asked
from ..errors import CourseError
from ..waiting import wait_for
from . import CannotCheck, Verdict, correct, not_attempted, wrong

TIMEOUT = 60.0
"""Seconds a check's Deployment may take to become ready (kind pulls the image)."""

IMAGES = ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.10")


def _deployment(name: str, replicas: int, strategy: Mapping[str, Any] | None = None) -> dict:
    labels = {"app": name}
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "pause", "image": IMAGES[0]}]},
        },
    }
    if strategy is not None:
        spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": dict(strategy)}
    return {"metadata": {"name": name}, "spec": spec}


def _delete(apps: kubernetes.client.AppsV1Api, name: str, namespace: str) -> None:
    try:
        apps.delete_namespaced_deployment(name, namespace)
    except ApiException as err:
        if err.status != 404:
            raise


def _mine(changes: list[Any], name: str) -> list[Any]:
    """The changes of Deployment ``name`` and of what it owns (named after it)."""
    return [change for change in changes if change.name.startswith(name)]


def _kwok_only(api: kubernetes.client.ApiClient) -> bool:
    """Does kwok play every node's kubelet (so that a Pod's status is ours to write)?"""
    nodes = kubernetes.client.CoreV1Api(api).list_node().items
    return bool(nodes) and all(
        "kwok.x-k8s.io/node" in (node.metadata.annotations or {}) for node in nodes
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


def _fail(core: kubernetes.client.CoreV1Api, namespace: str, pod: str) -> None:
    """Write the status a kubelet would write for a Pod whose containers ended for good."""
    failed = {"status": {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False"}]}}
    core.patch_namespaced_pod_status(pod, namespace, failed, field_manager=YOU)


def check_1(
    answer: Mapping[str, int | None] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """``{"Running", "Failed", "created", "deleted"}`` for the drill, checked on the cluster."""
    if answer is None or not any(v is not None for v in answer.values()):
        return not_attempted("1", "fill in a number for each key of answer_1")
    if set(answer) != set(KEYS_1) or not all(isinstance(v, int) for v in answer.values()):
        return wrong("1", f"answer_1 should give a whole number for each of {list(KEYS_1)}")
    if not _kwok_only(api):
        return CannotCheck(
            "1",
            "a real kubelet owns its Pods' status, so this drill needs the local control plane "
            "(kwok); compare your answer with the solution in notebooks/solutions/ch07.py",
        )
    namespace = namespaces.ensure_namespace(api, namespace)
    seen = _drill_1(api, namespace)
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
            first = recorder.wait_settled(name, 3, since=0.0)
            initial = names(_mine(first, name), "Pod", "created")
            for _ in range(2):
                since = recorder.now()
                running = sorted(
                    p["metadata"]["name"]
                    for p in recorder.objects("Pod")
                    if p["metadata"]["name"].startswith(name)
                    and (p.get("status") or {}).get("phase") == "Running"
                )
                _fail(core, namespace, running[0])
                replaced = lambda c: bool(names(_mine(c, name), "Pod", "created"))  # noqa: E731
                recorder.wait_settled(name, 3, since=since, also=replaced)
            since = recorder.now()
            apps.patch_namespaced_deployment(name, namespace, {"spec": {"replicas": 2}})
            recorder.wait_settled(
                name, 2, since=since,
                also=lambda c: bool(names(_mine(c, name), "Pod", "deletionTimestamp")),
            )  # fmt: skip
            changes = _mine(recorder.changes(), name)
            pods = core.list_namespaced_pod(namespace, label_selector=f"app={name}").items
            live = [p for p in pods if p.metadata.deletion_timestamp is None]
            phases = [p.status.phase for p in live]
        finally:
            _delete(apps, name, namespace)
    deleters = {"replicaset-controller"}
    return {
        "Running": phases.count("Running"),
        "Failed": phases.count("Failed"),
        "created": len(names(changes, "Pod", "created") - initial),
        "deleted": len(
            {c.name for c in changes if c.field == "deletionTimestamp" and c.actor in deleters}
        ),
    }


# --- exercise 2: a rollout strategy within limits ---------------------------------------------


def check_2(
    strategy: Mapping[str, Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """A rolling update of 4 replicas with ``strategy``: the ReplicaSets ask for at most 4 Pods,
    and at least 3 are Ready all the time."""
    if strategy is None:
        return not_attempted("2", 'set strategy_2 to {"maxSurge": ..., "maxUnavailable": ...}')
    if not isinstance(strategy, Mapping) or set(strategy) != {"maxSurge", "maxUnavailable"}:
        return wrong(
            "2", 'strategy_2 should be a dict with the keys "maxSurge" and "maxUnavailable"'
        )
    namespace = namespaces.ensure_namespace(api, namespace)  # after Run All the chapter deleted it
    name, apps = "ex2-rollout", kubernetes.client.AppsV1Api(api)
    _delete(apps, name, namespace)
    with ChainRecorder(api, namespace) as recorder:
        try:
            try:
                apps.create_namespaced_deployment(
                    namespace, _deployment(name, 4, strategy), field_manager=YOU
                )
            except ApiException as err:
                if err.status != 422:  # only an invalid strategy is the answer's fault
                    raise
                return wrong("2", f"the API server refused that strategy: {explain(err)}")
            recorder.wait_settled(name, 4, since=0.0)
            start = recorder.now()
            old = {
                p["metadata"]["name"]
                for p in recorder.objects("Pod")
                if p["metadata"]["name"].startswith(name)
            }
            image = {"containers": [{"name": "pause", "image": IMAGES[1]}]}
            apps.patch_namespaced_deployment(
                name, namespace, {"spec": {"template": {"spec": image}}}, field_manager=YOU
            )
            try:
                recorder.wait_settled(
                    name, 4, since=start, also=lambda c: old <= names(c, "Pod", "deleted")
                )
            except CourseError:
                return wrong("2", "the rolling update did not finish within a minute")
            changes = _mine(recorder.changes(), name)
        finally:
            _delete(apps, name, namespace)
    times, _existing, ready = pod_counts(changes)
    fewest = min(ready[i] for i, at in enumerate(times) if at >= start)
    asked = max(replicas_asked(changes, since=start)[1])
    if asked > 4:
        return wrong(
            "2",
            f"the ReplicaSets asked for {asked} Pods at one point: maxSurge lets new Pods "
            "start before old ones go",
        )
    if fewest < 3:
        return wrong(
            "2",
            f"only {fewest} Pods were Ready at one point: maxUnavailable lets old Pods go first",
        )
    return correct("2", f"the ReplicaSets asked for at most {asked} Pods; at least {fewest} Ready")


# --- exercise 3: be the scheduler -------------------------------------------------------------

NOBODYS_SCHEDULER = "nobody-runs-this-scheduler"


def check_3(
    bind: Callable[[kubernetes.client.CoreV1Api, str, str, str], Any] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """``bind(core, namespace, pod, node)`` puts the Pod on the node, as the scheduler does."""
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
        try:
            bind(core, namespace, name, node)
        except ApiException as err:
            if err.status == 403:  # the account may not: the answer cannot be judged here
                return CannotCheck(
                    "3",
                    f"this account may not do that here ({explain(err)}); a workshop attendee "
                    "may not create Bindings: compare with notebooks/solutions/ch07.py",
                )
            return wrong("3", f"the API server refused it: {explain(err)}")
        except Exception as err:
            return wrong("3", f"bind raised {type(err).__name__}: {err}")
        try:
            found = wait_for(
                core.list_namespaced_pod,
                lambda pods: (pods.get(name) or {}).get("status", {}).get("phase") == "Running",
                what=f"Pod {name} to run",
                timeout=TIMEOUT,
                namespace=namespace,
            )[name]
        except TimeoutError:
            return wrong("3", f"Pod {name} never ran: it has no node (spec.nodeName is empty)")
    finally:
        _delete_pod(core, namespace, name)
    if found["metadata"]["uid"] != uid:
        return wrong(
            "3", "that is another Pod of the same name: the scheduler binds the Pod it has"
        )
    if found["spec"].get("nodeName") != node:
        return wrong("3", f"the Pod runs on {found['spec'].get('nodeName')}, not on {node}")
    return correct("3", f"a Binding: the API server set spec.nodeName to {node}, and it runs")


def _delete_pod(core: kubernetes.client.CoreV1Api, namespace: str, name: str) -> None:
    try:
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    except ApiException as err:
        if err.status != 404:
            raise
