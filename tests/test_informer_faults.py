"""The informer survives what real clusters do to it, and loses nothing.

Each drill runs our SharedInformer against the real local control plane,
breaks something, and then waits until both the cache and a handler's view
(built from events alone, see ``informer_harness.Recorder``) equal a fresh
list from the API server. Every delete must have reached the handler: as a
DELETE event, or as a tombstone when it happened while we were not watching.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest

from helpers.cluster.info import describe
from helpers.etcd import EtcdClient
from helpers.faults.control_plane import local_cluster, restart_api_server
from helpers.faults.tcp_proxy import TcpProxy, proxied_client
from helpers.held_watch import HeldListWatch
from helpers.informer import SharedInformer, wait_for_cache_sync
from helpers.listwatch import ListWatch
from tests.informer_harness import SELECTOR, Churn, Recorder, cache_view

pytestmark = pytest.mark.cluster

CONVERGE_SECONDS = 60


def start_informer(api: kubernetes.client.ApiClient, namespace: str, kind: str,
                   **options: float) -> tuple[SharedInformer, Recorder]:  # fmt: skip
    informer = SharedInformer(
        ListWatch(api, f"/api/v1/namespaces/{namespace}/{kind}", label_selector=SELECTOR),
        name=f"drill-{kind}",
        **options,
    )
    recorder = Recorder()
    informer.add_event_handler(recorder)
    informer.start()
    assert wait_for_cache_sync(informer, timeout=30)
    return informer, recorder


def stop(informer: SharedInformer) -> None:
    informer.stop()
    assert informer.join(10), "informer threads did not stop"


def assert_converged(
    informer: SharedInformer, recorder: Recorder, churn: Churn, must_see: set[str]
) -> None:
    """Cache and handler agree with a fresh list, and the deletes in ``must_see`` arrived."""
    expected = churn.fresh_view()
    assert recorder.wait_for(expected, CONVERGE_SECONDS), (
        f"handler view differs from a fresh list: missing "
        f"{sorted(set(expected) - set(recorder.live))}, extra "
        f"{sorted(set(recorder.live) - set(expected))}"
    )
    # The cache is written before handlers are told, so it has caught up too.
    assert cache_view(informer.indexer) == expected
    unseen = must_see - recorder.deleted
    assert not unseen, f"deletes that never reached the handler: {sorted(unseen)}"


@pytest.fixture
def proxied_api(api: kubernetes.client.ApiClient, tmp_path: Path) -> Iterator[tuple]:
    """An ApiClient whose connections go through a TcpProxy we can cut or block."""
    with proxied_client(tmp_path) as proxied:
        yield proxied


def test_500_mixed_changes(api: kubernetes.client.ApiClient, namespace: str) -> None:
    churn = Churn(api, namespace, "configmaps")
    churn.run(20)  # some objects exist before the informer starts
    informer, recorder = start_informer(api, namespace, "configmaps")
    deleted_before = set(churn.deleted)
    try:
        churn.run(500)
        assert_converged(informer, recorder, churn, churn.deleted - deleted_before)
        assert not recorder.tombstones, "a live watch needs no tombstones"
    finally:
        stop(informer)


BREAKS = {
    # how the connection dies: (the proxy's method, what the client reads)
    "cut": (TcpProxy.cut, "an unexpected end of stream"),
    "reset": (TcpProxy.reset, "a connection reset"),
    "stall": (TcpProxy.stall, "silence past the read timeout"),
}


@pytest.mark.parametrize("how", list(BREAKS))
def test_a_broken_watch_connection_is_watched_again_without_a_relist(
    api: kubernetes.client.ApiClient, namespace: str, proxied_api: tuple, how: str
) -> None:
    """client-go's reflector treats a watch that breaks (EOF, reset, read timeout) as the
    end of that watch: it watches again from its last resourceVersion, without a list."""
    break_connection, _ = BREAKS[how]
    proxy, client = proxied_api
    churn = Churn(api, namespace, "configmaps", seed=11)
    informer, recorder = start_informer(client, namespace, "configmaps", read_timeout=3)
    try:
        for round_ in range(1, 4):
            watches = informer.reflector.watches
            churn.run(60)
            assert break_connection(proxy) >= 1, "the informer had no open connection to break"
            assert informer.reflector.wait_for(
                lambda r, before=watches, n=round_: r.watches > before and r.broken_watches >= n, 30
            ), f"no new watch after {BREAKS[how][1]}: {informer.reflector!r}"
        churn.run(60)
        assert_converged(informer, recorder, churn, set(churn.deleted))
        reflector = informer.reflector
        assert reflector.broken_watches >= 3
        assert reflector.lists == 1 and reflector.relists == 0, "a broken watch made it list"
        assert reflector.errors == 0, "a broken watch is not an error to back off from"
        assert not recorder.tombstones, "watching on from the last resourceVersion loses nothing"
        assert proxy.accepted >= 4  # it reconnected after every break
    finally:
        stop(informer)


def test_forced_410_after_compaction(
    api: kubernetes.client.ApiClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Compact etcd past the watch's resourceVersion while the informer is not watching.

    PodTemplates bypass the watch cache, so the re-watch from the old
    resourceVersion goes to etcd and gets 410 Gone; the reflector re-lists, and
    what was deleted meanwhile reaches handlers as tombstones.
    """
    caplog.set_level(logging.INFO, logger="helpers.reflector")
    info = describe()
    assert info.etcd_url, "compaction needs etcd on loopback (local control plane)"
    churn = Churn(api, namespace, "podtemplates", seed=3)
    churn.run(40)
    held = HeldListWatch(api, f"/api/v1/namespaces/{namespace}/podtemplates",
                           label_selector=SELECTOR)  # fmt: skip
    # Short server-side watch timeouts: each watch ends normally after 1-2 s and
    # the reflector re-watches from its last resourceVersion, without a re-list.
    informer = SharedInformer(held, name="drill-410", min_watch_timeout=1)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    informer.start()
    try:
        assert wait_for_cache_sync(informer, timeout=30)
        deleted_at_start = set(churn.deleted)
        churn.run(40)
        held.hold()
        assert held.wait_until_held(30), "the watch never came back for a re-watch"
        known = set(cache_view(informer.indexer))
        lists_before = informer.reflector.lists
        deleted_before = set(churn.deleted)
        churn.run(60)
        missed_deletes = (churn.deleted - deleted_before) & known
        etcd = EtcdClient(info.etcd_url)
        etcd.compact(etcd.revision())
        held.release()
        # Objects created and deleted during the outage were never known to the
        # informer; every delete of an object it knew must arrive.
        must_see = (deleted_before - deleted_at_start) | missed_deletes
        assert_converged(informer, recorder, churn, must_see)
        assert "(410)" in caplog.text, "the reflector never met 410 Gone"
        assert informer.reflector.lists > lists_before, "no re-list after 410"
        assert missed_deletes, "the drill deleted nothing the informer knew"
        assert missed_deletes <= recorder.tombstones
    finally:
        held.release()  # before stopping: a watch still held back would keep the reflector
        stop(informer)


def test_api_server_killed_and_restarted(api: kubernetes.client.ApiClient, namespace: str) -> None:
    cluster = local_cluster()
    churn = Churn(api, namespace, "configmaps", seed=5)
    informer, recorder = start_informer(api, namespace, "configmaps")
    try:
        churn.run(50)
        restart_api_server(cluster)
        # The informer is still backing off; once it sees a new object it has
        # re-listed or re-watched, and from then on it misses nothing.
        marker = churn.body("after-restart")
        churn.create(namespace, marker)
        assert recorder.wait_until_seen(f"{namespace}/after-restart", CONVERGE_SECONDS)
        churn.run(50)
        assert_converged(informer, recorder, churn, set(churn.deleted))
    finally:
        stop(informer)
        cluster.revive()
