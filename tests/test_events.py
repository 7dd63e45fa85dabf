"""helpers.events.EventRecorder against the real API server, and against none.

An Event is best effort: a write that fails, in whatever way, is logged and
never raised into the sync that reported it; and repeats of one Event are
counted on one object, even when several workers report it at the same time.

Unlike client-go's broadcaster, which tries a write that failed in transit up to
12 times, about 10 s apart (``recordToSink``), and drops at once only a rejection
(``recordEvent``), the recorder tries every write once: an Event whose write
fails in transit is lost. The tests without a cluster pin that down.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

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


NOTES = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "notes", "namespace": "shop", "uid": "uid-notes"},
}


class CountingCore(kubernetes.client.CoreV1Api):
    """A CoreV1Api that counts the Event writes it is asked to make, then makes them."""

    def __init__(self, api: kubernetes.client.ApiClient) -> None:
        super().__init__(api)
        self.calls: list[str] = []

    def create_namespaced_event(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("create")
        return super().create_namespaced_event(*args, **kwargs)

    def patch_namespaced_event(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("patch")
        return super().patch_namespaced_event(*args, **kwargs)


def _nobody_listening() -> kubernetes.client.ApiClient:
    """A client for a port that refuses connections, without urllib3's own retries (as the
    course's clients are made: helpers.kube.connect)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends: nothing listens
    configuration = kubernetes.client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    configuration.retries = False
    return kubernetes.client.ApiClient(configuration)


def test_a_refused_connection_loses_the_event_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One attempt, a warning, no exception and no wait: client-go would try the write again
    (up to 12 times, about 10 s apart); ours does not, so the Event is lost. A second report of the
    same Event is created afresh, not counted as a repeat: nothing remembers the lost one."""
    core = CountingCore(_nobody_listening())
    recorder = EventRecorder(core, "test-events")
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="helpers.events"):
        recorder.event(NOTES, NORMAL, "Noted", "nobody listens")  # must not raise
    took = time.monotonic() - started
    assert core.calls == ["create"], core.calls  # tried once
    assert took < 5, f"{took:.1f} s: the recorder waited, as client-go's retries would"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "could not write Event Noted about notes" in warnings[0]
    assert "refused" in warnings[0].lower(), warnings[0]
    with caplog.at_level(logging.WARNING, logger="helpers.events"):
        recorder.event(NOTES, NORMAL, "Noted", "nobody listens")
    assert core.calls == ["create", "create"], core.calls


class RejectingCore:
    """A CoreV1Api whose API server answers every Event write with ``status``."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.calls = 0

    def create_namespaced_event(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise ApiException(status=self.status, reason="Forbidden")


def test_a_rejected_write_is_dropped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """An error answer from the API server (client-go: a StatusError) is dropped at once, by
    client-go too: one attempt, a warning, no exception."""
    core = RejectingCore(403)
    recorder = EventRecorder(core, "test-events")  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="helpers.events"):
        recorder.event(NOTES, NORMAL, "Noted", "not allowed")
    assert core.calls == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "could not write Event Noted about notes" in warnings[0]
    assert "403" in warnings[0], warnings[0]
