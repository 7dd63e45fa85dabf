"""The chain recorder on the real cluster: who the evidence names, step by step.

Each test runs a Deployment of its own in a fresh namespace, records it with
:class:`helpers.chain.ChainRecorder`, and waits on the record (never by sleeping).
The node's agent is kwok on the local control plane and a kubelet on kind: the
tests ask the Nodes which, and expect that.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import kubernetes
import pytest

from helpers import kube
from helpers.attribution import (
    DEFAULT_STATUS_WRITERS,
    DELETED_BY_YOU,
    YOU,
    Change,
    cluster_roles,
    names,
    node_agent,
    pod_counts,
    ready_count,
    replicas_asked,
    state,
    status_grants,
    status_writers,
)
from helpers.chain import ChainRecorder
from helpers.events import EventRecorder
from helpers.swimlanes import LiveSwimlanes

pytestmark = pytest.mark.cluster

TIMEOUT = 60.0
IMAGES = ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.10")


def deployment(name: str, replicas: int) -> dict:
    labels = {"app": name}
    template = {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "pause", "image": IMAGES[0]}]}}  # fmt: skip
    spec = {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}
    return {"metadata": {"name": name}, "spec": spec}


def reports(name: str, **status: int) -> Callable[[list[Change]], bool]:
    wanted = {f"status.{field}": str(value) for field, value in status.items()}
    return lambda changes: wanted.items() <= state(changes, "Deployment", name).items()


@pytest.fixture
def recorder(api: kubernetes.client.ApiClient, namespace: str):
    with ChainRecorder(api, namespace) as recording:
        yield recording


def create_web(
    api: kubernetes.client.ApiClient, namespace: str, recorder: ChainRecorder, replicas: int
) -> list[Change]:
    apps = kubernetes.client.AppsV1Api(api)
    apps.create_namespaced_deployment(namespace, deployment("web", replicas), field_manager=YOU)
    deployment_ready = reports("web", availableReplicas=replicas)

    def available(changes: list[Change]) -> bool:
        # Each kind has its own informer and watch, so the record may hold the Deployment's
        # availableReplicas before the ReplicaSet's or the Pods' changes that led to it: wait
        # for every link the tests assert on, not only the last one.
        sets = names(changes, "ReplicaSet", "created")
        return (
            deployment_ready(changes)
            and len(sets) == 1
            and state(changes, "ReplicaSet", *sets).get("status.availableReplicas") == str(replicas)
            and ready_count(changes) == replicas
        )

    return recorder.wait_for(available, what="web", timeout=TIMEOUT)


def test_a_fresh_deployment_has_each_step_attributed_to_its_actor(
    api: kubernetes.client.ApiClient, namespace: str, recorder: ChainRecorder
) -> None:
    changes = create_web(api, namespace, recorder, 2)
    agents = {node_agent(node) for node in recorder.nodes().values()}

    def actors(step: int, kind: str, field: str) -> set[str | None]:
        return {c.actor for c in changes if c.step == step and c.kind == kind and c.field == field}

    assert actors(1, "Deployment", "created") == {"you"}
    assert actors(2, "ReplicaSet", "created") == {"deployment-controller"}
    assert actors(3, "Pod", "created") == {"replicaset-controller"}
    assert actors(5, "Pod", "spec.nodeName") == {"scheduler"}
    assert actors(6, "Pod", "Ready") <= agents and actors(6, "Pod", "Ready")
    assert actors(7, "ReplicaSet", "status.availableReplicas") == {"replicaset-controller"}
    assert actors(8, "Deployment", "status.availableReplicas") == {"deployment-controller"}
    pods = names(changes, "Pod", "created")
    assert len(pods) == 2
    assert names(changes, "Pod", "not bound yet") == pods, "step 4 held for every Pod"
    by_evidence = {(c.step, c.evidence) for c in changes if c.step in (2, 3, 5)}
    assert by_evidence == {
        (2, "Event ScalingReplicaSet"),
        (3, "Event SuccessfulCreate"),
        (5, "Event Scheduled"),
    }
    ready_pods = [c.name for c in changes if c.field == "Ready" and c.after == "True"]
    for pod in pods:  # each Pod: created, then bound, then Ready, in that order
        mine = [
            c.field
            for c in changes
            if c.name == pod and c.field in ("created", "spec.nodeName", "Ready")
        ]
        assert mine[0] == "created" and mine.index("spec.nodeName") < len(mine) - 1
    assert sorted(set(ready_pods)) == sorted(pods)


def test_a_killed_pod_is_replaced_as_soon_as_it_is_being_deleted(
    api: kubernetes.client.ApiClient, namespace: str, recorder: ChainRecorder
) -> None:
    created = create_web(api, namespace, recorder, 2)
    victim = sorted(names(created, "Pod", "created"))[0]
    core = kubernetes.client.CoreV1Api(api)
    pod = json.loads(kube.raw_get(api, f"/api/v1/namespaces/{namespace}/pods/{victim}"))
    EventRecorder(core, YOU).event(pod, "Normal", DELETED_BY_YOU, f"Deleted pod: {victim}")
    killed_at = recorder.now()
    core.delete_namespaced_pod(victim, namespace)

    def replaced(changes: list[Change]) -> bool:
        after = [c for c in changes if c.at >= killed_at]
        return victim in names(after, "Pod", "deleted") and bool(
            names(after, "Pod", "Ready", "True")
        )

    changes = [
        c
        for c in recorder.wait_for(replaced, what="a replacement", timeout=TIMEOUT)
        if c.at >= killed_at
    ]
    deleting = next(c for c in changes if c.name == victim and c.field == "deletionTimestamp")
    gone = next(c for c in changes if c.name == victim and c.field == "deleted")
    (replacement,) = names(changes, "Pod", "created")
    born = next(c for c in changes if c.name == replacement and c.field == "created")
    assert (deleting.actor, deleting.step) == ("you", 9)
    assert gone.actor in {node_agent(node) for node in recorder.nodes().values()}
    assert (born.actor, born.step) == ("replicaset-controller", 3)
    assert deleting.at <= born.at, "the replacement answers the deletionTimestamp"
    assert replacement != victim


def test_a_rolling_update_moves_replicas_to_a_second_replicaset_within_the_limits(
    api: kubernetes.client.ApiClient, namespace: str, recorder: ChainRecorder
) -> None:
    create_web(api, namespace, recorder, 3)
    old_pods = {p["metadata"]["name"] for p in recorder.objects("Pod")}
    start = recorder.now()
    image = {"containers": [{"name": "pause", "image": IMAGES[1]}]}
    apps = kubernetes.client.AppsV1Api(api)
    picture = LiveSwimlanes(recorder, caption="c", title="t", since=start, limits=(4, 3),
                            show=False)  # fmt: skip
    apps.patch_namespaced_deployment(
        "web", namespace, {"spec": {"template": {"spec": image}}}, field_manager=YOU
    )

    def rolled_out(changes: list[Change]) -> bool:
        sets = {c.name for c in changes if c.kind == "ReplicaSet"}
        settled = all(
            state(changes, "ReplicaSet", rs).get("status.availableReplicas")
            == state(changes, "ReplicaSet", rs).get("spec.replicas")
            for rs in sets
        )
        return (
            settled
            and reports("web", updatedReplicas=3, availableReplicas=3)(changes)
            and old_pods <= names(changes, "Pod", "deleted")
        )

    changes = recorder.wait_for(rolled_out, since=start, what="the rollout", timeout=TIMEOUT)
    sets = {c.name for c in changes if c.kind == "ReplicaSet"}
    assert len(sets) == 2, "a second ReplicaSet"
    (new,) = names(changes, "ReplicaSet", "created")
    (old,) = sets - {new}
    scaling = [
        (c.name, c.after)
        for c in changes
        if c.kind == "ReplicaSet" and c.field in ("created", "spec.replicas")
    ]
    assert [after for name, after in scaling if name == new] == ["spec.replicas=1", "2", "3"]
    assert [after for name, after in scaling if name == old] == ["2", "1", "0"]
    assert {c.actor for c in changes if c.kind == "ReplicaSet" and c.step == 2} == {
        "deployment-controller"
    }
    # deployment-controller bounds what the ReplicaSets ask for, not the Pods that exist: a
    # scaled-down ReplicaSet may delete its Pod after the other has made the next one.
    assert max(replicas_asked(recorder.changes(), since=start)[1]) <= 4, "maxSurge 25% of 3: 1"
    times, _existing, ready = pod_counts(recorder.changes())
    during = [i for i, at in enumerate(times) if at >= start]
    assert min(ready[i] for i in during) >= 3, "maxUnavailable 25% of 3: none unavailable"
    images = {p["spec"]["containers"][0]["image"] for p in recorder.objects("Pod")}
    assert images == {IMAGES[1]}
    picture.freeze(changes)  # what chapter 07's picture draws, and the line under it says
    assert picture.drawn.counts == (4, 3, 3), picture.drawn
    assert ("Pod", 3, 3, 0) in picture.drawn.objects, picture.drawn


def test_rbac_allows_two_controllers_each_status_and_one_writes_it(
    api: kubernetes.client.ApiClient,
) -> None:
    """The cluster's own roles: the garbage collector's "*" allows it every status too."""
    grants = status_grants(cluster_roles(api), DEFAULT_STATUS_WRITERS)
    for resource, writer in DEFAULT_STATUS_WRITERS.items():
        assert {g.controller for g in grants[resource]} == {writer, "generic-garbage-collector"}
    assert status_writers(api) == DEFAULT_STATUS_WRITERS


def test_the_recorder_sees_only_what_happens_after_start_and_stops_its_threads(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    apps = kubernetes.client.AppsV1Api(api)
    apps.create_namespaced_deployment(namespace, deployment("before", 1), field_manager=YOU)
    recording = ChainRecorder(api, namespace).start()
    try:
        assert any(d["metadata"]["name"] == "before" for d in recording.objects("Deployment"))
        assert not [
            o
            for o in recording.observations()
            if o.new["metadata"]["name"] == "before" and o.verb == "added"
        ]
    finally:
        recording.stop()
    alive = [
        t.name
        for t in threading.enumerate()
        if t.name.startswith(("informer-chain-", "reflector-chain-"))
    ]
    assert alive == []
