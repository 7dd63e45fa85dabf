"""Chapter 07's exercise checks say "not attempted", "wrong" and "correct" when they should,
and every stored solution passes its check (against the real cluster: each check runs and
records a Deployment of its own)."""

from __future__ import annotations

import kubernetes
import pytest

from helpers.chain import Change
from helpers.exercises import ch07
from notebooks.solutions import ch07 as solutions


@pytest.mark.cluster
def test_exercise_1_who_writes_what(api: kubernetes.client.ApiClient, namespace: str) -> None:
    empty = dict.fromkeys(solutions.answer_1)
    assert ch07.check_1(None, api, namespace).state == "not attempted yet"
    assert ch07.check_1(empty, api, namespace).state == "not attempted yet"

    unknown = solutions.answer_1 | {("Pod", "spec.nodeName"): "kube-scheduler"}
    verdict = ch07.check_1(unknown, api, namespace)
    assert verdict.state == "wrong" and "not one of the chapter's actors" in verdict.detail

    # Plausible and wrong: "the Deployment controller makes the Pods".
    swapped = solutions.answer_1 | {("Pod", "created"): "deployment-controller"}
    verdict = ch07.check_1(swapped, api, namespace)
    assert verdict.state == "wrong" and "SuccessfulCreate" in verdict.detail

    assert ch07.check_1(solutions.answer_1, api, namespace).correct


@pytest.mark.cluster
def test_exercise_2_a_strategy_within_limits(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    assert ch07.check_2(None, api, namespace).state == "not attempted yet"
    assert ch07.check_2({"maxSurge": 1}, api, namespace).state == "wrong"

    refused = ch07.check_2({"maxSurge": 0, "maxUnavailable": 0}, api, namespace)
    assert refused.state == "wrong" and "refused" in refused.detail

    surging = ch07.check_2({"maxSurge": 1, "maxUnavailable": 0}, api, namespace)
    # 5 Pods as planned; 6 when the old ReplicaSet's delete comes after the new one's create.
    assert surging.state == "wrong" and "Pods existed at one point" in surging.detail
    assert int(surging.detail.split()[0]) >= 5, surging.detail

    careless = ch07.check_2({"maxSurge": 0, "maxUnavailable": 2}, api, namespace)
    assert careless.state == "wrong" and "Ready at one point" in careless.detail

    assert ch07.check_2(solutions.strategy_2, api, namespace).correct
    assert ch07.check_2({"maxSurge": "0%", "maxUnavailable": "25%"}, api, namespace).correct


@pytest.mark.cluster
def test_exercise_3_bindings_from_the_record(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    assert ch07.check_3(None, api, namespace).state == "not attempted yet"

    def from_creation(changes: list[Change]) -> dict[str, str]:
        """Plausible and wrong: the Pods as created, before any binding."""
        return {c.name: c.after for c in changes if c.kind == "Pod" and c.field == "created"}

    verdict = ch07.check_3(from_creation, api, namespace)
    assert verdict.state == "wrong" and "which value is the node" in verdict.detail

    def nothing(changes: list[Change]) -> dict[str, str]:
        return {}

    verdict = ch07.check_3(nothing, api, namespace)
    assert verdict.state == "wrong" and "spec.nodeName" in verdict.detail

    def broken(changes: list[Change]) -> dict[str, str]:
        return {c.name: c.node for c in changes}  # type: ignore[attr-defined]

    assert "raised" in ch07.check_3(broken, api, namespace).detail
    assert ch07.check_3(solutions.bindings, api, namespace).correct


def replica_change(at: float, name: str, field: str, after: str) -> Change:
    """A recorded ReplicaSet change; its state holds spec.replicas as the recorder reports it."""
    replicas = after.removeprefix("spec.replicas=")
    state = (("spec.replicas", replicas),) if replicas else ()
    return Change(at, "ReplicaSet", name, field, "", after, None, "", None, state)


def test_the_strategy_is_judged_by_the_replicas_asked_not_by_a_late_delete() -> None:
    before = [replica_change(0.0, "web-old", "created", "spec.replicas=4")]
    careful = [
        *before,
        replica_change(1.1, "web-old", "spec.replicas", "3"),
        replica_change(1.2, "web-new", "created", "spec.replicas=1"),
        replica_change(1.5, "web-old", "spec.replicas", "2"),
        replica_change(1.6, "web-new", "spec.replicas", "2"),
    ]
    assert ch07.most_replicas_asked(careful, since=1.0) == 4
    surging = [*before, replica_change(1.1, "web-new", "created", "spec.replicas=1")]
    assert ch07.most_replicas_asked(surging, since=1.0) == 5
    gone = [*careful, replica_change(2.0, "web-old", "deleted", "")]
    assert ch07.most_replicas_asked(gone, since=1.9) == 2
