"""Listers over the indexed store, checked against client-go's listers and apimachinery errors.

Upstream files: client-go tools/cache/listers.go, listers/generic_helpers.go,
sample-controller's generated foo lister, and apimachinery pkg/api/errors.
"""

from __future__ import annotations

from typing import Any

import pytest

from helpers.lister import Lister, NotFoundError, is_not_found, list_all_by_namespace
from helpers.store import NAMESPACE_INDEX, Indexer, namespace_index_func


def foo(name: str, namespace: str = "default", labels: dict[str, str] | None = None) -> dict:
    metadata: dict[str, Any] = {"name": name, "resourceVersion": "1"}
    if namespace:
        metadata["namespace"] = namespace
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": metadata}


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


@pytest.fixture
def indexer() -> Indexer:
    store = Indexer({NAMESPACE_INDEX: namespace_index_func})
    store.add(foo("a", "ns1", {"app": "web", "tier": "front"}))
    store.add(foo("b", "ns1", {"app": "db"}))
    store.add(foo("c", "ns2", {"app": "web"}))
    store.add(foo("d", "ns2"))
    return store


def test_namespace_lister_get(indexer: Indexer) -> None:
    """generic_helpers.go::ResourceIndexer.Get: a namespaced lister looks up "ns/name"."""
    lister = Lister(indexer)
    assert lister.namespace("ns1").get("a")["metadata"]["namespace"] == "ns1"
    assert lister.namespace("ns2").get("c")["metadata"]["name"] == "c"


def test_namespace_lister_list_uses_the_namespace(indexer: Indexer) -> None:
    """listers.go::ListAllByNamespace: only objects of that namespace, filtered by selector."""
    lister = Lister(indexer)
    assert names(lister.namespace("ns1").list()) == ["a", "b"]
    assert names(lister.namespace("ns2").list("app=web")) == ["c"]
    assert names(lister.namespace("ns1").list({"app": "web"})) == ["a"]
    assert lister.namespace("empty").list() == []


def test_lister_list_all_namespaces(indexer: Indexer) -> None:
    """listers.go::ListAll: every object, or those matching the selector."""
    lister = Lister(indexer)
    assert names(lister.list()) == ["a", "b", "c", "d"]
    assert names(lister.list("app=web")) == ["a", "c"]
    assert names(lister.list("app in (web,db),!tier")) == ["b", "c"]
    assert names(lister.list("!app")) == ["d"]


def test_list_by_namespace_without_index_scans(indexer: Indexer) -> None:
    """listers.go::ListAllByNamespace: without the namespace index, fall back to a full scan."""
    store = Indexer()
    for o in indexer.list():
        store.add(o)
    assert names(list_all_by_namespace(store, "ns2", "app=web")) == ["c"]
    assert names(Lister(store).namespace("ns1").list()) == ["a", "b"]


def test_lister_get_cluster_scoped() -> None:
    """generic_helpers.go::ResourceIndexer.Get with no namespace: the key is the bare name."""
    store = Indexer({NAMESPACE_INDEX: namespace_index_func})
    store.add(foo("node-1", namespace=""))
    lister = Lister(store, resource="nodes", group="")
    assert lister.get("node-1")["metadata"]["name"] == "node-1"
    with pytest.raises(NotFoundError, match='nodes "node-2" not found'):
        lister.get("node-2")


def test_not_found_shape(indexer: Indexer) -> None:
    """apimachinery errors.go::NewNotFound (errors_test.go::TestErrorNew): a 404 Status.

    The message names the resource and group as the API server does:
    `foos.samplecontroller.k8s.io "x" not found`.
    """
    lister = Lister(indexer)
    with pytest.raises(NotFoundError) as caught:
        lister.namespace("ns1").get("x")
    err = caught.value
    assert err.status == 404
    assert err.code == 404
    assert err.reason == "NotFound"
    assert err.message == 'foos.samplecontroller.k8s.io "x" not found'
    assert str(err) == err.message
    assert err.details == {"name": "x", "group": "samplecontroller.k8s.io", "kind": "foos"}
    assert is_not_found(err)
    status = err.to_status()
    assert (status["kind"], status["status"], status["code"]) == ("Status", "Failure", 404)
    assert status["details"]["name"] == "x"


def test_not_found_is_by_name_not_by_namespace(indexer: Indexer) -> None:
    """A name that exists in another namespace is still NotFound in this one."""
    lister = Lister(indexer)
    with pytest.raises(NotFoundError):
        lister.namespace("ns2").get("a")


def test_not_found_core_group_message() -> None:
    """apimachinery schema.GroupResource.String: the core group has no suffix."""
    lister = Lister(
        Indexer({NAMESPACE_INDEX: namespace_index_func}), resource="configmaps", group=""
    )
    with pytest.raises(NotFoundError) as caught:
        lister.namespace("default").get("x")
    assert caught.value.message == 'configmaps "x" not found'
    assert caught.value.details["group"] == ""


def test_is_not_found_rejects_other_errors() -> None:
    """apimachinery errors.IsNotFound: only 404s count."""
    assert not is_not_found(ValueError("boom"))


def test_lister_sees_store_changes(indexer: Indexer) -> None:
    """A lister is a view, not a snapshot: later cache writes show up."""
    lister = Lister(indexer)
    indexer.delete(foo("a", "ns1"))
    with pytest.raises(NotFoundError):
        lister.namespace("ns1").get("a")
    indexer.add(foo("e", "ns1", {"app": "web"}))
    assert names(lister.namespace("ns1").list("app=web")) == ["e"]


def test_bad_selector_is_a_value_error(indexer: Indexer) -> None:
    """A malformed selector fails loudly instead of matching nothing."""
    with pytest.raises(ValueError, match="invalid label selector"):
        Lister(indexer).list("app in web")
