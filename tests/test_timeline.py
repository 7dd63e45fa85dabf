"""The controller's observer hook, and the timeline recorded from it (no cluster needed).

The controller is chapter 05's real FooController with never-started informers whose caches
the tests fill, and recording clients instead of an API server (as tests/test_controller.py,
whose doubles these tests reuse). Workers are real threads on the real workqueue, so the
timeline can be compared with the queue's own metrics.
"""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from matplotlib.image import imread

from helpers.controller import FooController, new_deployment
from helpers.errors import CourseError
from helpers.faults.clients import FlakyClients
from helpers.testing.fakes import (
    GUARD,
    CapturingInformer,
    RecordingClients,
    RecordingQueue,
    new_foo,
)
from helpers.timeline import (
    FAILED,
    SKIPPED,
    SYNCED,
    InformerEvent,
    Sync,
    TimelineRecorder,
    caused,
    counts,
    overlapping,
    stale_reads,
    table,
)
from helpers.timeline_plot import ReconcileTimeline
from helpers.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Calls:
    """A SyncObserver that writes down every call, with the calling thread's name."""

    def __init__(self, log: list[Any] | None = None) -> None:
        self.log: list[Any] = [] if log is None else log

    def sync_started(self, key: str) -> None:
        self.log.append(("started", key, threading.current_thread().name))

    def sync_finished(self, key: str, error: Exception | None) -> None:
        self.log.append(("finished", key, type(error).__name__ if error else None))

    def wrote(self, verb: str, name: str, error: Exception | None) -> None:
        self.log.append(("wrote", verb, name, type(error).__name__ if error else None))

    def requeued(self, key: str, delay: float) -> None:
        self.log.append(("requeued", key, delay))


def controller_with(
    *foos: dict[str, Any],
    deployments: tuple[dict[str, Any], ...] = (),
    clients: Any = None,
    queue: RateLimitingQueue[str] | None = None,
) -> FooController:
    foo_informer = CapturingInformer(name="foos")
    deployment_informer = CapturingInformer(name="deployments")
    for foo in foos:
        foo_informer.indexer.add(foo)
    for deployment in deployments:
        deployment_informer.indexer.add(deployment)
    return FooController(
        clients or RecordingClients(),
        foo_informer,
        deployment_informer,
        workqueue=queue or RecordingQueue(),
    )


# --- the hook -------------------------------------------------------------------------------------


def test_nobody_observing_leaves_the_controller_as_it_was() -> None:
    controller = controller_with(new_foo("test", 1))
    clients, limiter = controller.clients, controller.workqueue.rate_limiter
    assert controller.observer is None

    controller.observe(Calls())
    assert controller.clients is not clients and controller.workqueue.rate_limiter is not limiter
    controller.observe(None)
    assert controller.observer is None
    assert controller.clients is clients, "the clients are the very same object again"
    assert controller.workqueue.rate_limiter is limiter

    controller.workqueue.add("default/test")
    assert controller.process_next_work_item() is True
    assert [a.verb for a in clients.actions] == ["create", "update"]
    controller.workqueue.shut_down()


def test_observing_twice_wraps_once() -> None:
    controller = controller_with()
    clients = controller.clients
    controller.observe(Calls())
    controller.observe(Calls())
    assert controller.clients.inner is clients  # type: ignore[attr-defined]
    controller.workqueue.shut_down()


def test_a_sync_is_reported_in_order_in_the_workers_thread() -> None:
    calls = Calls()
    controller = controller_with(new_foo("test", 1))
    controller.observe(calls)
    controller.workqueue.add("default/test")

    worker = threading.Thread(target=controller.process_next_work_item, name="foo-worker-7")
    worker.start()
    worker.join(GUARD)

    assert calls.log == [
        ("started", "default/test", "foo-worker-7"),
        ("wrote", "create Deployment", "test-deployment", None),
        ("wrote", "update Foo status", "test", None),
        ("wrote", "Event Synced", "test", None),
        ("finished", "default/test", None),
    ]
    controller.workqueue.shut_down()


def test_a_failed_sync_reports_its_error_and_delay_before_done() -> None:
    """The key's next sync can only start after done(): finished must come before it."""
    foo = new_foo("test", 1)
    theirs = new_deployment(foo)
    theirs["metadata"]["ownerReferences"] = []
    queue = RecordingQueue()
    shared: list[Any] = []
    queue.calls = shared  # done() and the observer write into one list
    controller = controller_with(foo, deployments=(theirs,), queue=queue)
    controller.observe(Calls(shared))
    controller.workqueue.add("default/test")
    assert controller.process_next_work_item() is True

    assert shared == [
        ("started", "default/test", "MainThread"),
        ("wrote", "Event ErrResourceExists", "test", None),
        ("add_rate_limited", "default/test"),
        ("requeued", "default/test", 0.005),
        ("finished", "default/test", "ResourceExistsError"),
        ("done", "default/test"),
    ]
    controller.workqueue.shut_down()


