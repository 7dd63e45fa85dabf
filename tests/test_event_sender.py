"""helpers.event_sender.EventSender: Events queued, written by a thread of their own.

client-go's recorder never makes a sync wait for an Event: the broadcaster
queues it (1,000 deep, dropping when full) and one goroutine writes. These
tests check the same promises: ``event()`` returns while the write is stuck,
a full queue drops and counts, ``stop()`` writes what is queued and is bounded
when a write hangs, and on the real API server the Events (and the counting
of repeats) come out as the synchronous recorder writes them.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from helpers.event_sender import EventSender
from helpers.events import NORMAL, EventRecorder
from helpers.faults.tcp_proxy import proxied_client

GUARD = 30.0
FOO = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "n"}}


class HeldRecorder:
    """A recorder whose writes wait until released: the sender's queue, seen from outside."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.writing = threading.Event()
        self.written: list[str] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.writing.set()
        assert self.release.wait(GUARD), "never released"
        self.written.append(reason)


def test_a_full_queue_drops_and_counts_and_never_blocks_the_caller() -> None:
    held = HeldRecorder()
    sender = EventSender(held, queue_size=1)  # type: ignore[arg-type]
    sender.event(FOO, NORMAL, "First", "taken by the thread")
    assert held.writing.wait(GUARD)  # the thread holds First: the queue is empty again
    sender.event(FOO, NORMAL, "Second", "waits in the queue")
    # A put that blocked would wait for the held write, which is released only below.
    third = threading.Thread(target=sender.event, args=(FOO, NORMAL, "Third", "no room"))
    third.start()
    third.join(GUARD)
    assert not third.is_alive(), "event() blocked on a full queue"
    assert sender.dropped == 1
    held.release.set()
    assert sender.stop(timeout=GUARD)
    assert held.written == ["First", "Second"]


def test_stop_is_bounded_when_a_write_hangs_and_later_events_are_dropped() -> None:
    held = HeldRecorder()
    sender = EventSender(held)  # type: ignore[arg-type]
    sender.event(FOO, NORMAL, "Stuck", "never answered")
    assert held.writing.wait(GUARD)
    started = time.monotonic()
    assert sender.stop(timeout=0.5) is False
    # It waited its timeout, and not for the write, which hangs until released below.
    assert 0.5 <= time.monotonic() - started < GUARD
    sender.event(FOO, NORMAL, "Late", "after stop")
    assert sender.dropped == 1
    held.release.set()
    assert sender.stop(timeout=GUARD)  # a second stop waits again, and now the thread ends
    assert held.written == ["Stuck"]


@pytest.mark.cluster
def test_queued_events_reach_the_api_server_counted_like_direct_ones(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "queued"}})
    notes = api.sanitize_for_serialization(created)
    sender = EventSender(EventRecorder(core, "test-event-sender"))
    for _ in range(3):
        sender.event(notes, NORMAL, "Noted", "again")
    sender.event(notes, NORMAL, "Other", "once")
    assert sender.stop(timeout=GUARD)
    events = core.list_namespaced_event(namespace, field_selector="involvedObject.name=queued")
    assert sorted((e.reason, e.count) for e in events.items) == [("Noted", 3), ("Other", 1)]
    assert sender.dropped == 0


@pytest.mark.cluster
def test_a_sync_does_not_wait_for_an_api_server_that_does_not_answer(
    api: kubernetes.client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    """Through a stalled connection, a direct write waits for its timeout; a queued one not."""
    with proxied_client(tmp_path) as (proxy, slow):
        core = kubernetes.client.CoreV1Api(slow)
        created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "stalled"}})
        notes = slow.sanitize_for_serialization(created)
        recorder = EventRecorder(core, "test-event-sender", request_timeout=(5.0, 2.0))
        sender = EventSender(recorder)
        assert proxy.stall() >= 1  # the API server's answers never cross it
        started = time.monotonic()
        sender.event(notes, NORMAL, "Noted", "while the API server is silent")
        queued = time.monotonic() - started
        started = time.monotonic()
        recorder.event(notes, NORMAL, "Direct", "waits for its read timeout")
        direct = time.monotonic() - started
        assert sender.stop(timeout=GUARD)  # the queued write timed out too, and was logged
        proxy.cut()
    # The direct write waits for its 2 s read timeout; queueing waits for nothing.
    assert direct >= 1.5 and queued < direct / 2, (queued, direct)


def test_an_event_sent_while_stop_begins_is_written_or_counted_never_lost() -> None:
    """The interleaving a lock must rule out: event() past its "stopped?" check, then stop().

    The queue's put is held at that point while stop() runs in another thread.
    Without the lock, stop() puts its end marker first, and the Event lands
    behind it: the thread never writes it, and ``dropped`` never counts it.
    """
    held = HeldRecorder()
    held.release.set()
    sender = EventSender(held)  # type: ignore[arg-type]
    marker_queued = threading.Event()
    stopper: list[threading.Thread] = []
    original_put, original_put_nowait = sender._queue.put, sender._queue.put_nowait

    def put(item: Any, *args: Any, **kwargs: Any) -> None:
        original_put(item, *args, **kwargs)
        if item is None:
            marker_queued.set()

    def put_nowait(item: Any) -> None:
        stopper.append(threading.Thread(target=sender.stop, args=(GUARD,)))
        stopper[0].start()
        # With the lock, stop() cannot get past it while this put is pending:
        # its marker must not be queued within this bound.
        marker_queued.wait(0.5)
        original_put_nowait(item)

    sender._queue.put, sender._queue.put_nowait = put, put_nowait  # type: ignore[method-assign]
    sender.event(FOO, NORMAL, "Racing", "sent as stop() begins")
    stopper[0].join(GUARD)
    assert not stopper[0].is_alive()
    assert held.written == ["Racing"] or sender.dropped == 1, (held.written, sender.dropped)
