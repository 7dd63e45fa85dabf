"""Listers over the indexed store, checked against client-go's listers and apimachinery errors.

Upstream files: client-go tools/cache/listers.go, listers/generic_helpers.go,
sample-controller's generated foo lister, and apimachinery pkg/api/errors.
"""

from __future__ import annotations

import threading
from typing import Any

import kubernetes
import pytest

from helpers.lister import (
    CacheMutationError,
    Lister,
    MutationDetector,
    NotFoundError,
    is_not_found,
    list_all_by_namespace,
)
from helpers.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    namespace_index_func,
)


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
    """apimachinery schema.GroupResource.String: the core group has no suffix. The resource is
    the plural, as the API server says it; lister-gen's listers say `configmap "x" not found`
    (client-go listers/core/v1/configmap.go, NewConfigMapLister)."""
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


# --- the mutation detector (client-go tools/cache/mutation_detector.go) -------------------


def test_mutation_detector_names_the_object_and_the_field_changed_in_place() -> None:
    detector = MutationDetector()
    cached = foo("a", "ns1", {"colour": "red"})
    detector.on_add(cached, True)
    detector.on_add(foo("b", "ns1"), True)
    assert detector.changed() == []
    detector.check()  # nothing changed: no error

    cached["metadata"]["labels"]["colour"] = "green"  # what a careless sync does to a lister's dict
    assert detector.changed() == ["ns1/a (metadata.labels.colour: 'red' -> 'green')"]
    with pytest.raises(CacheMutationError, match=r"cache modified: ns1/a \(metadata.labels"):
        detector.check()


def test_mutation_detector_sees_an_added_field() -> None:
    detector = MutationDetector()
    cached = foo("a", "ns1")
    detector.on_add(cached, False)
    cached["status"] = {"availableReplicas": 1}
    assert detector.changed() == ["ns1/a (status: (absent) -> {'availableReplicas': 1})"]


def test_a_resync_does_not_bless_a_change_made_before_it() -> None:
    """A resync hands out the same (changed) object again: its first copy must stay."""
    detector = MutationDetector()
    cached = foo("a", "ns1", {"colour": "red"})
    detector.on_add(cached, True)
    cached["metadata"]["labels"]["colour"] = "green"
    detector.on_update(cached, cached)  # the resync
    with pytest.raises(CacheMutationError):
        detector.check()


def test_a_new_version_replaces_the_copy_and_a_delete_drops_it() -> None:
    detector = MutationDetector()
    old = foo("a", "ns1", {"colour": "red"})
    detector.on_add(old, True)
    new = foo("a", "ns1", {"colour": "blue"})
    detector.on_update(old, new)  # the informer replaced the cached object
    old["metadata"]["labels"]["colour"] = "green"  # the old one is no longer cached
    detector.check()
    new["metadata"]["labels"]["colour"] = "green"
    assert len(detector.changed()) == 1
    detector.on_delete(DeletedFinalStateUnknown("ns1/a", new))  # gone from the cache
    assert detector.changed() == []


@pytest.mark.cluster
def test_the_detector_catches_a_change_to_a_real_informers_cache(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """On a SharedInformer against the cluster: a change made through the lister is caught,
    and a new version from the watch (the server's truth) replaces the copy."""
    from helpers.informer import SharedInformer, wait_for_cache_sync
    from helpers.listwatch import ListWatch

    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a", "labels": {"x": "1"}}})
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    informer = SharedInformer(ListWatch(api, path, label_selector="x"), name="detector-test")
    detector = MutationDetector()
    registration = informer.add_event_handler(detector)
    new_version = threading.Event()
    informer.add_event_handler(
        on_update=lambda _old, new: new["metadata"]["labels"]["x"] == "3" and new_version.set()
    )
    with informer:
        assert wait_for_cache_sync(informer, registration, timeout=30)
        detector.check()
        cached = informer.lister().namespace(namespace).get("a")
        cached["metadata"]["labels"]["x"] = "2"
        with pytest.raises(
            CacheMutationError, match=f"{namespace}/a .metadata.labels.x: '1' -> '2'"
        ):
            detector.check()
        core.patch_namespaced_config_map("a", namespace, {"metadata": {"labels": {"x": "3"}}})
        assert new_version.wait(30), "the watch never brought x=3"
        # The same distribution put it in the detector's buffer; wait until it is handled.
        assert registration.wait_until_idle(30)
        detector.check()  # the cache holds the server's new version, and its copy is fresh