def test_a_failed_write_is_reported_with_its_error() -> None:
    clients = RecordingClients()
    clients.fail["update_foo_status"] = ApiException(status=409, reason="Conflict")
    calls = Calls()
    controller = controller_with(new_foo("test", 1), clients=clients)
    controller.observe(calls)
    controller.workqueue.add("default/test")
    controller.process_next_work_item()
    assert ("wrote", "update Foo status", "test", "ApiException") in calls.log
    assert calls.log[-1] == ("finished", "default/test", "ApiException")
    controller.workqueue.shut_down()


def test_a_sync_notes_the_failures_the_limiter_remembers_as_it_ends() -> None:
    """Read between forget (or add_rate_limited) and done: two failures, then a success."""
    clients = RecordingClients()
    controller = controller_with(new_foo("test", 1), clients=clients)
    recorder = TimelineRecorder(controller)
    clients.fail["update_foo_status"] = ApiException(status=409, reason="Conflict")
    for _ in range(2):
        controller.workqueue.add("default/test")
        controller.process_next_work_item()
    del clients.fail["update_foo_status"]
    controller.workqueue.add("default/test")
    controller.process_next_work_item()
    assert [s.remembered for s in recorder.syncs()] == [1, 2, 0]
    controller.workqueue.shut_down()


# --- what the recorder makes of it ----------------------------------------------------------------


def test_outcomes_synced_failed_skipped() -> None:
    clients = RecordingClients()
    controller = controller_with(new_foo("ok", 1), new_foo("broken", 1), clients=clients)
    recorder = TimelineRecorder(controller)
    clients.fail["update_foo_status"] = ApiException(status=409, reason="Conflict")
    controller.workqueue.add("default/broken")
    controller.process_next_work_item()
    del clients.fail["update_foo_status"]
    controller.workqueue.add("default/ok")
    controller.workqueue.add("default/gone")
    controller.process_next_work_item()
    controller.process_next_work_item()

    broken, ok, gone = recorder.syncs()
    assert (broken.outcome, ok.outcome, gone.outcome) == (FAILED, SYNCED, SKIPPED)
    assert broken.error is not None and broken.error.startswith("409 Conflict")
    assert broken.requeue_after == 0.005 and ok.requeue_after is None
    assert [w.verb for w in ok.writes] == ["create Deployment", "update Foo status", "Event Synced"]
    assert gone.writes == [] and gone.seen == {}
    assert ok.seen == {"Foo": "1"}, "the Foo's version in the cache; no Deployment there yet"
    assert all(s.started <= s.ended for s in (broken, ok, gone))  # type: ignore[operator]
    assert [w.error is not None for w in broken.writes] == [False, True]
    assert counts(recorder.syncs()) == {SYNCED: 1, FAILED: 1, SKIPPED: 1, "running": 0}
    controller.workqueue.shut_down()


def test_bars_match_the_workqueue_metrics_and_never_overlap_for_one_key() -> None:
    """Four workers, hot keys, every fourth write failing: one bar per get/done, one failed bar
    per retry the queue counted, and no key synced by two workers at the same time."""
    foos = [new_foo(f"foo-{n}", 1) for n in range(8)]
    queue: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(0.001, 0.01), "Foos"
    )
    inner = RecordingClients()
    flaky = FlakyClients(inner, fail_every=4)
    controller = controller_with(*foos, clients=flaky, queue=queue)
    recorder = TimelineRecorder(controller)
    workers = [
        threading.Thread(target=controller.run_worker, args=(threading.Event(),), name=f"w-{n}")
        for n in range(4)
    ]
    for worker in workers:
        worker.start()
    for round_ in range(40):
        finished = len([s for s in recorder.syncs() if s.ended is not None])
        for n in range(8):
            if n < 2 or round_ % 10 == 0:  # foo-0 and foo-1 are hot
                queue.add(f"default/foo-{n}")
        recorder.wait_for(  # the next round once a sync has ended: adds while keys are busy
            lambda r, before=finished: len([s for s in r.syncs() if s.ended]) > before,
            "one more finished sync",
            timeout=GUARD,
        )
    assert counts(recorder.syncs())[SYNCED] >= 20 and counts(recorder.syncs())[FAILED] >= 5
    # A failure during shutdown is not retried, and so not counted as one: stop failing first,
    # and let every sync that might still fail end.
    flaky.fail_every = 0
    started = len(recorder.syncs())
    recorder.wait_for(
        lambda r: all(s.ended is not None for s in r.syncs()[:started]), "the syncs to end", GUARD
    )
    queue.shut_down_with_drain()
    for worker in workers:
        worker.join(GUARD)

    syncs = recorder.syncs()
    metrics = queue.metrics.snapshot()
    found = counts(syncs)
    assert len(syncs) == metrics["work_duration_seconds"]["count"], "one bar per get/done"
    assert found[FAILED] == metrics["retries_total"], "one failed bar per counted retry"
    assert found[FAILED] == flaky.failed and found["running"] == 0
    assert overlapping(syncs) == []
    assert {s.worker for s in syncs} <= {f"w-{n}" for n in range(4)}
    assert len({s.worker for s in syncs}) > 1, "several workers took part"


