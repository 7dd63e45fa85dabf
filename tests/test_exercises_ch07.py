"""Chapter 07's exercise checks say "not attempted", "wrong" and "correct" when they should,
say "wrong" to answers copied from what the chapter printed, never blame a right answer for a
namespace that Run All deleted, and every stored solution passes its check (against the real
cluster: each check runs and records what it asks about)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import kubernetes
import pytest

from helpers import namespaces
from helpers.chain import Change, replicas_asked
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


@pytest.mark.cluster
def test_exercise_2_a_strategy_within_limits(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    assert ch07.check_2(None, api, chapter_namespace).state == "not attempted yet"
    assert ch07.check_2({"maxSurge": 1}, api, chapter_namespace).state == "wrong"

    refused = ch07.check_2({"maxSurge": 0, "maxUnavailable": 0}, api, chapter_namespace)
    assert refused.state == "wrong" and "refused" in refused.detail

    # What the chapter printed: the default 25% / 25% (a surge of one Pod for 4 replicas).
    printed = ch07.check_2({"maxSurge": "25%", "maxUnavailable": "25%"}, api, chapter_namespace)
    assert printed.state == "wrong" and "asked for 5 Pods" in printed.detail, printed

    careless = ch07.check_2({"maxSurge": 0, "maxUnavailable": 2}, api, chapter_namespace)
    assert careless.state == "wrong" and "Ready at one point" in careless.detail

    assert ch07.check_2({"maxSurge": "0%", "maxUnavailable": "25%"}, api, chapter_namespace).correct


@pytest.mark.cluster
def test_exercise_2_a_right_answer_after_run_all_is_not_blamed(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """Run All's last cell deletes the namespace; the check used to say "the API server refused
    that strategy: namespaces ... not found"."""
    namespaces.delete_namespace(api, chapter_namespace)
    verdict = ch07.check_2(solutions.strategy_2, api, chapter_namespace)
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
