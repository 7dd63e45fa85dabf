"""Checks for chapter 07's exercises (from Deployment to Pod).

Each check that needs the cluster runs a small Deployment of its own in the
chapter's namespace, records it with :class:`helpers.chain.ChainRecorder`, and
deletes it again: exercise 1 compares the learner's predicted actors with the
ones the evidence names, exercise 2 runs a rolling update with the learner's
strategy and counts the Pods, exercise 3 compares the learner's bindings with
the Pods' ``spec.nodeName`` on the API server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from ..apierrors import explain
from ..chain import YOU, ChainRecorder, Change, names, pod_counts, ready_count, state
from ..errors import CourseError
from . import Verdict, correct, not_attempted, wrong

TIMEOUT = 60.0
"""Seconds a check's Deployment may take to become ready (kind pulls the image)."""

IMAGES = ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.10")

ACTORS = ("you", "deployment-controller", "replicaset-controller", "scheduler", "kubelet")

QUESTIONS_1 = (
    ("ReplicaSet", "created"),
    ("ReplicaSet", "status.availableReplicas"),
    ("Pod", "created"),
    ("Pod", "spec.nodeName"),
    ("Pod", "status.phase"),
    ("Deployment", "status.availableReplicas"),
)


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


def _reports(name: str, **status: int) -> Callable[[list[Change]], bool]:
    wanted = {f"status.{field}": str(value) for field, value in status.items()}
    return lambda changes: wanted.items() <= state(changes, "Deployment", name).items()


def _delete(apps: kubernetes.client.AppsV1Api, name: str, namespace: str) -> None:
    try:
        apps.delete_namespaced_deployment(name, namespace)
    except ApiException as err:
        if err.status != 404:
            raise


def _mine(changes: list[Change], name: str) -> list[Change]:
    """The changes of Deployment ``name`` and of what it owns (named after it)."""
    return [change for change in changes if change.name.startswith(name)]


def _run(
    api: kubernetes.client.ApiClient, namespace: str, name: str, replicas: int
) -> list[Change]:
    """Create Deployment ``name``, record it until ``replicas`` are available, delete it."""
    apps = kubernetes.client.AppsV1Api(api)
    _delete(apps, name, namespace)
    with ChainRecorder(api, namespace) as recorder:
        try:
            apps.create_namespaced_deployment(
                namespace, _deployment(name, replicas), field_manager=YOU
            )
            changes = recorder.wait_for(
                lambda c: _reports(name, availableReplicas=replicas)(_mine(c, name)),
                what=f"the check's Deployment {name} to have {replicas} available Pods",
                timeout=TIMEOUT,
            )
        finally:
            _delete(apps, name, namespace)
    return _mine(changes, name)


# --- exercise 1: who writes what ------------------------------------------------------------


def _role(actor: str | None) -> str | None:
    """kwok stands in for the kubelet: both count as "kubelet"."""
    return "kubelet" if actor in ("kubelet", "kubelet (kwok)") else actor