def test_overlapping_finds_two_syncs_of_one_key_at_once() -> None:
    a = Sync("w-1", "ns/k", 0.0, 1.0, SYNCED)
    b = Sync("w-2", "ns/k", 0.5, 1.5, SYNCED)
    c = Sync("w-2", "ns/other", 0.2, 0.4, SYNCED)
    d = Sync("w-1", "ns/k", 1.0, 2.0, SYNCED)  # starts as a ends: not at once
    assert overlapping([a, b, c]) == [(a, b)]
    assert overlapping([a, c, d]) == []
    assert overlapping([Sync("w-1", "ns/k", 0.0), Sync("w-2", "ns/k", 0.1)]) != [], "running"


def test_table_has_one_line_per_sync_with_what_a_bar_means() -> None:
    syncs = [
        Sync("foo-worker-1", "ns/first", 0.25, 0.262, SYNCED),
        Sync("foo-worker-2", "ns/flaky", 1.5, 1.501, FAILED, "InjectedFailure: boom", 0.02),
    ]
    lines = table(syncs).splitlines()
    assert len(lines) == 3 and "outcome" in lines[0]
    assert lines[1].split() == ["t+0.250s", "foo-worker-1", "ns/first", "12", "ms", "synced"]
    assert "failed, back in 0.02 s: InjectedFailure: boom" in lines[2]
    assert "ns/" not in table(syncs, names_only=True)
    assert len(table(syncs, last=1).splitlines()) == 2


def test_wait_saw_follows_the_order_the_informer_delivered() -> None:
    recorder = TimelineRecorder()
    for version in ("7", "12", "9"):  # the order of delivery counts, not the numbers
        recorder._events.append(InformerEvent(0.0, "Foo", "update", "x", version=version))
    recorder._syncs.append(Sync("w", "ns/x", 0.1, 0.2, SYNCED, seen={"Foo": "9"}))
    assert recorder.wait_saw("Foo", "x", "12", timeout=0.1).seen["Foo"] == "9"
    with pytest.raises(TimeoutError, match="a sync that read Foo x"):
        recorder.wait_saw("Foo", "x", "13", timeout=0.05)
    recorder._syncs[0].seen["Foo"] = "7"
    with pytest.raises(TimeoutError):
        recorder.wait_saw("Foo", "x", "12", timeout=0.05)


def test_wait_saw_can_ask_for_the_sync_that_did_not_fail() -> None:
    """A first try that met a 409 read the change too; the sync that acted on it is the retry."""
    recorder = TimelineRecorder()
    for version in ("12", "13"):
        recorder._events.append(InformerEvent(0.0, "Deployment", "update", "x", version=version))
    recorder._syncs.append(Sync("w", "ns/x", 0.1, 0.2, FAILED, seen={"Deployment": "12"}))
    assert recorder.wait_saw("Deployment", "x", "12", timeout=0.05).outcome == FAILED
    with pytest.raises(TimeoutError):
        recorder.wait_saw("Deployment", "x", "12", timeout=0.05, failed=False)
    recorder._syncs.append(Sync("w", "ns/x", 0.3, 0.4, SYNCED, seen={"Deployment": "13"}))
    assert recorder.wait_saw("Deployment", "x", "12", timeout=0.05, failed=False).started == 0.3


