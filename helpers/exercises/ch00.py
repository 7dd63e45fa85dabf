"""Checks for chapter 00's exercises (setup and a tour of the API)."""

from __future__ import annotations

import contextlib

import kubernetes
from kubernetes.client.exceptions import ApiException

from ..request_log import RequestLog
from . import Verdict, correct, not_attempted, wrong

FOO_GROUP, FOO_VERSION, FOO_PLURAL = "samplecontroller.k8s.io", "v1alpha1", "foos"


def check_1(api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """A ConfigMap ``exercise-1`` whose data is exactly {"answer": "42"}."""
    try:
        config_map = kubernetes.client.CoreV1Api(api).read_namespaced_config_map(
            "exercise-1", namespace
        )
    except ApiException as exc:
        if exc.status == 404:
            return not_attempted("1", f"no ConfigMap 'exercise-1' in namespace {namespace} yet")
        raise
    data = config_map.data or {}
    if data != {"answer": "42"}:
        return wrong("1", f"its data is {data}, not {{'answer': '42'}}")
    return correct("1")


def check_2(answer: str | None, api: kubernetes.client.ApiClient) -> Verdict:
    """The request path for reading Deployment ``web`` in namespace ``shop``."""
    if not answer:
        return not_attempted("2", "set answer_2 to a path such as '/api/v1/...'")
    # Ask the client itself which path it uses, so the check cannot drift from it.
    # A 404 is expected (there is no such Deployment): only the path matters.
    with RequestLog(api) as log, contextlib.suppress(ApiException):
        kubernetes.client.AppsV1Api(api).read_namespaced_deployment("web", "shop")
    expected = log.requests[0].path
    if answer.strip().rstrip("/") != expected:
        return wrong("2", f"{answer!r} is not the path the client requests")
    return correct("2", expected)


def check_3(api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """A Foo ``exercise-foo`` asking for 3 replicas of Deployment ``exercise-web``."""
    custom = kubernetes.client.CustomObjectsApi(api)
    try:
        foo = custom.get_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, "exercise-foo"
        )
    except ApiException as exc:
        if exc.status == 404:
            return not_attempted("3", f"no Foo 'exercise-foo' in namespace {namespace} yet")
        raise
    spec = foo.get("spec") or {}
    if spec.get("deploymentName") != "exercise-web":
        return wrong("3", f"spec.deploymentName is {spec.get('deploymentName')!r}")
    if spec.get("replicas") != 3:
        return wrong("3", f"spec.replicas is {spec.get('replicas')!r}, not 3")
    return correct("3")
