"""Solutions to chapter 00's exercises. Try them yourself first!"""

from __future__ import annotations

import kubernetes


def solve_1(api: kubernetes.client.ApiClient, namespace: str) -> None:
    kubernetes.client.CoreV1Api(api).create_namespaced_config_map(
        namespace, {"metadata": {"name": "exercise-1"}, "data": {"answer": "42"}}
    )


answer_2 = "/apis/apps/v1/namespaces/shop/deployments/web"


def solve_3(api: kubernetes.client.ApiClient, namespace: str) -> None:
    kubernetes.client.CustomObjectsApi(api).create_namespaced_custom_object(
        "samplecontroller.k8s.io", "v1alpha1", namespace, "foos",
        {
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"name": "exercise-foo"},
            "spec": {"deploymentName": "exercise-web", "replicas": 3},
        },
    )  # fmt: skip
