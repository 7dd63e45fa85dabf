"""helpers.waiting.wait_for follows a watch until a condition holds, for typed and custom lists."""

from __future__ import annotations

import threading

import kubernetes
import pytest

from helpers.errors import CourseError
from helpers.waiting import wait_for

pytestmark = pytest.mark.cluster

FOO = {"group": "samplecontroller.k8s.io", "version": "v1alpha1", "plural": "foos"}


def foo(name: str) -> dict[str, object]:
    return {
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": name},
        "spec": {"deploymentName": name, "replicas": 1},
    }


def test_custom_objects_already_there(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """A raw (dict) list answer: objects by name, as plain dicts."""
    custom = kubernetes.client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(namespace=namespace, body=foo("there"), **FOO)

    objects = wait_for(
        custom.list_namespaced_custom_object,
        lambda foos: "there" in foos,
        what="Foo there",
        timeout=10,
        namespace=namespace,
        **FOO,
    )

    assert objects["there"]["spec"] == {"deploymentName": "there", "replicas": 1}


def test_custom_objects_followed_by_watch(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """The condition turns true only through a change made after the list: seen on the watch."""
    custom = kubernetes.client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(namespace=namespace, body=foo("later"), **FOO)
    listed = threading.Event()

    def list_then_signal(**kwargs: object) -> object:
        result = custom.list_namespaced_custom_object(**kwargs)
        if not kwargs.get("watch"):
            listed.set()
        return result

    def write_status() -> None:
        listed.wait(10)
        current = custom.get_namespaced_custom_object(namespace=namespace, name="later", **FOO)
        current["status"] = {"availableReplicas": 1}
        custom.replace_namespaced_custom_object_status(
            namespace=namespace, name="later", body=current, **FOO
        )

    writer = threading.Thread(target=write_status, name="status-writer")
    writer.start()
    try:
        objects = wait_for(
            list_then_signal,
            lambda foos: (foos["later"].get("status") or {}).get("availableReplicas") == 1,
            what="Foo later to report 1 available replica",
            timeout=10,
            namespace=namespace,
            **FOO,
        )
    finally:
        writer.join(10)

    assert objects["later"]["status"] == {"availableReplicas": 1}


def test_typed_lists_still_work_and_time_out_with_a_sentence(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)

    with pytest.raises(CourseError, match="Timed out after 1s waiting for a ConfigMap never"):
        wait_for(
            core.list_namespaced_config_map,
            lambda configmaps: "never" in configmaps,
            what="a ConfigMap never",
            timeout=1,
            namespace=namespace,
        )
