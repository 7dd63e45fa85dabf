"""Chapter 08's exercise checks say "not attempted", "wrong" and "correct" when they should,
and every stored solution passes its check (3 against the real cluster)."""

from __future__ import annotations

from collections.abc import Mapping

import kubernetes
import pytest

from helpers.exercises import ch08
from notebooks.solutions import ch08 as solutions


def test_exercise_1_failover_prediction() -> None:
    assert ch08.check_1(None).state == "not attempted yet"
    for wrong_answer in ("a", "c", "d"):
        assert ch08.check_1(wrong_answer).state == "wrong"
    assert ch08.check_1("z").state == "wrong"
    assert ch08.check_1(solutions.answer_1).correct


def test_exercise_2_rbac_verbs() -> None:
    assert ch08.check_2(None).state == "not attempted yet"

    def by_method_only(method: str, path: str, query: Mapping[str, str]) -> tuple[str, str]:
        """Plausible and wrong: GET is always get, and the group is forgotten."""
        verb = {"GET": "get", "POST": "create", "PUT": "update"}.get(method, method.lower())
        return verb, path.rstrip("/").split("/")[-1]

    verdict = ch08.check_2(by_method_only)
    assert verdict.state == "wrong" and "needs ('list', 'foos.samplecontroller.k8s.io')" in (
        verdict.detail
    )

    def no_subresource(method: str, path: str, query: Mapping[str, str]) -> tuple[str, str]:
        verb, resource = solutions.rbac_verb(method, path, query)
        return verb, resource.replace("/status", "")

    verdict = ch08.check_2(no_subresource)
    assert verdict.state == "wrong" and "foos/status" in verdict.detail

    def raises(method: str, path: str, query: Mapping[str, str]) -> tuple[str, str]:
        raise KeyError(path)

    assert "raised KeyError" in ch08.check_2(raises).detail
    assert ch08.check_2(solutions.rbac_verb).correct


@pytest.mark.cluster
def test_exercise_3_finalizer_prediction(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch08.check_3(None, api, namespace).state == "not attempted yet"
    verdict = ch08.check_3("a", api, namespace)
    assert verdict.state == "wrong" and "deletionTimestamp" in verdict.detail
    assert ch08.check_3(solutions.answer_3, api, namespace).correct
    # Each check cleaned up after itself: the Foo is gone.
    foos = kubernetes.client.CustomObjectsApi(api).list_namespaced_custom_object(
        "samplecontroller.k8s.io", "v1alpha1", namespace, "foos"
    )
    assert foos["items"] == []
