"""Chapter 06's exercise checks say "not attempted", "wrong" and "correct" when they should,
and every stored solution passes its check (exercises 1 and 2 against the real cluster: each
check runs a controller with the learner's function)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import kubernetes
import pytest

from helpers.exercises import ch06
from helpers.reconcile import extend_foo_status, restore_foo_status
from notebooks.solutions import ch06 as solutions


@pytest.fixture
def extended(api: kubernetes.client.ApiClient) -> Iterator[None]:
    """The Foo CRD with the two status fields chapter 06 adds, as its checks expect."""
    extend_foo_status(api)
    yield
    restore_foo_status(api)


def test_exercise_1_offline_mistakes(api: kubernetes.client.ApiClient) -> None:
    """Wrong answers are caught before anything runs on the cluster."""
    assert ch06.check_1(None, api, "unused").state == "not attempted yet"

    def replicas_only(foo: dict[str, Any], deployment: dict[str, Any]) -> bool:
        return foo["spec"]["replicas"] != deployment["spec"]["replicas"]

    verdict = ch06.check_1(replicas_only, api, "unused")
    assert verdict.state == "wrong" and "nginx:1.27" in verdict.detail

    def always(foo: dict[str, Any], deployment: dict[str, Any]) -> bool:
        return True

    verdict = ch06.check_1(always, api, "unused")
    assert verdict.state == "wrong" and "exactly as the Foo asks" in verdict.detail

    def broken(foo: dict[str, Any], deployment: dict[str, Any]) -> bool:
        return deployment["spec"]["nope"]

    assert "raised KeyError" in ch06.check_1(broken, api, "unused").detail


@pytest.mark.cluster
def test_exercise_1_repairs_drift_on_the_cluster(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    verdict = ch06.check_1(solutions.needs_update, api, namespace)
    assert verdict.correct, verdict


def test_exercise_2_offline_mistakes(api: kubernetes.client.ApiClient) -> None:
    assert ch06.check_2(None, api, "unused").state == "not attempted yet"

    def always_none(foo: dict[str, Any], deployment: dict[str, Any]) -> None:
        return None

    assert "no status yet" in ch06.check_2(always_none, api, "unused").detail

    def no_generation(foo: dict[str, Any], deployment: dict[str, Any]) -> dict[str, Any]:
        return {"availableReplicas": deployment["status"]["availableReplicas"]}

    assert "generation 3" in ch06.check_2(no_generation, api, "unused").detail


def stamped(foo: dict[str, Any], deployment: dict[str, Any]) -> dict[str, Any] | None:
    """The runaway of the chapter: the two fields, and the time of the sync."""
    status = solutions.careful_status(foo, deployment) or dict(foo.get("status") or {})
    return {**status, "lastSyncTime": datetime.now(UTC).isoformat().replace("+00:00", "Z")}


def test_exercise_2_a_time_in_the_status_is_caught_before_the_cluster(
    api: kubernetes.client.ApiClient,
) -> None:
    verdict = ch06.check_2(stamped, api, "unused")
    assert verdict.state == "wrong" and "already has that status" in verdict.detail


@pytest.mark.cluster
def test_exercise_2_a_runaway_on_the_cluster_is_caught_there(
    api: kubernetes.client.ApiClient, namespace: str, extended: None
) -> None:
    """A function that behaves on the check's offline objects (namespace "ns") and stamps the
    time on the cluster: only running it shows the loop."""

    def sneaky(foo: dict[str, Any], deployment: dict[str, Any]) -> dict[str, Any] | None:
        if foo["metadata"]["namespace"] == "ns":
            return solutions.careful_status(foo, deployment)
        return stamped(foo, deployment)

    verdict = ch06.check_2(sneaky, api, namespace)
    assert verdict.state == "wrong" and "kept writing" in verdict.detail, verdict


@pytest.mark.cluster
def test_exercise_2_solution(
    api: kubernetes.client.ApiClient, namespace: str, extended: None
) -> None:
    verdict = ch06.check_2(solutions.careful_status, api, namespace)
    assert verdict.correct, verdict


def test_exercise_3() -> None:
    assert ch06.check_3(None).state == "not attempted yet"
    assert ch06.check_3("e").state == "wrong"
    verdict = ch06.check_3("a")
    assert verdict.state == "wrong" and "10.24 s" in verdict.detail
    assert ch06.check_3(solutions.answer_3).correct
