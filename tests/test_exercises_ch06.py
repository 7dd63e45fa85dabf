"""Chapter 06's exercise checks (06a: check_1, check_2; 06b: check_3, check_4) say "not
attempted", "wrong" and "correct" when they should, say "wrong" to answers copied from what the
chapters printed and to other cheats, and every stored solution passes its check (check_1 and
check_3 against the real cluster: each runs a controller with the learner's function), also
after Run All has deleted the chapter's namespace."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from helpers import namespaces
from helpers.controller import new_deployment
from helpers.exercises import ch06
from notebooks.solutions import ch06 as solutions


@pytest.fixture
def chapter_namespace(api: kubernetes.client.ApiClient) -> Iterator[str]:
    """A namespace the course made (its labels say so), as a chapter's: checks may bring such
    a namespace back, and leave any other alone."""
    name = namespaces.fresh_namespace(api, f"t-ch06-{uuid.uuid4().hex[:6]}")
    yield name
    namespaces.delete_namespace(api, name)


# --- 06a, exercise 1 ------------------------------------------------------------------------------


def test_exercise_06a_1_offline_mistakes(api: kubernetes.client.ApiClient) -> None:
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
def test_exercise_06a_1_repairs_drift_on_the_cluster(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    verdict = ch06.check_1(solutions.needs_update, api, chapter_namespace)
    assert verdict.correct, verdict


@pytest.mark.cluster
def test_exercise_06a_1_comparing_whole_specs_is_caught_on_the_cluster(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """Whole specs agree on the check's offline objects, and never on the cluster, where the API
    server has added its defaults: every sync updates a Deployment that did not drift."""

    def whole_spec(foo: dict[str, Any], deployment: dict[str, Any]) -> bool:
        return new_deployment(foo)["spec"] != deployment["spec"]

    verdict = ch06.check_1(whole_spec, api, chapter_namespace)
    assert verdict.state == "wrong" and "had not drifted" in verdict.detail, verdict


@pytest.mark.cluster
def test_exercise_06a_1_brings_back_the_namespace_run_all_deleted(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """After Run All the chapter's last cell has deleted its namespace: a right answer is
    still judged right (chapter 06 used to answer with a bare 404)."""
    namespaces.delete_namespace(api, chapter_namespace)
    verdict = ch06.check_1(solutions.needs_update, api, chapter_namespace)
    assert verdict.correct, verdict


# --- 06b, exercise 1 ------------------------------------------------------------------------------


def test_exercise_06b_1_offline_mistakes(api: kubernetes.client.ApiClient) -> None:
    assert ch06.check_3(None, api, "unused").state == "not attempted yet"

    def always(old: dict[str, Any], new: dict[str, Any]) -> bool:
        """What the chapter's controllers do: every update wakes them (and runs away)."""
        return True

    verdict = ch06.check_3(always, api, "unused")
    assert verdict.state == "wrong" and "status alone changed" in verdict.detail

    def spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Plausible, and deaf to a deletion that finalizers hold (its spec does not change)."""
        return old.get("spec") != new.get("spec")

    verdict = ch06.check_3(spec_changed, api, "unused")
    assert verdict.state == "wrong" and "being deleted" in verdict.detail

    def generation_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
        """controller-runtime's GenerationChangedPredicate, which the chapter names: it stops the
        loop, and leaves a status someone else wrote by hand wrong for good."""
        return old["metadata"].get("generation") != new["metadata"].get("generation")

    verdict = ch06.check_3(generation_changed, api, "unused")
    assert verdict.state == "wrong" and "by hand" in verdict.detail

    def mutating(old: dict[str, Any], new: dict[str, Any]) -> bool:
        new["metadata"]["seen"] = True
        return old["metadata"]["generation"] != new["metadata"]["generation"]

    assert "read-only" in ch06.check_3(mutating, api, "unused").detail


@pytest.mark.cluster
def test_exercise_06b_1_a_runaway_on_the_cluster_is_caught_there(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """A function that behaves on the check's offline objects (namespace "ns") and lets every
    update through on the cluster: only running it shows the loop."""

    def sneaky(old: dict[str, Any], new: dict[str, Any]) -> bool:
        if new["metadata"]["namespace"] == "ns":
            return solutions.wakes(old, new)
        return True

    verdict = ch06.check_3(sneaky, api, chapter_namespace)
    assert verdict.state == "wrong" and "kept syncing" in verdict.detail, verdict


@pytest.mark.cluster
def test_exercise_06b_1_solution_also_after_run_all(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    namespaces.delete_namespace(api, chapter_namespace)
    verdict = ch06.check_3(solutions.wakes, api, chapter_namespace)
    assert verdict.correct, verdict


# --- 06a, exercise 2, and 06b, exercise 2 ---------------------------------------------------------


class Anything(str):
    """An answer that claims to equal every other one."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


