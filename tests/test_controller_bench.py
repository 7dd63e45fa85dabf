"""benchmarks/controller_bench.py's clean-up deletes Foos and Pods only in a namespace of its own.

``clear`` deletes a run's Foos, then its namespace, then its Pods (grace period
0). Pointed at a namespace the course did not make (one without
:data:`helpers.namespaces.COURSE_LABELS`), it must touch nothing in it: the
check comes before the first delete, not with the namespace's own.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from benchmarks import controller_bench
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.errors import CourseError

pytestmark = pytest.mark.cluster

POD = {"metadata": {"name": "a-pod"},
       "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}  # fmt: skip


def foos(api: kubernetes.client.ApiClient, namespace: str) -> list[str]:
    found = kubernetes.client.CustomObjectsApi(api).list_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL
    )
    return [foo["metadata"]["name"] for foo in found["items"]]


def pods(api: kubernetes.client.ApiClient, namespace: str) -> list[str]:
    found = kubernetes.client.CoreV1Api(api).list_namespaced_pod(namespace)
    return [pod.metadata.name for pod in found.items]


def fill(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """A Foo and a Pod, as a benchmark run leaves them."""
    kubernetes.client.CustomObjectsApi(api).create_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("a-foo", "a-foo-d", 1)
    )
    kubernetes.client.CoreV1Api(api).create_namespaced_pod(namespace, POD)


@pytest.fixture
def someone_elses(api: kubernetes.client.ApiClient) -> Iterator[str]:
    """A namespace without the course's labels, as a learner's own would be; deleted after."""
    core = kubernetes.client.CoreV1Api(api)
    name = f"t-someone-elses-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise


def test_clear_touches_nothing_in_a_namespace_the_course_did_not_make(
    api: kubernetes.client.ApiClient, someone_elses: str
) -> None:
    fill(api, someone_elses)
    with pytest.raises(CourseError, match="the course did not make it"):
        controller_bench.clear(api, someone_elses)
    assert foos(api, someone_elses) == ["a-foo"]
    assert pods(api, someone_elses) == ["a-pod"]
    found = kubernetes.client.CoreV1Api(api).read_namespace(someone_elses)
    assert found.metadata.deletion_timestamp is None


def test_clear_empties_and_deletes_a_namespace_of_the_courses(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    fill(api, namespace)
    controller_bench.clear(api, namespace)
    assert foos(api, namespace) == [] and pods(api, namespace) == []
    try:
        found = kubernetes.client.CoreV1Api(api).read_namespace(namespace)
    except ApiException as exc:
        assert exc.status == 404, exc  # gone already
    else:
        assert found.metadata.deletion_timestamp is not None, "the namespace is not being deleted"
