"""The indexed store, checked against client-go's tools/cache scenarios.

Upstream files: client-go tools/cache/index_test.go, thread_safe_store_test.go,
store.go (key functions) and controller.go (tombstones).
"""

from __future__ import annotations

import copy
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from helpers.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    IndexerConflictError,
    IndexNotFoundError,
    meta_namespace_key,
    namespace_index_func,
    owner_uid_index_func,
    split_meta_namespace_key,
)


def obj(
    name: str,
    namespace: str = "default",
    rv: str = "1",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A minimal API object as raw JSON."""
    metadata: dict[str, Any] = {"name": name, "resourceVersion": rv}
    if namespace:
        metadata["namespace"] = namespace
    if annotations is not None:
        metadata["annotations"] = annotations
    if labels is not None:
        metadata["labels"] = labels
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata}


def users_index_func(o: dict[str, Any]) -> list[str]:
    """Index by the comma-separated ``users`` annotation: one object, several values."""
    return o["metadata"]["annotations"]["users"].split(",")


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


# --- keys ---------------------------------------------------------------------


def test_meta_namespace_key_namespaced_and_cluster_scoped() -> None:
    """store.go::MetaNamespaceKeyFunc: "ns/name", or "name" without a namespace."""
    assert meta_namespace_key(obj("foo", namespace="ns1")) == "ns1/foo"
    assert meta_namespace_key(obj("node-1", namespace="")) == "node-1"


def test_meta_namespace_key_rejects_object_without_name() -> None:
    """store.go::KeyError: an object the key function cannot name is an error, not a key."""
    with pytest.raises(ValueError, match="no metadata"):
        meta_namespace_key({"kind": "Pod"})
    with pytest.raises(ValueError, match=r"no metadata\.name"):
        meta_namespace_key({"metadata": {"namespace": "ns"}})


def test_tombstone_key() -> None:
    """controller.go::DeletionHandlingMetaNamespaceKeyFunc: a tombstone keys to its own key."""
    last_known = obj("foo", namespace="ns1")
    tombstone = DeletedFinalStateUnknown("ns1/foo", last_known)
    assert meta_namespace_key(tombstone) == "ns1/foo"
    # The key wins even when the last known state disagrees or is missing.
    assert meta_namespace_key(DeletedFinalStateUnknown("other/bar", None)) == "other/bar"


def test_split_meta_namespace_key() -> None:
    """store.go::SplitMetaNamespaceKey: one or two parts are fine."""
    assert split_meta_namespace_key("ns1/foo") == ("ns1", "foo")
    assert split_meta_namespace_key("node-1") == ("", "node-1")


@pytest.mark.parametrize("key", ["a/b/c", "a/b/c/d"])
def test_split_meta_namespace_key_bad_key_format(key: str) -> None:
    """store.go::SplitMetaNamespaceKey: more than two parts -> `unexpected key format: "<key>"`."""
    with pytest.raises(ValueError) as err:
        split_meta_namespace_key(key)
    assert str(err.value) == f'unexpected key format: "{key}"'


def test_key_round_trip() -> None:
    """Splitting a key and joining it again gives back the object's namespace and name."""
    for o in (obj("foo", namespace="ns1"), obj("node-1", namespace="")):
        ns, name = split_meta_namespace_key(meta_namespace_key(o))
        assert (ns, name) == (o["metadata"].get("namespace", ""), o["metadata"]["name"])


# --- index functions ------------------------------------------------------------


def test_namespace_index_func() -> None:
    """index.go::MetaNamespaceIndexFunc: [namespace], and [""] for cluster-scoped objects."""
    assert namespace_index_func(obj("a", namespace="ns1")) == ["ns1"]
    assert namespace_index_func(obj("n", namespace="")) == [""]


def test_owner_uid_index_func_uses_only_the_controller_reference() -> None:
    """Only the ownerReference with controller=true is indexed (sample-controller handleObject)."""
    owners = [
        {"kind": "Foo", "name": "x", "uid": "uid-not-controller"},
        {"kind": "Foo", "name": "y", "uid": "uid-controller", "controller": True},
    ]
    assert owner_uid_index_func(obj("d", owners=owners)) == ["uid-controller"]
    assert owner_uid_index_func(obj("d", owners=owners[:1])) == []
    assert owner_uid_index_func(obj("d")) == []


# --- Indexer: basic store behaviour -----------------------------------------------


def test_add_get_update_delete() -> None:
    """store_test.go::TestCache (doTestStore): add, get, update, delete, list."""
    store = Indexer()
    store.add(obj("foo", rv="1"))
    store.add(obj("bar", rv="1"))
    assert store.get_by_key("default/foo")["metadata"]["resourceVersion"] == "1"

    store.update(obj("foo", rv="2"))
    assert store.get_by_key("default/foo")["metadata"]["resourceVersion"] == "2"
    assert store.list_keys() == ["default/bar", "default/foo"]
    assert names(store.list()) == ["bar", "foo"]

    store.delete(obj("foo"))
    assert store.get_by_key("default/foo") is None
    assert store.list_keys() == ["default/bar"]
    store.delete(obj("never-added"))  # deleting an unknown key is a no-op
    assert len(store) == 1


def test_delete_accepts_tombstone() -> None:
    """controller.go: the informer deletes from its cache with a DeletedFinalStateUnknown."""
    store = Indexer({NAMESPACE_INDEX: namespace_index_func})
    store.add(obj("foo", namespace="ns1"))
    store.delete(DeletedFinalStateUnknown("ns1/foo", obj("foo", namespace="ns1")))
    assert store.get_by_key("ns1/foo") is None
    assert store.list_index_func_values(NAMESPACE_INDEX) == []


def test_list_returns_the_cached_objects() -> None:
    """thread_safe_store.go doc: Get/List hand back the stored object itself, not a copy.

    This is why callers must never mutate what they read from a cache.
    """
    store = Indexer()
    original = obj("foo")
    store.add(original)
    assert store.get_by_key("default/foo") is original
    assert store.list()[0] is original


# --- Indexer: indices -----------------------------------------------------------------


def test_get_index_func_values() -> None:
    """index_test.go::TestGetIndexFuncValues: the values an index holds."""
    store = Indexer({"testmodes": lambda o: [o["metadata"]["labels"]["foo"]]})
    store.add(obj("one", labels={"foo": "bar"}))
    store.add(obj("two", labels={"foo": "bar"}))
    store.add(obj("tre", labels={"foo": "biz"}))
    assert store.list_index_func_values("testmodes") == ["bar", "biz"]


def test_multi_index_keys() -> None:
    """index_test.go::TestMultiIndexKeys: Delete and Update move keys between index values."""
    store = Indexer({"byUser": users_index_func})
    pod1 = obj("one", annotations={"users": "ernie,bert"})
    pod2 = obj("two", annotations={"users": "bert,oscar"})
    pod3 = obj("tre", annotations={"users": "ernie,elmo"})
    for pod in (pod1, pod2, pod3):
        store.add(pod)

    assert names(store.by_index("byUser", "ernie")) == ["one", "tre"]
    assert names(store.by_index("byUser", "bert")) == ["one", "two"]
    assert names(store.by_index("byUser", "oscar")) == ["two"]
    # Index(obj): everything sharing any value with pod1 (ernie or bert), without duplicates.
    assert names(store.index("byUser", pod1)) == ["one", "tre", "two"]

    store.delete(pod3)
    assert names(store.by_index("byUser", "ernie")) == ["one"]
    assert store.by_index("byUser", "elmo") == []
    assert "elmo" not in store.list_index_func_values("byUser")

    copy_of_pod2 = copy.deepcopy(pod2)
    copy_of_pod2["metadata"]["annotations"]["users"] = "oscar"
    store.update(copy_of_pod2)
    assert names(store.by_index("byUser", "bert")) == ["one"]
    assert names(store.by_index("byUser", "oscar")) == ["two"]


def test_thread_safe_store_delete_removes_empty_sets_from_index() -> None:
    """thread_safe_store_test.go::TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex."""
    store = Indexer({"byName": lambda o: [o["metadata"]["name"]]})
    store.add(obj("testKey"))
    assert store.index_keys("byName", "testKey") == ["default/testKey"]

    store.delete(obj("testKey"))
    assert store.list_index_func_values("byName") == []


def test_thread_safe_store_add_keeps_non_empty_set_post_delete_from_index() -> None:
    """thread_safe_store_test.go::TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex."""
    store = Indexer({"constant": lambda o: ["testIndex"]})
    store.add(obj("retain"))
    store.add(obj("delete"))
    assert store.index_keys("constant", "testIndex") == ["default/delete", "default/retain"]

    store.delete(obj("delete"))
    assert store.list_index_func_values("constant") == ["testIndex"]
    assert store.index_keys("constant", "testIndex") == ["default/retain"]


def test_thread_safe_store_indexing_functions_with_multiple_values() -> None:
    """thread_safe_store_test.go::TestThreadSafeStoreIndexingFunctionsWithMultipleValues."""
    store = Indexer({"users": users_index_func})

    def put(name: str, users: str) -> None:
        store.update(obj(name, annotations={"users": users}))

    def keys(value: str) -> list[str]:
        return [k.split("/")[1] for k in store.index_keys("users", value)]

    put("key1", "foo")
    put("key2", "bar")
    assert (keys("foo"), keys("bar")) == (["key1"], ["key2"])

    put("key2", "foo,bar")
    assert (keys("foo"), keys("bar")) == (["key1", "key2"], ["key2"])

    put("key1", "foo,bar")
    assert (keys("foo"), keys("bar")) == (["key1", "key2"], ["key1", "key2"])

    put("key3", "foo,bar,baz")
    assert (keys("foo"), keys("bar"), keys("baz")) == (
        ["key1", "key2", "key3"],
        ["key1", "key2", "key3"],
        ["key3"],
    )

    put("key1", "foo")
    assert (keys("foo"), keys("bar"), keys("baz")) == (
        ["key1", "key2", "key3"],
        ["key2", "key3"],
        ["key3"],
    )

    put("key2", "bar")
    assert (keys("foo"), keys("bar"), keys("baz")) == (["key1", "key3"], ["key2", "key3"], ["key3"])

    store.delete(obj("key1"))
    assert (keys("foo"), keys("bar"), keys("baz")) == (["key3"], ["key2", "key3"], ["key3"])

    store.delete(obj("key3"))
    assert (keys("foo"), keys("bar"), keys("baz")) == ([], ["key2"], [])
    assert store.list_index_func_values("users") == ["bar"]


def test_add_indexer_after_add() -> None:
    """thread_safe_store_test.go::TestAddIndexerAfterAdd: AddIndexers on a populated store.

    New indices cover objects stored before they existed; a duplicate name is an
    "indexer conflict" and leaves the original index in place.
    """
    store = Indexer()
    store.add_indexers({"first": lambda o: [o["metadata"]["labels"]["v"]]})
    store.add(obj("keya", labels={"v": "value"}))
    store.add(obj("keyb", labels={"v": "value"}))
    assert store.index_keys("first", "value") == ["default/keya", "default/keyb"]

    with pytest.raises(IndexerConflictError, match="indexer conflict") as err:
        store.add_indexers({"first": lambda o: []})
    assert "first" in str(err.value)
    assert store.index_keys("first", "value") == ["default/keya", "default/keyb"]

    store.add_indexers({"second": lambda o: [o["metadata"]["labels"]["v"] + "2"]})
    assert store.index_keys("second", "value2") == ["default/keya", "default/keyb"]
    assert sorted(store.get_indexers()) == ["first", "second"]


def test_add_indexers_on_populated_store_indexes_existing_objects() -> None:
    """thread_safe_store.go::AddIndexers: "supports adding indexes after the store has items"."""
    store = Indexer()
    store.add(obj("a", namespace="ns1"))
    store.add(obj("b", namespace="ns2"))
    store.add(obj("c", namespace="ns1"))

    store.add_indexers({NAMESPACE_INDEX: namespace_index_func})
    assert names(store.by_index(NAMESPACE_INDEX, "ns1")) == ["a", "c"]
    assert store.list_index_func_values(NAMESPACE_INDEX) == ["ns1", "ns2"]


@pytest.mark.parametrize(
    "query",
    [
        lambda s: s.by_index("nope", "x"),
        lambda s: s.index_keys("nope", "x"),
        lambda s: s.index("nope", obj("a")),
    ],
    ids=["by_index", "index_keys", "index"],
)
def test_unknown_index(query: Any) -> None:
    """thread_safe_store.go::getKeysByIndex: `Index with name X does not exist`."""
    store = Indexer({NAMESPACE_INDEX: namespace_index_func})
    store.add(obj("a"))
    with pytest.raises(KeyError) as err:
        query(store)
    assert isinstance(err.value, IndexNotFoundError)
    assert str(err.value) == "Index with name nope does not exist"


def test_the_values_of_an_unknown_index_are_an_empty_list__getIndexValues() -> None:
    """thread_safe_store.go::getIndexValues: ListIndexFuncValues of an index never registered
    is an empty list, not an error (the other queries fail, above)."""
    store = Indexer({NAMESPACE_INDEX: namespace_index_func})
    store.add(obj("a"))
    assert store.list_index_func_values("nope") == []


def test_get_indexers_is_a_copy() -> None:
    """Adding to the returned dict must not bypass add_indexers (which re-indexes)."""
    store = Indexer({NAMESPACE_INDEX: namespace_index_func})
    store.get_indexers()["sneaky"] = namespace_index_func
    assert list(store.get_indexers()) == [NAMESPACE_INDEX]


def test_failing_index_func_leaves_store_unchanged() -> None:
    """Index values are computed before anything changes (client-go panics instead)."""
    store = Indexer({"byUser": users_index_func})
    store.add(obj("one", annotations={"users": "ernie"}))
    broken = obj("one")  # no annotations: the index function raises KeyError
    with pytest.raises(KeyError):
        store.update(broken)
    assert store.get_by_key("default/one")["metadata"]["annotations"] == {"users": "ernie"}
    assert store.index_keys("byUser", "ernie") == ["default/one"]


# --- Indexer: replace -------------------------------------------------------------------


def test_replace_rebuilds_all_indices_and_records_resource_version() -> None:
    """thread_safe_store.go::Replace: new items, every index rebuilt; the RV is kept."""
    store = Indexer({NAMESPACE_INDEX: namespace_index_func, "byUser": users_index_func})
    store.add(obj("old", namespace="ns-old", annotations={"users": "elmo"}))
    assert store.last_sync_resource_version == ""

    store.replace(
        [
            obj("a", namespace="ns1", annotations={"users": "ernie,bert"}),
            obj("b", namespace="ns2", annotations={"users": "bert"}),
        ],
        "42",
    )
    assert store.list_keys() == ["ns1/a", "ns2/b"]
    assert store.list_index_func_values(NAMESPACE_INDEX) == ["ns1", "ns2"]
    assert store.list_index_func_values("byUser") == ["bert", "ernie"]
    assert names(store.by_index("byUser", "bert")) == ["a", "b"]
    assert store.by_index("byUser", "elmo") == []
    assert store.last_sync_resource_version == "42"

    store.replace([], "43")
    assert store.list() == []
    assert store.list_index_func_values("byUser") == []
    assert store.last_sync_resource_version == "43"


# --- thread safety ------------------------------------------------------------------------


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    """Ask CPython to switch threads far more often, so races show up in a short test."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def assert_indices_consistent(store: Indexer) -> None:
    """Every index equals the one you would build from scratch from the stored objects."""
    objs = {meta_namespace_key(o): o for o in store.list()}
    for name, func in store.get_indexers().items():
        expected: dict[str, set[str]] = {}
        for key, o in objs.items():
            for value in func(o):
                expected.setdefault(value, set()).add(key)
        actual = {v: set(store.index_keys(name, v)) for v in store.list_index_func_values(name)}
        assert actual == expected, f"index {name!r} is out of step with the items"
        assert all(actual.values()), f"index {name!r} kept an empty set"


def test_concurrent_writers_and_readers_keep_indices_consistent(
    frequent_thread_switches: None,
) -> None:
    """thread_safe_store_test.go::BenchmarkIndexerWithConcurrentReadWrite, as a correctness test.

    Writers move objects between namespaces and users, and delete some; readers
    query the indices meanwhile. Every object a reader gets must really carry
    the value it was looked up by (no torn update is visible), and at the end
    the indices must match the items exactly.
    """
    store = Indexer({NAMESPACE_INDEX: namespace_index_func, "byUser": users_index_func})
    namespaces = ["ns0", "ns1", "ns2"]
    users = ["ernie", "bert", "elmo", "oscar"]
    stop_reading = threading.Event()
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        # All writers share the same few keys, so they race on the same index sets.
        try:
            for i in range(600):
                name, ns = f"pod-{(i * (w + 1)) % 4}", namespaces[(i + w) % len(namespaces)]
                who = ",".join(users[(i + w + j) % len(users)] for j in range(1 + i % 3))
                store.update(obj(name, namespace=ns, rv=str(i), annotations={"users": who}))
                if i % 5 == w:
                    store.delete(obj(f"pod-{i % 4}", namespace=ns))
        except BaseException as err:
            errors.append(err)

    def reader() -> None:
        try:
            while not stop_reading.is_set():
                for ns in namespaces:
                    for o in store.by_index(NAMESPACE_INDEX, ns):
                        assert o["metadata"]["namespace"] == ns
                for user in users:
                    for o in store.by_index("byUser", user):
                        assert user in users_index_func(o)
                for key in store.list_keys():
                    split_meta_namespace_key(key)
        except BaseException as err:
            errors.append(err)

    writers = [threading.Thread(target=writer, args=(w,), name=f"writer-{w}") for w in range(4)]
    readers = [threading.Thread(target=reader, name=f"reader-{r}") for r in range(2)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop_reading.set()
    for t in readers:
        t.join()

    assert errors == []
    assert len(store) > 0
    assert_indices_consistent(store)
