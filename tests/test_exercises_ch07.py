"""Chapter 07's exercise checks say "not attempted", "wrong" and "correct" when they should,
say "wrong" to answers copied from what the chapter printed, never blame a right answer for a
namespace that Run All deleted, and every stored solution passes its check (against the real
cluster: each check runs and records what it asks about)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import kubernetes
import pytest

from helpers import namespaces
from helpers.attribution import Change, replicas_asked
from helpers.exercises import ch07
from notebooks.solutions import ch07 as solutions


@pytest.fixture
def chapter_namespace(api: kubernetes.client.ApiClient) -> Iterator[str]:
    """A namespace the course made (its labels say so), as a chapter's: checks may bring such
    a namespace back, and leave any other alone."""
    name = namespaces.fresh_namespace(api, f"t-ch07-{uuid.uuid4().hex[:6]}")
    yield name
    namespaces.delete_namespace(api, name)


def test_exercise_1_answers_that_cannot_be_right(api: kubernetes.client.ApiClient) -> None:
    assert ch07.check_1(None, api, "unused").state == "not attempted yet"
    assert ch07.check_1(dict.fromkeys(ch07.KEYS_1), api, "unused").state == "not attempted yet"
    verdict = ch07.check_1({"Running": 2}, api, "unused")
    assert verdict.state == "wrong" and "whole number for each" in verdict.detail


@pytest.mark.cluster
def test_exercise_1_the_failed_pod_drill(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """The chapter printed one drill: one Failed Pod, 3 Running, 1 created, 0 deleted. Copied,
    that is wrong; the solution is right, also after Run All deleted the namespace."""
    printed = {"Running": 3, "Failed": 1, "created": 1, "deleted": 0}
    verdict = ch07.check_1(printed, api, chapter_namespace)
    assert verdict.state == "wrong", verdict
    namespaces.delete_namespace(api, chapter_namespace)
    verdict = ch07.check_1(solutions.answer_1, api, chapter_namespace)
    assert verdict.correct, verdict


def test_exercise_2_answers_of_the_wrong_shape_are_wrong_at_once(
    api: kubernetes.client.ApiClient,
) -> None:
    """Before anything runs on the cluster (the namespace does not even exist)."""
    assert ch07.check_2(None, api, "unused").state == "not attempted yet"
    assert ch07.check_2(dict.fromkeys(ch07.KEYS_2), api, "unused").state == "not attempted yet"
    for shape in (
        {"finishes": "yes", "fewest Ready": 2, "first to go": "not Ready"},
        {"finishes": True, "fewest Ready": True, "first to go": "not Ready"},
        {"finishes": True, "fewest Ready": 2, "first to go": "the broken one"},
        {"finishes": True, "fewest Ready": 2},
    ):
        verdict = ch07.check_2(shape, api, "unused")
        assert verdict.state == "wrong" and "answer_2 should be" in verdict.detail, shape


@pytest.mark.cluster
def test_exercise_2_a_rollout_that_starts_short(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """The chapter printed "at least 3 stay Ready" for these limits: copied, that is wrong; a
    rollout that waits for the broken Pod is wrong; a Ready Pod first is wrong. The hints say
    why without giving the number. The solution is right, also after Run All."""
    printed = {"finishes": True, "fewest Ready": 3, "first to go": "not Ready"}
    verdict = ch07.check_2(printed, api, chapter_namespace)
    assert verdict.state == "wrong" and "fewest Ready" in verdict.detail, verdict
    assert "2" not in verdict.detail, "the hint does not give the number away"
    stuck = {"finishes": False, "fewest Ready": 2, "first to go": "not Ready"}
    verdict = ch07.check_2(stuck, api, chapter_namespace)
    assert verdict.state == "wrong" and "it did finish" in verdict.detail, verdict
    ready_first = {"finishes": True, "fewest Ready": 2, "first to go": "Ready"}
    verdict = ch07.check_2(ready_first, api, chapter_namespace)
    assert verdict.state == "wrong" and "first to go" in verdict.detail, verdict
    namespaces.delete_namespace(api, chapter_namespace)
    verdict = ch07.check_2(solutions.answer_2, api, chapter_namespace)
    assert verdict.correct, verdict


@pytest.mark.cluster
def test_exercise_3_be_the_scheduler(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    assert ch07.check_3(None, api, chapter_namespace).state == "not attempted yet"

    def patch_node(core: kubernetes.client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
        """What the usual account says the scheduler does: update the Pod."""
        core.patch_namespaced_pod(pod, namespace, {"spec": {"nodeName": node}})

    verdict = ch07.check_3(patch_node, api, chapter_namespace)
    assert verdict.state == "wrong" and "refused" in verdict.detail, verdict

    def recreate(core: kubernetes.client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
        """Another way around the Binding: a new Pod of the same name, made with the node."""
        old = core.read_namespaced_pod(pod, namespace)
        core.delete_namespaced_pod(pod, namespace, grace_period_seconds=0)
        body = {"metadata": {"name": pod}, "spec": {"nodeName": node, "containers": [
            {"name": c.name, "image": c.image} for c in old.spec.containers]}}  # fmt: skip
        for _ in range(100):  # until the old one's name is free again
            try:
                core.create_namespaced_pod(namespace, body)
                return
            except kubernetes.client.exceptions.ApiException as err:
                if err.status != 409:
                    raise

    verdict = ch07.check_3(recreate, api, chapter_namespace)
    assert verdict.state == "wrong" and "another Pod" in verdict.detail, verdict

    def broken(core: kubernetes.client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
        raise RuntimeError("not yet")

    assert "raised RuntimeError" in ch07.check_3(broken, api, chapter_namespace).detail
    namespaces.delete_namespace(api, chapter_namespace)
    verdict = ch07.check_3(solutions.bind, api, chapter_namespace)
    assert verdict.correct, verdict


@pytest.mark.cluster
def test_exercise_3_the_generated_binding_call_binds_and_is_told_why_it_raised(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """The obvious create_namespaced_pod_binding binds the Pod and then raises ValueError: the
    API server answers with a Status, which the client reads as a V1Binding. The check used to
    call that wrong."""

    def generated(core: kubernetes.client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
        body = {"metadata": {"name": pod}, "target": {"kind": "Node", "name": node}}
        core.create_namespaced_pod_binding(pod, namespace, body)

    verdict = ch07.check_3(generated, api, chapter_namespace)
    assert verdict.correct and "ValueError" in verdict.detail, verdict
    assert "_preload_content=False" in verdict.detail


@pytest.mark.cluster
def test_exercise_3_a_bind_that_binds_nothing_is_wrong_within_seconds(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """It used to wait 60 s in silence and end in a CourseError (the check caught TimeoutError,
    wait_for raises CourseError)."""

    def nothing(core: kubernetes.client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
        core.read_namespaced_pod(pod, namespace)

    def elsewhere(core: kubernetes.client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
        nodes = sorted(n.metadata.name for n in core.list_node().items)
        solutions.bind(core, namespace, pod, nodes[0])

    for wrong_bind, says in ((nothing, "has no node"), (elsewhere, "is on")):
        started = time.monotonic()
        verdict = ch07.check_3(wrong_bind, api, chapter_namespace)
        assert verdict.state == "wrong" and says in verdict.detail, verdict
        assert time.monotonic() - started < 10


def replica_change(at: float, name: str, field: str, after: str) -> Change:
    """A recorded ReplicaSet change; its state holds spec.replicas as the recorder reports it."""
    replicas = after.removeprefix("spec.replicas=")
    state = (("spec.replicas", replicas),) if replicas else ()
    return Change(at, "ReplicaSet", name, field, "", after, None, "", None, state)


def test_a_strategy_is_judged_by_the_replicas_asked_not_by_a_late_delete() -> None:
    before = [replica_change(0.0, "web-old", "created", "spec.replicas=4")]
    careful = [
        *before,
        replica_change(1.1, "web-old", "spec.replicas", "3"),
        replica_change(1.2, "web-new", "created", "spec.replicas=1"),
        replica_change(1.5, "web-old", "spec.replicas", "2"),
        replica_change(1.6, "web-new", "spec.replicas", "2"),
    ]
    assert max(replicas_asked(careful, since=1.0)[1]) == 4
    surging = [*before, replica_change(1.1, "web-new", "created", "spec.replicas=1")]
    assert max(replicas_asked(surging, since=1.0)[1]) == 5
    gone = [*careful, replica_change(2.0, "web-old", "deleted", "")]
    assert replicas_asked(gone, since=1.9)[1] == [2]
