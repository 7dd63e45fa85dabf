"""Chapter 06's exercise checks say "not attempted", "wrong" and "correct" when they should,
say "wrong" to answers copied from what the chapter printed, and every stored solution passes
its check (exercises 1 and 2 against the real cluster: each check runs a controller with the
learner's function), also after Run All has deleted the chapter's namespace."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from helpers import namespaces
from helpers.exercises import ch06
from notebooks.solutions import ch06 as solutions


@pytest.fixture
def chapter_namespace(api: kubernetes.client.ApiClient) -> Iterator[str]:
    """A namespace the course made (its labels say so), as a chapter's: checks may bring such
    a namespace back, and leave any other alone."""
    name = namespaces.fresh_namespace(api, f"t-ch06-{uuid.uuid4().hex[:6]}")
    yield name
    namespaces.delete_namespace(api, name)


# --- exercise 1 -----------------------------------------------------------------------------------


def test_exercise_1_offline_mistakes(api: kubernetes.client.ApiClient) -> None:
    """Wrong answers are caught before anything runs on the cluster."""
    assert ch06.check_1(None, api, "unused").state == "not attempted yet"

    def replicas_only(foo: dict[str, Any], deployment: dict[str, Any]) -> bool:
        """What the chapter's sync_handler compares (and printed: only replicas repaired)."""
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
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    verdict = ch06.check_1(solutions.needs_update, api, chapter_namespace)
    assert verdict.correct, verdict


@pytest.mark.cluster
def test_exercise_1_brings_back_the_namespace_run_all_deleted(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """After Run All the chapter's last cell has deleted its namespace: a right answer is
    still judged right (chapter 06 used to answer with a bare 404)."""
    namespaces.delete_namespace(api, chapter_namespace)
    verdict = ch06.check_1(solutions.needs_update, api, chapter_namespace)
    assert verdict.correct, verdict


# --- exercise 2 -----------------------------------------------------------------------------------


def test_exercise_2_offline_mistakes(api: kubernetes.client.ApiClient) -> None:
    assert ch06.check_2(None, api, "unused").state == "not attempted yet"

    def always(old: dict[str, Any], new: dict[str, Any]) -> bool:
        """What the chapter's controllers do: every update wakes them (and runs away)."""
        return True

    verdict = ch06.check_2(always, api, "unused")
    assert verdict.state == "wrong" and "status alone changed" in verdict.detail

    def spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Plausible, and deaf to a deletion that finalizers hold (its spec does not change)."""
        return old.get("spec") != new.get("spec")

    verdict = ch06.check_2(spec_changed, api, "unused")
    assert verdict.state == "wrong" and "being deleted" in verdict.detail

    def mutating(old: dict[str, Any], new: dict[str, Any]) -> bool:
        new["metadata"]["seen"] = True
        return old["metadata"]["generation"] != new["metadata"]["generation"]

    assert "read-only" in ch06.check_2(mutating, api, "unused").detail


@pytest.mark.cluster
def test_exercise_2_a_runaway_on_the_cluster_is_caught_there(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """A function that behaves on the check's offline objects (namespace "ns") and lets every
    update through on the cluster: only running it shows the loop."""

    def sneaky(old: dict[str, Any], new: dict[str, Any]) -> bool:
        if new["metadata"]["namespace"] == "ns":
            return solutions.wakes(old, new)
        return True

    verdict = ch06.check_2(sneaky, api, chapter_namespace)
    assert verdict.state == "wrong" and "kept syncing" in verdict.detail, verdict


@pytest.mark.cluster
def test_exercise_2_solution_also_after_run_all(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    namespaces.delete_namespace(api, chapter_namespace)
    verdict = ch06.check_2(solutions.wakes, api, chapter_namespace)
    assert verdict.correct, verdict


# --- exercises 3 and 4 ----------------------------------------------------------------------------


def test_exercise_3() -> None:
    assert ch06.check_3(None).state == "not attempted yet"
    assert ch06.check_3("e").state == "wrong"
    verdict = ch06.check_3("a")
    assert verdict.state == "wrong" and "10.24 s" in verdict.detail
    assert ch06.check_3("c").state == "wrong"  # the bucket's pace: the chapter's 0.2 s, scaled
    assert ch06.check_3(solutions.answer_3).correct


def test_exercise_4_the_409s_are_not_the_answer() -> None:
    """The chapter printed that every stale read of its own failed with 409: the syncs that met
    a 409 (b and d) are wrong, and so is the stale read that met none (e) left out."""
    assert ch06.check_4(None).state == "not attempted yet"
    assert ch06.check_4({"z"}).state == "wrong"
    verdict = ch06.check_4({"b", "d"})
    assert verdict.state == "wrong" and "someone else" in verdict.detail
    verdict = ch06.check_4({"b"})
    assert verdict.state == "wrong" and "e is missing" in verdict.detail
    assert ch06.check_4(solutions.answer_4).correct