def check_1(
    answer: Mapping[tuple[str, str], str | None] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """``{(kind, field): actor}`` for each of ``QUESTIONS_1``, checked against a real run."""
    if answer is None or not any(answer.values()):
        return not_attempted("1", "fill in an actor for each change in answer_1")
    missing = [key for key in QUESTIONS_1 if not answer.get(key)]
    if missing:
        return wrong("1", f"no actor given for {missing[0]}: every change has one")
    unknown = {actor for actor in answer.values() if actor not in ACTORS}
    if unknown:
        return wrong("1", f"{sorted(unknown)} is not one of the chapter's actors {list(ACTORS)}")
    changes = _run(api, namespace, "ex1-who", 2)
    for kind, field in QUESTIONS_1:
        seen = next(c for c in changes if c.kind == kind and c.field == field)
        if _role(seen.actor) != answer[kind, field]:
            return wrong(
                "1",
                f"the {kind}'s {field!r} was written by {_role(seen.actor)}, not "
                f"{answer[kind, field]}; the evidence: {seen.evidence}",
            )
    return correct("1", "every actor as the evidence names it")


# --- exercise 2: a rollout strategy within limits ---------------------------------------------


def check_2(
    strategy: Mapping[str, Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """A rolling update of 4 replicas with ``strategy``: at most 4 Pods, at least 3 Ready."""
    if strategy is None:
        return not_attempted("2", 'set strategy_2 to {"maxSurge": ..., "maxUnavailable": ...}')
    if not isinstance(strategy, Mapping) or set(strategy) != {"maxSurge", "maxUnavailable"}:
        return wrong(
            "2", 'strategy_2 should be a dict with the keys "maxSurge" and "maxUnavailable"'
        )
    name, apps = "ex2-rollout", kubernetes.client.AppsV1Api(api)
    _delete(apps, name, namespace)
    with ChainRecorder(api, namespace) as recorder:
        try:
            try:
                apps.create_namespaced_deployment(
                    namespace, _deployment(name, 4, strategy), field_manager=YOU
                )
            except ApiException as err:
                return wrong("2", f"the API server refused that strategy: {explain(err)}")
            recorder.wait_for(
                lambda c: (
                    _reports(name, availableReplicas=4)(_mine(c, name))
                    and ready_count(_mine(c, name)) == 4
                ),
                what=f"the check's Deployment {name} to have 4 available Pods",
                timeout=TIMEOUT,
            )
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
                recorder.wait_for(
                    lambda c: (
                        _reports(name, updatedReplicas=4, availableReplicas=4)(_mine(c, name))
                        and old <= names(c, "Pod", "deleted")
                    ),
                    what="the rolling update",
                    since=start,
                    timeout=TIMEOUT,
                )
            except CourseError:
                return wrong("2", "the rolling update did not finish within a minute")
            changes = _mine(recorder.changes(), name)
        finally:
            _delete(apps, name, namespace)
    times, existing, ready = pod_counts(changes)
    during = [i for i, at in enumerate(times) if at >= start]
    most, fewest = max(existing[i] for i in during), min(ready[i] for i in during)
    asked = most_replicas_asked(changes, since=start)
    if asked > 4:
        return wrong(
            "2",
            f"{most} Pods existed at one point: maxSurge lets new Pods start before old ones go",
        )
    if fewest < 3:
        return wrong(
            "2",
            f"only {fewest} Pods were Ready at one point: maxUnavailable lets old Pods go first",
        )
    if most > asked:
        return correct(
            "2",
            f"the ReplicaSets never asked for more than {asked} Pods, at least {fewest} Ready "
            f"({most} existed for a moment: a scaled-down ReplicaSet had not yet deleted its "
            "Pod when the new one created another)",
        )
    return correct("2", f"at most {most} Pods, at least {fewest} Ready")


def most_replicas_asked(changes: list[Change], since: float) -> int:
    """The largest sum of the ReplicaSets' ``spec.replicas`` from ``since`` on.

    That sum is what deployment-controller keeps within replicas + maxSurge.
    The Pods themselves can exceed it for a moment: a ReplicaSet it scaled
    down deletes its Pod in its own sync, which may run after the other
    ReplicaSet's sync has created the replacement (kube-controller-manager
    1.36 retries a sync whose cache has not yet seen the controller's own
    last write, so under load that order is not rare). Judging the strategy
    by the Pods alone would then fail a right answer.
    """
    asked: dict[str, int] = {}
    most = 0
    for change in changes:
        if change.kind != "ReplicaSet":
            continue
        replicas = dict(change.state).get("spec.replicas", "")
        if change.field == "deleted":
            asked.pop(change.name, None)
        elif replicas.isdigit():
            asked[change.name] = int(replicas)
        if change.at >= since:
            most = max(most, sum(asked.values()))
    return most


# --- exercise 3: bindings from the record -----------------------------------------------------


def check_3(
    bindings: Callable[[list[Change]], Mapping[str, str]] | None,
    api: kubernetes.client.ApiClient,
    namespace: str,
) -> Verdict:
    """``bindings(changes)`` must give every recorded Pod's node, as the API server has it."""
    if bindings is None:
        return not_attempted("3", "set bindings to your function (changes) -> {pod: node}")
    name = "ex3-bindings"
    apps, core = kubernetes.client.AppsV1Api(api), kubernetes.client.CoreV1Api(api)
    try:
        changes = _run_keeping(api, namespace, name)
        pods = core.list_namespaced_pod(namespace, label_selector=f"app={name}").items
        truth = {pod.metadata.name: pod.spec.node_name for pod in pods}
        try:
            found = dict(bindings(changes))
        except Exception as err:
            return wrong("3", f"bindings raised {err!r} on the recorded changes")
    finally:
        _delete(apps, name, namespace)
    if not found:
        return wrong("3", "no bindings found: a binding is a change of the field 'spec.nodeName'")
    if found != truth:
        odd = sorted(set(found.items()) ^ set(truth.items()))[0]
        return wrong("3", f"{odd} differs from the API server's {truth}: which value is the node?")
    return correct("3", f"{len(found)} Pods bound, as the API server has them")


def _run_keeping(api: kubernetes.client.ApiClient, namespace: str, name: str) -> list[Change]:
    """Like ``_run``, but the Deployment stays (exercise 3 compares with its live Pods)."""
    apps = kubernetes.client.AppsV1Api(api)
    _delete(apps, name, namespace)
    with ChainRecorder(api, namespace) as recorder:
        apps.create_namespaced_deployment(namespace, _deployment(name, 3), field_manager=YOU)
        changes = recorder.wait_for(
            lambda c: _reports(name, availableReplicas=3)(_mine(c, name)),
            what=f"the check's Deployment {name} to have 3 available Pods",
            timeout=TIMEOUT,
        )
    return _mine(changes, name)
