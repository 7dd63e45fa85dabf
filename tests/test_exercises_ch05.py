"""Chapter 05's exercise checks say "not attempted", "wrong" and "correct" when they should,
and every stored solution passes its check (3 and 4 against the real cluster)."""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from helpers.controller import controller_of, new_deployment
from helpers.exercises import ch05
from helpers.lister import Lister
from notebooks.solutions import ch05 as solutions


def test_exercise_1_owner_lookup() -> None:
    assert ch05.check_1(None).state == "not attempted yet"

    def first_owner(obj: Any, foos_lister: Lister) -> str | None:
        """Plausible and wrong: the first owner reference, no tombstones, no orphan check."""
        owner = obj["metadata"]["ownerReferences"][0]
        return f"{obj['metadata']['namespace']}/{owner['name']}"

    verdict = ch05.check_1(first_owner)
    assert verdict.state == "wrong" and "raised" in verdict.detail  # the tombstone

    def no_orphan_check(obj: Any, foos_lister: Lister) -> str | None:
        obj = getattr(obj, "obj", obj)
        owner = controller_of(obj)
        if owner is None or owner["kind"] != "Foo":
            return None
        return f"{obj['metadata']['namespace']}/{owner['name']}"

    verdict = ch05.check_1(no_orphan_check)
    assert verdict.state == "wrong" and "gone" in verdict.detail

    assert ch05.check_1(solutions.foo_key_for).correct


def test_exercise_2_labels() -> None:
    assert ch05.check_2(None).state == "not attempted yet"

    def everywhere(foo: Any) -> dict[str, Any]:
        """Plausible and wrong: the labels in the selector and the Pod template too."""
        deployment = new_deployment(foo)
        labels = foo["metadata"].get("labels") or {}
        deployment["metadata"]["labels"] = dict(labels)
        deployment["spec"]["selector"]["matchLabels"].update(labels)
        deployment["spec"]["template"]["metadata"]["labels"].update(labels)
        return deployment

    verdict = ch05.check_2(everywhere)
    assert verdict.state == "wrong" and "selector" in verdict.detail

    def shares_the_foos_dict(foo: Any) -> dict[str, Any]:
        """Wrong in a quieter way: it writes into the Foo's own labels."""
        deployment = new_deployment(foo)
        labels = foo["metadata"].setdefault("labels", {})
        deployment["metadata"]["labels"] = labels
        return deployment

    verdict = ch05.check_2(shares_the_foos_dict)
    assert verdict.state == "wrong" and "changed the Foo" in verdict.detail

    assert ch05.check_2(new_deployment).state == "wrong"
    assert ch05.check_2(solutions.labelled_deployment).correct


@pytest.mark.cluster
def test_exercise_3_two_foos_one_deployment(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    assert ch05.check_3(None, api, namespace).state == "not attempted yet"
    assert ch05.check_3("e", api, namespace).state == "wrong"
    verdict = ch05.check_3("a", api, namespace)
    assert verdict.state == "wrong" and "is_controlled_by" in verdict.detail
    verdict = ch05.check_3(solutions.answer_3, api, namespace)
    assert verdict.correct
    assert "ErrResourceExists" in verdict.detail and '"shared"' in verdict.detail


@pytest.mark.cluster
def test_exercise_4_status_from_the_lister(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    assert ch05.check_4(None, api, namespace).state == "not attempted yet"

    custom = kubernetes.client.CustomObjectsApi(api)

    def from_the_api(foos_lister: Lister, ns: str) -> dict[str, int]:
        """Right numbers, wrong source."""
        listed = custom.list_namespaced_custom_object(
            "samplecontroller.k8s.io", "v1alpha1", ns, "foos"
        )
        return {
            item["metadata"]["name"]: (item.get("status") or {}).get("availableReplicas", 0)
            for item in listed["items"]
        }

    verdict = ch05.check_4(from_the_api, api, namespace)
    assert verdict.state == "wrong" and "request" in verdict.detail

    def only_with_status(foos_lister: Lister, ns: str) -> dict[str, int]:
        return {
            foo["metadata"]["name"]: foo["status"]["availableReplicas"]
            for foo in foos_lister.namespace(ns).list()
            if "status" in foo
        }

    verdict = ch05.check_4(only_with_status, api, namespace)
    assert verdict.state == "wrong" and "exercise-4-new" in verdict.detail

    assert ch05.check_4(solutions.available_replicas, api, namespace).correct