def test_detach_stops_recording_and_keeps_the_record() -> None:
    controller = controller_with(new_foo("test", 1))
    recorder = TimelineRecorder(controller)
    controller.workqueue.add("default/test")
    controller.process_next_work_item()
    recorder.detach()
    assert controller.observer is None and recorder.controller is None
    assert [h.name for h in controller.foo_informer.handlers] == ["foo-controller"]
    controller.workqueue.add("default/test")
    controller.process_next_work_item()
    assert len(recorder.syncs()) == 1
    controller.workqueue.shut_down()


# --- the picture ----------------------------------------------------------------------------------


def test_the_picture_is_a_png_and_follows_a_restarted_controller() -> None:
    controller = controller_with(new_foo("test", 1))
    recorder = TimelineRecorder(controller)
    picture = ReconcileTimeline(recorder, caption="a test", show=False, last=3)
    with picture:
        controller.workqueue.add("default/test")
        controller.process_next_work_item()
        again = controller_with(new_foo("test", 1))
        picture.follow(again)
        assert recorder.controller is again and again.observer is recorder
        picture.freeze()
    assert picture.png is not None and picture.png.startswith(PNG_SIGNATURE)
    _height, width, _ = imread(io.BytesIO(picture.png)).shape
    assert width == 820, "8.2 inches at 100 dpi: 10-point text is 14 pixels high"
    assert picture.frames >= 1
    for queue in (controller.workqueue, again.workqueue):
        queue.shut_down()


def test_freeze_on_shows_the_syncs_it_is_given_and_the_title_counts_what_overlaps() -> None:
    """The title counts every sync that overlaps the span, a sync cut by its edge too."""
    controller = controller_with(new_foo("test", 1))
    recorder = TimelineRecorder(controller)
    recorder._syncs += [
        Sync("w-1", "ns/a", 1.0, 2.0, SYNCED),
        Sync("w-1", "ns/a", 2.5, 3.0, FAILED, "boom"),
        Sync("w-2", "ns/b", 0.0, 1.2, SKIPPED),  # overlaps the span's left edge
        Sync("w-2", "ns/b", 9.0, 9.5, SYNCED),  # after it
        Sync("w-2", "ns/c", 3.02, 3.1, SYNCED),  # begun in the right margin, after the last one
    ]
    picture = ReconcileTimeline(recorder, caption="c", title="t", show=False)
    with pytest.raises(ValueError, match="ended"):
        picture.freeze_on([Sync("w", "ns/a", 0.0)])
    picture.freeze_on(recorder.syncs()[:2])
    picture._draw()
    assert picture.title.get_text() == "t: 3 syncs (1 synced, 1 failed, 1 skipped)"
    controller.workqueue.shut_down()


def test_live_it_shows_the_cells_own_experiment_and_says_what_it_drew(capsys: Any) -> None:
    """While live, a picture shows what happened since it started, not the whole record (a
    learner saw "222 syncs, 83 failed" where the cell's own experiment had 30); stopped in
    Jupyter it prints one line: lanes, syncs by outcome, informer events, the span."""
    controller = controller_with(new_foo("test", 1))
    recorder = TimelineRecorder(controller, started_at=0.0)
    recorder._syncs += [Sync("w-1", "ns/old", 1.0, 2.0, FAILED, "boom") for _ in range(5)]
    recorder._events += [InformerEvent(1.5, "Foo", "add", "old", (), "1", "ns/old")]
    picture = ReconcileTimeline(recorder, caption="c", title="t", show=False)
    picture.start()
    opened = picture._opened
    recorder._syncs += [Sync("w-1", "ns/new", opened + 0.01, opened + 0.02, SYNCED)]
    recorder._events += [InformerEvent(opened + 0.005, "Foo", "add", "new", (), "2", "ns/new")]
    picture.live.render()  # a live frame
    assert picture.title.get_text() == "t: 1 syncs (1 synced, 0 failed)"
    assert picture.drawn is not None and (picture.drawn.failed, picture.drawn.events) == (0, 1)
    picture.live.show = True  # as in Jupyter, where stop() prints what it drew
    picture.freeze(opened, opened + 1.0)
    picture.stop()
    picture.stop()
    printed = capsys.readouterr().out
    assert printed == (
        "drawn: 1 worker lane, 1 sync (1 synced, 0 failed, 0 skipped), "
        "1 informer event, over ≈1.0 s\n"
    ), printed
    controller.workqueue.shut_down()


