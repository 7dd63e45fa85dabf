"""helpers.events.EventRecorder against the real API server.

An Event is best effort: a write that fails, in whatever way, is logged and
never raised into the sync that reported it; and repeats of one Event are
counted on one object, even when several workers report it at the same time.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import kubernetes
import pytest

from helpers.events import NORMAL, EventRecorder
from helpers.faults.tcp_proxy import proxied_client

GUARD = 30.0


def _config_map(core: kubernetes.client.CoreV1Api, namespace: str, name: str) -> dict:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
    return core.api_client.sanitize_for_serialization(created)


def _events_about(core: kubernetes.client.CoreV1Api, namespace: str, name: str) -> list:
    selector = f"involvedObject.name={name}"
    return core.list_namespaced_event(namespace, field_selector=selector).items


@pytest.mark.cluster
def test_repeats_bump_the_count_of_one_event(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    notes = _config_map(core, namespace, "notes")
    recorder = EventRecorder(core, "test-events")
    for _ in range(3):
        recorder.event(notes, NORMAL, "Noted", "again")
    events = _events_about(core, namespace, "notes")
    assert [(e.reason, e.count, e.source.component) for e in events] == [
        ("Noted", 3, "test-events")
    ]


@pytest.mark.cluster
def test_a_read_timeout_is_logged_not_raised(
    api: kubernetes.client.ApiClient,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    """urllib3's ReadTimeoutError is no OSError: it must not escape into the sync."""
    with proxied_client(tmp_path) as (proxy, slow):
        core = kubernetes.client.CoreV1Api(slow)
        notes = _config_map(core, namespace, "slow")  # opens the connection the pool keeps
        recorder = EventRecorder(core, "test-events", request_timeout=(5.0, 0.5))
        assert proxy.stall() >= 1  # the API server's answer never crosses it
        with caplog.at_level(logging.WARNING, logger="helpers.events"):
            recorder.event(notes, NORMAL, "Noted", "too slow")  # must not raise
        proxy.cut()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "could not write Event Noted about slow" in warnings[0]
    assert "timed out" in warnings[0].lower()


@pytest.mark.cluster
def test_the_same_event_from_many_workers_at_once_is_one_event(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """The correlator reads its cache, writes, then remembers: without a lock per Event,
    eight workers reporting the same Event at once would create up to eight Events."""
    core = kubernetes.client.CoreV1Api(api)
    notes = _config_map(core, namespace, "busy")
    recorder = EventRecorder(core, "test-events")
    workers = 8
    start = threading.Barrier(workers)

    def report() -> None:
        start.wait(GUARD)
        recorder.event(notes, NORMAL, "Synced", "same message")

    threads = [threading.Thread(target=report, name=f"worker-{i}") for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(GUARD)
    assert not any(thread.is_alive() for thread in threads)
    events = _events_about(core, namespace, "busy")
    assert [(e.reason, e.count) for e in events] == [("Synced", workers)]
