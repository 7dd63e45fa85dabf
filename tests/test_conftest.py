"""tests/conftest.py's fixtures: the namespace a test gets is one the API server accepts."""

from __future__ import annotations

import kubernetes
import pytest

from helpers.cluster.paths import DNS_LABEL
from tests.conftest import namespace_name

NAMES = [
    "test_x[a]",  # short: nothing cuts the brackets off
    "test_each_shape[course-informer-hops-handler-1-json]",
    "test_x[ns/foo.bar baz]",
    "test_" + "long_" * 40 + "[x]",
    "[]",
]


@pytest.mark.parametrize("test_name", NAMES)
def test_a_tests_name_becomes_a_dns_label(test_name: str) -> None:
    name = namespace_name(test_name)
    assert len(name) <= 63 and DNS_LABEL.match(name), name
    assert namespace_name(test_name) != name, "two runs of one test get two namespaces"


@pytest.mark.cluster
@pytest.mark.parametrize("short", ["a", "b.c"])
def test_ns(api: kubernetes.client.ApiClient, namespace: str, short: str) -> None:
    """A parametrized test whose name is short enough to keep its brackets within 40 characters."""
    found = kubernetes.client.CoreV1Api(api).read_namespace(namespace)
    assert found.metadata.name == namespace and DNS_LABEL.match(namespace), namespace