def test_an_annotated_picture_names_each_kind_of_mark_once() -> None:
    """The first picture's callouts: an event, the line to the sync it woke, a sync's bar, and
    a failed sync's wait for its retry (5 ms, drawn no shorter than 6 pixels)."""
    controller = controller_with(new_foo("test", 1))
    recorder = TimelineRecorder(controller, started_at=0.0)
    recorder._events += [InformerEvent(0.1, "Foo", "add", "test", (), "1", "default/test")]
    recorder._syncs += [
        Sync("w-1", "default/test", 0.11, 0.12, FAILED, "boom", requeue_after=0.005,
             requeued_at=0.12, seen={"Foo": "1"}),
        Sync("w-2", "default/test", 0.13, 0.3, SYNCED, seen={"Foo": "1"}),
    ]  # fmt: skip
    picture = ReconcileTimeline(recorder, caption="c", show=False, annotate=True)
    picture.freeze(0.0, 1.0)
    picture.live.render()
    texts = [a.get_text() for a in picture._artists if hasattr(a, "arrow_patch")]
    assert [t.split()[0] for t in texts] == ["an", "grey:", "a", "red"], texts
    assert "here\nFoo add" in texts[0] and "waits\n5 ms" in texts[3]
    plain = ReconcileTimeline(recorder, caption="c", show=False)
    plain.freeze(0.0, 1.0)
    plain.live.render()
    assert not [a for a in plain._artists if hasattr(a, "arrow_patch")]
    controller.workqueue.shut_down()


def test_an_event_is_linked_to_the_first_sync_that_read_what_it_delivered() -> None:
    """Not to the first sync after it in time: the controller's handler and the recorder's run
    in threads of their own, so a sync can start before the recorder notes the event."""
    events = [
        InformerEvent(1.00, "Foo", "update", "x", ("spec",), "5", "ns/x"),
        InformerEvent(1.10, "Foo", "update", "x", ("status",), "6", "ns/x"),
        InformerEvent(2.00, "Deployment", "delete", "x", (), "9", "ns/x"),
        InformerEvent(2.10, "Deployment", "update", "other", (), "3", ""),  # nobody's key
    ]
    syncs = [
        Sync("w", "ns/x", 0.99, 1.05, SYNCED, seen={"Foo": "5"}),  # began before the event's note
        Sync("w", "ns/x", 1.20, 1.30, SYNCED, seen={"Foo": "6"}),
        Sync("w", "ns/x", 2.05, 2.10, SYNCED, seen={"Foo": "6"}),
    ]
    assert [(e.version, s.started) for e, s in caused(events, syncs)] == [
        ("5", 0.99), ("6", 1.20), ("9", 2.05),
    ]  # fmt: skip


def test_the_recorder_notes_the_versions_a_sync_read_and_its_writes_made() -> None:
    controller = controller_with(new_foo("test", 1))
    recorder = TimelineRecorder(controller)
    controller.workqueue.add("default/test")
    controller.process_next_work_item()
    (sync,) = recorder.syncs()
    assert sync.seen == {"Foo": "1"}, "the Foo it read; the Deployment it did not find"
    versions = {w.verb: w.version for w in sync.writes}
    # RecordingClients answers with the object as sent: the Foo keeps its version "1".
    assert versions == {"create Deployment": "", "update Foo status": "1", "Event Synced": ""}
    recorder.detach()
    assert not hasattr(controller.foos_lister, "inner"), "detach takes the listers back"
    assert not hasattr(controller.clients, "inner"), "and the clients"
    controller.workqueue.shut_down()


def test_the_queue_levels_count_keys_waiting_out_a_retry_delay() -> None:
    """The depth does not count a key in its retry delay; the picture's third line does."""
    queue: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(60, 60), "Foos"
    )
    controller = controller_with(queue=queue)
    recorder = TimelineRecorder(controller)
    queue.add_rate_limited("ns/a")
    queue.add("ns/b")
    recorder.sample_queue()
    level = recorder.levels()[-1]
    assert (level.ready, level.in_flight, level.waiting) == (1, 0, 1)
    queue.shut_down()


def test_stale_reads_are_told_by_versions_not_by_409s() -> None:
    """The exercise's record: b and d read an older Foo than our own last write; e's 409 was
    someone else's doing, and d failed before it could meet one."""
    from helpers.exercises.ch06 import SYNCS_4, record_4

    syncs, events = record_4()
    letters = dict(zip((s.started for s in syncs), SYNCS_4, strict=True))
    assert {letters[s.started] for s in stale_reads(syncs, events)} == {"b", "d"}
    failed_409 = {letters[s.started] for s in syncs if s.error and "409" in s.error}
    assert failed_409 == {"b", "e"}, "so a check cannot take 409s for stale reads"


def test_a_recorder_without_a_controller_cannot_be_drawn() -> None:
    with pytest.raises(CourseError, match="observes no controller"):
        ReconcileTimeline(TimelineRecorder(), caption="c")
