"""helpers.faults.stale_cache: a cache held behind the API server makes a write conflict, every
time, until the block ends; then the informer catches up with what it missed."""

from __future__ import annotations

import copy

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.faults.stale_cache import TOUCH_ANNOTATION, stale_cache, touch
from helpers.held_watch import HeldListWatch
from helpers.informer import SharedInformer, wait_for_cache_sync

pytestmark = pytest.mark.cluster

GUARD = 30.0


def test_a_write_from_the_stale_cache_conflicts_until_the_block_ends(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    custom = kubernetes.client.CustomObjectsApi(api)
    where = (FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL)
    custom.create_namespaced_custom_object(*where, foo_body("held", "held-deployment"))
    path = f"/apis/{FOO_GROUP}/{FOO_VERSION}/namespaces/{namespace}/{FOO_PLURAL}"
    watch = HeldListWatch(api, path)
    informer = SharedInformer(watch, name="stale-cache-test")
    informer.start()
    try:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        key = f"{namespace}/held"
        with stale_cache(watch):
            moved_on = touch(api, f"{path}/held")
            cached = informer.indexer.get_by_key(key)
            assert cached["metadata"]["resourceVersion"] != moved_on
            for _ in range(2):  # every time, not now and then
                stale = copy.deepcopy(cached)
                stale["status"] = {"availableReplicas": 1}
                with pytest.raises(ApiException) as refused:
                    custom.replace_namespaced_custom_object_status(*where, "held", stale)
                assert refused.value.status == 409
        # Released: the watch resumes from the cache's version and brings the touch.
        assert informer.reflector.wait_for(
            lambda _: (
                (informer.indexer.get_by_key(key) or {}).get("metadata", {}).get("resourceVersion")
                == moved_on
            ),
            GUARD,
        ), "the cache never caught up after the block"
        annotations = informer.indexer.get_by_key(key)["metadata"]["annotations"]
        assert TOUCH_ANNOTATION in annotations
    finally:
        watch.release()
        informer.stop()
        assert informer.join(GUARD)


def test_touch_moves_the_resource_version_and_changes_nothing_else(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    custom = kubernetes.client.CustomObjectsApi(api)
    where = (FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL)
    before = custom.create_namespaced_custom_object(*where, foo_body("touched", "touched-d", 2))
    path = f"/apis/{FOO_GROUP}/{FOO_VERSION}/namespaces/{namespace}/{FOO_PLURAL}/touched"

    first, second = touch(api, path), touch(api, path)

    after = custom.get_namespaced_custom_object(*where, "touched")
    assert len({before["metadata"]["resourceVersion"], first, second}) == 3
    assert after["metadata"]["resourceVersion"] == second
    assert after["spec"] == before["spec"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
