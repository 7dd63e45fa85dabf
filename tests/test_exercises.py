"""Every exercise check says "not attempted", "wrong" and "correct" when it should,
and every stored solution passes its check, against the real cluster."""

from __future__ import annotations

import kubernetes
import pytest

from helpers.exercises import ch00
from notebooks.solutions import ch00 as solutions00

pytestmark = pytest.mark.cluster


def test_ch00_exercise_1(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch00.check_1(api, namespace).state == "not attempted yet"
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "exercise-1"}, "data": {"answer": "41"}}
    )
    verdict = ch00.check_1(api, namespace)
    assert verdict.state == "wrong" and "41" in verdict.detail
    core.delete_namespaced_config_map("exercise-1", namespace)
    solutions00.solve_1(api, namespace)
    assert ch00.check_1(api, namespace).correct


def test_ch00_exercise_2(api: kubernetes.client.ApiClient) -> None:
    assert ch00.check_2(None, api).state == "not attempted yet"
    assert ch00.check_2("/api/v1/namespaces/shop/deployments/web", api).state == "wrong"
    assert ch00.check_2(solutions00.answer_2, api).correct


def test_ch00_exercise_3(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch00.check_3(api, namespace).state == "not attempted yet"
    solutions00.solve_3(api, namespace)
    assert ch00.check_3(api, namespace).correct
    kubernetes.client.CustomObjectsApi(api).patch_namespaced_custom_object(
        "samplecontroller.k8s.io", "v1alpha1", namespace, "foos", "exercise-foo",
        {"spec": {"replicas": 2}},
    )  # fmt: skip
    verdict = ch00.check_3(api, namespace)
    assert verdict.state == "wrong" and "replicas" in verdict.detail
