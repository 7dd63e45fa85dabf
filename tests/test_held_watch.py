"""HeldListWatch, the drills' gate: a drill that fails must report, never hang.

A held watch waits at most ``hold_limit`` seconds; ``release()`` is safe to
call any number of times; an informer stopped while its watch is held (a drill
whose assertion failed before it released) still stops within that bound.
"""

from __future__ import annotations

import threading
import time

import kubernetes
import pytest

from helpers.held_watch import HeldListWatch, HeldTooLong
from helpers.informer import SharedInformer, wait_for_cache_sync

GUARD = 10.0


def unreachable() -> kubernetes.client.ApiClient:
    """A client for a port nothing listens on: a request that gets past the gate fails at once."""
    return kubernetes.client.ApiClient(kubernetes.client.Configuration(host="http://127.0.0.1:9"))


def test_a_held_watch_gives_up_after_its_limit() -> None:
    """No cluster needed: the request never gets past the gate."""
    held = HeldListWatch(unreachable(), "/api/v1/configmaps", hold_limit=0.3)
    held.hold()
    started = time.monotonic()
    with pytest.raises(HeldTooLong, match=r"held back for more than 0\.3 s"):
        held.watch(resource_version="1", timeout_seconds=5)
    assert 0.3 <= time.monotonic() - started < GUARD


def test_release_wakes_a_held_watch_and_can_be_called_twice() -> None:
    held = HeldListWatch(unreachable(), "/api/v1/configmaps", hold_limit=GUARD)
    held.hold()
    outcome: list[BaseException] = []

    def watch() -> None:
        try:
            held.watch(resource_version="1", timeout_seconds=5)
        except BaseException as err:  # past the gate: connection refused
            outcome.append(err)

    thread = threading.Thread(target=watch, name="held-watch")
    thread.start()
    assert held.wait_until_held(GUARD)
    held.release()
    held.release()
    thread.join(GUARD)
    assert not thread.is_alive()
    assert outcome and not isinstance(outcome[0], HeldTooLong), "release did not open the gate"


@pytest.mark.cluster
def test_an_informer_stopped_while_held_stops_within_the_hold_limit(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """The failed-drill path: hold, fail before release(), stop. It must not hang."""
    limit = 2.0
    held = HeldListWatch(api, f"/api/v1/namespaces/{namespace}/configmaps", hold_limit=limit)
    informer = SharedInformer(held, name="held-and-stopped")
    informer.start()
    try:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        held.hold(cut=True)
        assert held.wait_until_held(GUARD), "the reflector never came back to watch"
    finally:
        stopped_at = time.monotonic()
        informer.stop()  # no release(): the drill "failed" before it got there
        assert informer.join(limit + GUARD), "a held watch kept the informer from stopping"
    assert time.monotonic() - stopped_at < limit + GUARD
