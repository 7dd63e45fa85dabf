"""helpers.lean_cache: a metadata-only list and watch on the real API server, and what
cache_bytes counts."""

from __future__ import annotations

import threading

import kubernetes
import pytest

from helpers.informer import SharedInformer, wait_for_cache_sync
from helpers.lean_cache import MetadataListWatch, cache_bytes
from helpers.listwatch import ListWatch
from helpers.testing.recording import NotWatched


@pytest.mark.cluster
def test_a_metadata_informer_caches_metadata_only_and_hears_changes(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    body = {"metadata": {"name": "big", "labels": {"a": "b"}}, "data": {"x": "y" * 1000}}
    core.create_namespaced_config_map(namespace, body)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert MetadataListWatch(api, path).list()["kind"] == "PartialObjectMetadataList"
    relabelled = threading.Event()

    def saw(_old: dict, new: dict) -> None:
        if (new["metadata"].get("labels") or {}).get("a") == "c":
            relabelled.set()

    metadata = SharedInformer(MetadataListWatch(api, path), name="meta")
    metadata.add_event_handler(on_update=saw)
    with metadata:
        assert wait_for_cache_sync(metadata, timeout=30)
        cached = metadata.indexer.get_by_key(f"{namespace}/big")
        assert cached["kind"] == "PartialObjectMetadata" and "data" not in cached
        core.patch_namespaced_config_map("big", namespace, {"metadata": {"labels": {"a": "c"}}})
        assert relabelled.wait(30), "the metadata watch did not deliver the change"
        whole = SharedInformer(ListWatch(api, path), name="whole")
        with whole:
            assert wait_for_cache_sync(whole, timeout=30)
            assert cache_bytes(whole) > cache_bytes(metadata) + 1000  # the data, at least


def test_cache_bytes_counts_each_object_once() -> None:
    informer = SharedInformer(NotWatched(), name="counted")
    shared = "s" * 1000
    informer.indexer.add({"metadata": {"name": "a", "namespace": "n"}, "data": {"x": shared}})
    one = cache_bytes(informer)
    informer.indexer.add({"metadata": {"name": "b", "namespace": "n"}, "data": {"x": shared}})
    assert 0 < cache_bytes(informer) - one < 1000  # the string both hold is counted once