def test_exercise_06a_2_needs_both_limiters() -> None:
    """What the chapter printed (the small bucket's 0.2 s, the first retries' 5 ms), the old
    exercise's answer (10.24 s alone), the bound without the burst (8 s), the bucket named for
    the 12th delay, and answers that claim to equal anything: all wrong."""
    assert ch06.check_2(None).state == "not attempted yet"
    for cheat in [
        "b",
        (0.2, "bucket"),
        (0.005, "per-item"),
        (10.24, "per-item"),
        (8.0, "per-item"),
        (2.0, "bucket"),
        (2.0, "per item"),
        (True, "per-item"),
        (2.0, Anything("x")),
        Anything("x"),
        [2.0],
    ]:
        verdict = ch06.check_2(cheat)  # type: ignore[arg-type]
        assert verdict.state == "wrong", (cheat, verdict)
    verdict = ch06.check_2((2.0, "bucket"))
    assert "10.24" not in verdict.detail and "8" not in verdict.detail.split("Foos")[0], verdict
    assert ch06.check_2((0.2, "per-item")).detail.startswith("the last first retry")
    assert ch06.check_2(solutions.prediction).correct
    assert ch06.check_2([2, "per-item"]).correct  # a list, and whole seconds, are fine


def test_exercise_06a_2_the_bucket_never_waits_longer_than_its_line() -> None:
    """The check's own numbers: 100 Foos beyond the burst of 300, the last waiting 2 s; after
    Foo #1's 12th failure the per-item 10.24 s beats the bucket's 8 s (400 places at 50/s)."""
    first, per_item, shared = ch06.limiters_3()
    assert max(first) == pytest.approx(2.0) and sum(d > 0.005 for d in first) == 100
    assert per_item == pytest.approx(10.24) and shared <= 400 / 50 + 1e-9


def test_exercise_06b_2_the_409s_are_not_the_answer() -> None:
    """The chapter printed that every stale read of its own failed with 409: the syncs that met
    a 409 (b and e) are wrong, and so is the stale read that met none (d) left out. The old
    table's answer, remembered, is wrong too (the syncs are lettered in the order they started)."""
    assert ch06.check_4(None).state == "not attempted yet"
    assert ch06.check_4({"z"}).state == "wrong"
    verdict = ch06.check_4({"b", "e"})
    assert verdict.state == "wrong" and "someone else" in verdict.detail
    verdict = ch06.check_4({"b"})
    assert verdict.state == "wrong" and "d is missing" in verdict.detail
    assert ch06.check_4(set("abcde")).state == "wrong"
    assert ch06.check_4(solutions.stale_letters).correct


def test_exercise_06b_2_letters_follow_the_order_the_syncs_started() -> None:
    starts = [started for _, started, _ in ch06.SYNCS_4.values()]
    assert list(ch06.SYNCS_4) == sorted(ch06.SYNCS_4) and starts == sorted(starts)
