"""helpers.faults.expired_watch: a held watch that comes back too late meets the API server's own
410, the informer lists again, and a delete it missed arrives as a tombstone. No restart, no
etcd: the drill chapter 09b runs on kind too."""

from __future__ import annotations

import threading

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers.faults.expired_watch import EXPIRED, ExpiringListWatch
from helpers.informer import SharedInformer, wait_for_cache_sync
from helpers.listwatch import WatchExpired
from helpers.store import DeletedFinalStateUnknown

GUARD = 30.0


def unreachable() -> kubernetes.client.ApiClient:
    return kubernetes.client.ApiClient(kubernetes.client.Configuration(host="http://127.0.0.1:9"))


def test_only_the_watch_after_an_expired_release_asks_from_the_expired_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No cluster: the request below the gate is replaced by a recorder."""
    asked: list[str] = []

    class Stream:
        closed = False

    def watch(self: object, resource_version: str, *args: object, **kwargs: object) -> Stream:
        asked.append(resource_version)
        return Stream()

    monkeypatch.setattr("helpers.listwatch.ListWatch.watch", watch)
    held = ExpiringListWatch(unreachable(), "/api/v1/configmaps", hold_limit=GUARD)
    held.watch("10", 5)
    held.hold()
    thread = threading.Thread(target=held.watch, args=("20", 5), name="held-watch")
    thread.start()
    assert held.wait_until_held(GUARD)
    held.release(expired=True)
    thread.join(GUARD)
    held.watch("30", 5)
    held.release()  # a plain release expires nothing
    held.watch("40", 5)
    assert asked == ["10", EXPIRED, "30", "40"]
    assert held.expired == ["20"]


def test_an_expired_watch_refused_with_a_429_expires_the_next_one_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 429 (a watch cache not ready) answers nothing about the version: the reflector
    watches again from its own, and that watch must be the one that meets the 410."""
    asked: list[str] = []

    class Stream:
        closed = False

    def watch(self: object, resource_version: str, *args: object, **kwargs: object) -> Stream:
        asked.append(resource_version)
        if len(asked) == 1:
            raise ApiException(status=429, reason="Too Many Requests")
        return Stream()

    monkeypatch.setattr("helpers.listwatch.ListWatch.watch", watch)
    held = ExpiringListWatch(unreachable(), "/api/v1/configmaps", hold_limit=GUARD)
    held.release(expired=True)
    with pytest.raises(ApiException):
        held.watch("20", 5)
    assert held.expired == []
    held.watch("20", 5)
    held.watch("30", 5)
    assert asked == [EXPIRED, EXPIRED, "30"]
    assert held.expired == ["20"]


@pytest.mark.cluster
def test_a_delete_missed_while_held_comes_as_a_tombstone_after_the_410(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    for name in ("kept", "gone"):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
    held = ExpiringListWatch(api, f"/api/v1/namespaces/{namespace}/configmaps")
    informer = SharedInformer(held, name="expired-watch-test")
    deleted: list[object] = []
    done = threading.Event()

    def on_delete(obj: object) -> None:
        deleted.append(obj)
        done.set()

    informer.add_event_handler(on_delete=on_delete, name="deletes")
    informer.start()
    try:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        held.hold(cut=True)
        assert held.wait_until_held(GUARD), "the reflector never came back to watch"
        lists = informer.reflector.lists  # a cut within 1 s of the watch's start lists again too
        core.delete_namespaced_config_map("gone", namespace)
        held.release(expired=True)
        assert done.wait(GUARD), "no delete reached the handler"
        error = informer.reflector.last_error
        assert isinstance(error, WatchExpired) and error.status == 410, error
        assert "too old resource version" in str(error)
        assert len(held.expired) == 1 and held.expired[0] != EXPIRED
        assert informer.reflector.lists == lists + 1  # the one after the 410
        [tombstone] = deleted
        assert isinstance(tombstone, DeletedFinalStateUnknown)
        assert tombstone.key == f"{namespace}/gone"
        assert informer.indexer.get_by_key(f"{namespace}/kept") is not None
    finally:
        held.release()
        informer.stop()
        assert informer.join(GUARD)
