"""The shared informer, scenario by scenario, as client-go's shared_informer_test.go specifies it.

Unit tests run a :class:`SharedInformer` on :class:`FakeSource`, the
in-process ListWatch stand-in from ``test_reflector`` (client-go's
``fakeControllerSource``), and are named ``test_<what>__<UpstreamTest>``.
Time is a FakeClock where resync or backoff matters. Nothing sleeps to
synchronise: tests wait on handler conditions, on the fake clock's parked
waiters, or on ``wait_until_idle``, each with a real-time guard. Tests marked
``cluster`` run against the real API server.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import kubernetes
import pytest

from helpers.backoff import Backoff
from helpers.clock import FakeClock, StopEvent
from helpers.cluster.info import describe
from helpers.etcd import EtcdClient
from helpers.held_watch import HeldListWatch
from helpers.informer import (
    REPLACED_ALL,
    Delta,
    HandlerRegistration,
    InformerStoppedError,
    SharedInformer,
    wait_for_cache_sync,
)
from helpers.lister import NotFoundError
from helpers.listwatch import ListWatch, WatchExpired
from helpers.store import DeletedFinalStateUnknown
from helpers.testing.fakes import FakeSource, ListCall, api_error, informer_on

GUARD = 10.0
"""Real seconds before a wait that should succeed is declared a failure."""

HOUR = 3600.0


def name_of(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key.rsplit("/", 1)[-1]
    return obj["metadata"]["name"]


def rv_of(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    return obj["metadata"]["resourceVersion"]


class Recorder:
    """An event handler that records what it is told and lets a test wait for it."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.gate = gate  # if set, every call waits for it: a deliberately slow handler
        self._cond = threading.Condition()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record(("add", name_of(obj), is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self._record(("update", name_of(new), rv_of(old), rv_of(new)))

    def on_delete(self, obj: Any) -> None:
        self._record(("delete", name_of(obj), obj))

    def _record(self, event: tuple[Any, ...]) -> None:
        if self.gate is not None:
            assert self.gate.wait(GUARD), "the slow handler was never released"
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def names(self, kind: str | None = None) -> set[str]:
        with self._cond:
            return {e[1] for e in self.events if kind is None or e[0] == kind}

    def snapshot(self) -> list[tuple[Any, ...]]:
        with self._cond:
            return list(self.events)

    def reset(self) -> None:
        with self._cond:
            self.events.clear()

    def wait_for(self, predicate: Callable[[Recorder], bool], timeout: float = GUARD) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)


def watching(informer: SharedInformer, watches: int = 1) -> None:
    """Wait until the reflector has made its ``watches``-th WATCH: its watch phase has begun, so
    the resync deadline is set (a check period after the LIST)."""
    assert informer.reflector.wait_for(lambda r: r.watches >= watches, GUARD), "no watch"


def settled(clock: FakeClock, *registrations: HandlerRegistration) -> None:
    """Wait until the processing thread is parked on the clock and every handler is idle."""
    assert clock.wait_for_waiters(1, timeout=GUARD), "processing thread did not park"
    for registration in registrations:
        assert registration.wait_until_idle(GUARD), f"{registration.name} did not catch up"


# --- resync periods -------------------------------------------------------------------


def test_resync_check_period__TestResyncCheckPeriod() -> None:
    """shared_informer_test.go TestResyncCheckPeriod: informer 12 h; handlers 0, 1 m, 55 s,
    5 s -> check period 12 h, 1 m, 55 s, 5 s; each handler keeps its own period."""
    informer = informer_on(FakeSource(), resync_period=12 * HOUR, clock=FakeClock())
    h1 = informer.add_event_handler(Recorder(), resync_period=0)
    assert (informer.resync_check_period, h1.resync_period) == (12 * HOUR, 0)
    h2 = informer.add_event_handler(Recorder(), resync_period=60)
    assert (informer.resync_check_period, h1.resync_period, h2.resync_period) == (60, 0, 60)
    h3 = informer.add_event_handler(Recorder(), resync_period=55)
    assert informer.resync_check_period == 55
    assert (h1.resync_period, h2.resync_period, h3.resync_period) == (0, 60, 55)
    h4 = informer.add_event_handler(Recorder(), resync_period=5)
    assert informer.resync_check_period == 5
    assert [h.resync_period for h in (h1, h2, h3, h4)] == [0, 60, 55, 5]


def test_resync_period_rules_of_add_event_handler() -> None:
    """shared_informer.go AddEventHandlerWithResyncPeriod: minimum 1 s; after start never
    below the check period; no resync at all on an informer whose resync period is 0."""
    informer = informer_on(FakeSource(), resync_period=10, clock=FakeClock())
    assert informer.add_event_handler(Recorder(), resync_period=0.01).resync_period == 1.0
    assert informer.add_event_handler(Recorder()).resync_period == 10  # the informer's default
    with informer:
        late = informer.add_event_handler(Recorder(), resync_period=0.5)
        assert late.resync_period == 1.0  # the check period is 1 s now, and cannot shrink
    never = informer_on(FakeSource(), resync_period=0, clock=FakeClock())
    assert never.add_event_handler(Recorder(), resync_period=30).resync_period == 0


def test_each_handler_resyncs_on_its_own_period__TestListenerResyncPeriods() -> None:
    """shared_informer_test.go TestListenerResyncPeriods: informer 1 s; listeners 0, 2 s, 3 s.
    At 2 s only listener 2 gets the cache again; at 3 s only listener 3."""
    clock = FakeClock()
    source = FakeSource()
    source.add("pod1")
    source.add("pod2")
    informer = informer_on(source, resync_period=1, clock=clock)
    recorders = [Recorder(), Recorder(), Recorder()]
    regs = [
        informer.add_event_handler(r, resync_period=p)
        for r, p in zip(recorders, (0, 2, 3), strict=True)
    ]
    with informer:
        for r in recorders:
            assert r.wait_for(lambda r: r.names("add") == {"pod1", "pod2"})
        watching(informer)
        settled(clock, *regs)
        for r in recorders:
            r.reset()

        clock.step(2)
        assert recorders[1].wait_for(lambda r: r.names("update") == {"pod1", "pod2"})
        settled(clock, *regs)
        assert recorders[0].snapshot() == [] and recorders[2].snapshot() == []
        for r in recorders:
            r.reset()

        clock.step(1)
        assert recorders[2].wait_for(lambda r: r.names("update") == {"pod1", "pod2"})
        settled(clock, *regs)
        assert recorders[0].snapshot() == [] and recorders[1].snapshot() == []
    resync = [e for e in recorders[2].snapshot() if e[0] == "update"]
    assert all(old == new for _, _, old, new in resync), "a resync replays the same version"


# --- re-lists ---------------------------------------------------------------------------


def test_watch_disruption__TestSharedInformerWatchDisruption() -> None:
    """shared_informer_test.go TestSharedInformerWatchDisruption: changes made while the watch
    is broken arrive with the re-list; a handler without resync sees only the changed and new
    objects, a handler with resync also sees the unchanged one."""
    clock = FakeClock()
    source = FakeSource()
    source.add("pod1")
    source.add("pod2")
    informer = informer_on(
        source, resync_period=1, clock=clock, backoff=Backoff(initial=1.0, jitter=0.0, clock=clock)
    )
    no_resync, with_resync = Recorder(), Recorder()
    regs = [
        informer.add_event_handler(no_resync, resync_period=0),
        informer.add_event_handler(with_resync, resync_period=1),
    ]
    with informer:
        for r in (no_resync, with_resync):
            assert r.wait_for(lambda r: r.names() == {"pod1", "pod2"})
        source.add("pod3", broadcast=False)
        source.modify("pod2", broadcast=False)
        watching(informer)
        settled(clock, *regs)
        assert no_resync.names() == with_resync.names() == {"pod1", "pod2"}, "nobody saw it"
        no_resync.reset()
        with_resync.reset()

        clock.step(1)  # resync check: with_resync is due, no_resync never is
        assert with_resync.wait_for(lambda r: r.names("update") == {"pod1", "pod2"})
        source.reset_watch()  # the watch ends with 410 Expired
        assert clock.wait_for_waiters(2, timeout=GUARD), "reflector should back off"
        clock.step(1)  # past the backoff: re-list

        assert no_resync.wait_for(lambda r: r.names() == {"pod2", "pod3"})
        assert with_resync.wait_for(lambda r: r.names() == {"pod1", "pod2", "pod3"})
        assert source.wait_for(lambda s: len(s.watch_calls) == 2)
        settled(clock, *regs)
    assert no_resync.names() == {"pod2", "pod3"}
    assert ("update", "pod2", "2", "4") in no_resync.snapshot()
    assert ("add", "pod3", False) in no_resync.snapshot()
    assert isinstance(informer.reflector.last_error, WatchExpired)
    assert informer.reflector.relists == 1


def test_no_resync_while_the_reflector_cannot_list__watchWithResync() -> None:
    """reflector.go watchWithResync: client-go's resync timer runs only while the reflector
    watches, from each successful LIST. A watch that ends with 410, then LISTs that fail for
    6 s (three periods): no resync at all. The next LIST starts the period again."""
    clock = FakeClock()
    source = FakeSource()
    source.add("pod1")
    backoff = Backoff(initial=1.0, factor=1.0, jitter=0.0, clock=clock)
    informer = informer_on(source, resync_period=2, clock=clock, backoff=backoff)
    recorder = Recorder()
    registration = informer.add_event_handler(recorder)
    etcd_down = threading.Event()

    def on_list(call: ListCall) -> dict[str, Any] | None:
        if etcd_down.is_set():
            raise api_error(500, "InternalError", "etcdserver: request timed out")
        return None

    source.on_list = on_list
    resync = ("update", "pod1", "1", "1")
    with informer:
        assert recorder.wait_for(lambda r: r.names("add") == {"pod1"})
        watching(informer)
        settled(clock, registration)
        clock.step(2)  # a period after the LIST: the cache is replayed
        assert recorder.wait_for(lambda r: resync in r.events)
        recorder.reset()

        etcd_down.set()
        source.reset_watch()  # 410: back to LIST, which fails, again and again
        for lists in range(2, 8):
            assert clock.wait_for_waiters(2, timeout=GUARD), "the reflector should back off"
            clock.step(1)
            assert source.wait_for(lambda s, n=lists: len(s.list_calls) >= n)
        assert clock.wait_for_waiters(2, timeout=GUARD)
        settled(clock, registration)
        assert recorder.snapshot() == [], "resynced while the reflector could not list"

        etcd_down.clear()
        clock.step(1)  # the LIST succeeds; the next resync is a period away
        watching(informer, 2)
        settled(clock, registration)
        recorder.reset()  # the re-list's unchanged pod1, to a handler marked due at t=2
        clock.step(1)
        settled(clock, registration)
        assert recorder.snapshot() == [], "resynced less than a period after the LIST"
        clock.step(1)
        assert recorder.wait_for(lambda r: resync in r.events)
    assert informer.reflector.relists == 7


def test_resync_goes_on_while_a_refused_watch_is_retried__isWatchErrorRetriable() -> None:
    """reflector.go watch: a refused connection (or a 429) is retried inside the watch phase,
    without a LIST, so client-go's resync timer keeps running; ours too."""
    clock = FakeClock()
    source = FakeSource()
    source.add("pod1")
    backoff = Backoff(initial=1.0, factor=1.0, jitter=0.0, clock=clock)
    informer = informer_on(source, resync_period=2, clock=clock, backoff=backoff)
    recorder = Recorder()
    registration = informer.add_event_handler(recorder)

    def refuse(call: Any) -> Any:
        raise ConnectionRefusedError("connection refused")

    with informer:
        assert recorder.wait_for(lambda r: r.names("add") == {"pod1"})
        watching(informer)
        settled(clock, registration)
        stream = source.open_streams()[0]
        source.on_watch = refuse
        source.modify("pod1")  # one event, so that the watch ending now is not "very short"
        assert recorder.wait_for(lambda r: ("update", "pod1", "1", "2") in r.events)
        stream.end()  # the reflector watches again, is refused, and backs off
        assert source.wait_for(lambda s: len(s.watch_calls) == 2)
        assert clock.wait_for_waiters(2, timeout=GUARD)
        clock.step(1)
        assert source.wait_for(lambda s: len(s.watch_calls) == 3), "refused, watched again"
        assert clock.wait_for_waiters(2, timeout=GUARD)
        clock.step(1)  # a period after the LIST, with no watch open
        assert recorder.wait_for(lambda r: ("update", "pod1", "2", "2") in r.events)
    assert len(source.list_calls) == 1, "a refused watch is retried without a LIST"


def test_a_resync_waits_behind_the_deltas_already_queued__RealFIFO_Resync() -> None:
    """the_real_fifo.go Resync: one SyncAll at the tail of the queue. A resync whose deadline
    passes while the processing thread applies one change, with another queued behind it,
    replays the cache after both: never a state older than what was already queued."""
    clock = FakeClock()
    source = FakeSource()
    source.add("pod1")
    source.add("pod2")
    applying, gate = threading.Event(), threading.Event()

    def slow_index(obj: Any) -> list[str]:
        if obj["metadata"]["resourceVersion"] == "3":  # pod1's change: hold the processing thread
            applying.set()
            assert gate.wait(GUARD)
        return [obj["metadata"]["namespace"]]

    informer = informer_on(source, resync_period=1, clock=clock, indexers={"namespace": slow_index})
    recorder = Recorder()
    registration = informer.add_event_handler(recorder)
    with informer:
        assert recorder.wait_for(lambda r: r.names("add") == {"pod1", "pod2"})
        watching(informer)
        settled(clock, registration)
        source.modify("pod1")  # resourceVersion 3
        assert applying.wait(GUARD)
        clock.step(1)  # the resync deadline passes while pod1's change is being applied
        source.modify("pod2")  # resourceVersion 4, queued behind it
        assert informer.reflector.wait_for(lambda r: r.events >= 2, GUARD)
        gate.set()
        assert recorder.wait_for(lambda r: len(r.events) == 6)
        settled(clock, registration)
    assert [e for e in recorder.snapshot() if e[0] == "update"] == [
        ("update", "pod1", "1", "3"),
        ("update", "pod2", "2", "4"),
        ("update", "pod1", "3", "3"),  # the resync, after both changes
        ("update", "pod2", "4", "4"),
    ]


def test_relist_delivers_tombstones_for_missed_deletes() -> None:
    """RealFIFO ReplacedAll: keys missing from the new list -> OnDelete(DeletedFinalStateUnknown
    with the last known object), before the updates and adds, in list order."""
    source = FakeSource()
    for name in ("a", "b", "c"):
        source.add(name)
    informer = informer_on(source)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    with informer:
        assert recorder.wait_for(lambda r: r.names("add") == {"a", "b", "c"})
        assert {e[2] for e in recorder.snapshot()} == {True}, "initial list adds"
        recorder.reset()
        source.delete("a", broadcast=False)
        source.modify("c", broadcast=False)
        source.add("d", broadcast=False)
        source.reset_watch()
        assert recorder.wait_for(lambda r: len(r.events) == 3)
    tombstone_event, update, add = recorder.snapshot()
    assert tombstone_event[:2] == ("delete", "a")
    tombstone = tombstone_event[2]
    assert isinstance(tombstone, DeletedFinalStateUnknown)
    assert (tombstone.key, tombstone.obj["metadata"]["resourceVersion"]) == ("default/a", "1")
    assert update == ("update", "c", "3", "5")
    assert add == ("add", "d", False)  # not initial: the informer had synced long before
    assert informer.indexer.list_keys() == ["default/b", "default/c", "default/d"]


def test_cache_is_updated_before_handlers_hear() -> None:
    """processDeltas: the indexer changes first, so a handler reading the cache sees the change."""
    source = FakeSource()
    informer = informer_on(source)
    seen_in_cache: list[Any] = []
    done = threading.Event()

    def on_add(obj: Any, initial: bool) -> None:
        seen_in_cache.append(informer.indexer.get_by_key(f"default/{name_of(obj)}"))
        done.set()

    informer.add_event_handler(on_add=on_add)
    with informer:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        source.add("x")
        assert done.wait(GUARD)
    assert seen_in_cache and seen_in_cache[0]["metadata"]["name"] == "x"


def test_add_indexers_while_running_indexes_the_cache__kubernetes_117046() -> None:
    """client-go since 1.30 (kubernetes/kubernetes#117046): AddIndexers on a started informer
    indexes the objects already cached, and later changes keep the new index current."""
    source = FakeSource()
    source.add("pod1")
    informer = informer_on(source)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    with informer:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        informer.add_indexers({"by-name": lambda obj: [name_of(obj)]})
        assert [name_of(o) for o in informer.indexer.by_index("by-name", "pod1")] == ["pod1"]
        source.add("pod2")
        assert recorder.wait_for(lambda r: "pod2" in r.names())
        assert informer.indexer.list_index_func_values("by-name") == ["pod1", "pod2"]
        with pytest.raises(ValueError, match="indexer conflict"):
            informer.add_indexers({"by-name": lambda obj: []})


# --- handlers: late, removed, slow, failing -------------------------------------------------


def test_handler_added_while_running__TestAddWhileActive() -> None:
    """shared_informer_test.go TestAddWhileActive: a late handler first gets the cached objects
    (is_in_initial_list=True), then new ones; its has_synced() is false until it handled them."""
    source = FakeSource()
    informer = informer_on(source, resync_period=0)
    first = Recorder()
    handle1 = informer.add_event_handler(first)
    assert not handle1.has_synced(), "synced before start?"
    with informer:
        assert wait_for_cache_sync(informer, timeout=GUARD)  # so pod1 comes by watch
        source.add("pod1")
        assert first.wait_for(lambda r: r.names() == {"pod1"})
        assert wait_for_cache_sync(handle1, timeout=GUARD)

        gate = threading.Event()
        late = Recorder(gate=gate)
        handle2 = informer.add_event_handler(late)
        assert not handle2.has_synced(), "synced before handling anything?"
        gate.set()
        source.add("pod2")
        assert late.wait_for(lambda r: r.names() == {"pod1", "pod2"})
        assert wait_for_cache_sync(handle2, timeout=GUARD)
        assert first.wait_for(lambda r: r.names() == {"pod1", "pod2"})
        assert handle1 in informer.handlers and handle2 in informer.handlers
    assert late.snapshot() == [("add", "pod1", True), ("add", "pod2", False)]
    assert first.snapshot() == [("add", "pod1", False), ("add", "pod2", False)]


def test_handler_registered_before_start_syncs_after_its_initial_adds() -> None:
    """A registration syncs only after the informer synced *and* it handled every initial add."""
    source = FakeSource()
    source.add("a")
    source.add("b")
    informer = informer_on(source)
    handled: list[str] = []
    a_done, b_gate = threading.Event(), threading.Event()

    def on_add(obj: Any, initial: bool) -> None:
        if name_of(obj) == "b":
            assert b_gate.wait(GUARD)
        handled.append(name_of(obj))
        a_done.set()

    registration = informer.add_event_handler(on_add=on_add)
    try:
        with informer:
            assert wait_for_cache_sync(informer, timeout=GUARD)
            assert a_done.wait(GUARD)
            assert registration.wait_until_idle(0.05) is False, "stuck in 'b'"
            assert handled == ["a"]
            assert not registration.has_synced(), "'b' is not handled yet"
            assert not wait_for_cache_sync(registration, timeout=0.05)
            b_gate.set()
            assert wait_for_cache_sync(registration.has_synced, timeout=GUARD)
            assert handled == ["a", "b"]
    finally:
        b_gate.set()


def test_add_on_stopped_informer_fails__TestAddOnStoppedSharedInformer() -> None:
    """shared_informer_test.go TestAddOnStoppedSharedInformer."""
    source = FakeSource()
    source.add("pod1")
    informer = informer_on(source)
    informer.start()
    informer.stop()
    assert informer.join(GUARD)
    assert informer.is_stopped
    with pytest.raises(InformerStoppedError, match=r"because it has stopped already$"):
        informer.add_event_handler(Recorder())


def test_remove_handler_while_running__TestRemoveWhileActive() -> None:
    """shared_informer_test.go TestRemoveWhileActive: after removal nothing more arrives."""
    source = FakeSource()
    informer = informer_on(source)
    removed, control = Recorder(), Recorder()
    handle = informer.add_event_handler(removed)
    informer.add_event_handler(control)
    with informer:
        source.add("pod1")
        assert removed.wait_for(lambda r: r.names() == {"pod1"})
        informer.remove_event_handler(handle)
        informer.remove_event_handler(handle)  # idempotent (TestRemovingRemovedSharedInformer)
        assert handle not in informer.handlers
        assert handle.join(GUARD)
        source.add("pod2")
        assert control.wait_for(lambda r: r.names() == {"pod1", "pod2"})
    assert removed.names() == {"pod1"}


def test_slow_handler_blocks_neither_the_watch_nor_other_handlers() -> None:
    """shared_informer.go processorListener: each handler has its own unbounded buffer."""
    source = FakeSource()
    informer = informer_on(source)
    gate = threading.Event()
    slow, fast = Recorder(gate=gate), Recorder()
    slow_reg = informer.add_event_handler(slow)
    informer.add_event_handler(fast)
    try:
        with informer:
            assert wait_for_cache_sync(informer, timeout=GUARD)
            for i in range(5):
                source.add(f"pod{i}")
            assert fast.wait_for(lambda r: len(r.names()) == 5)
            assert len(informer.indexer) == 5
            assert informer.reflector.events == 5
            assert slow.snapshot() == [] and slow_reg.pending() >= 4
            gate.set()
            assert slow.wait_for(lambda r: len(r.names()) == 5)
    finally:
        gate.set()


def test_handler_exception_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    source = FakeSource()
    informer = informer_on(source)
    seen: list[str] = []
    done = threading.Event()

    def on_add(obj: Any, initial: bool) -> None:
        if name_of(obj) == "bad":
            raise RuntimeError("boom")
        seen.append(name_of(obj))
        done.set()

    informer.add_event_handler(on_add=on_add, name="fragile")
    with informer:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        source.add("bad")
        source.add("good")
        assert done.wait(GUARD)
    assert seen == ["good"]
    assert "handler fragile raised" in caplog.text


# --- waiting for sync, and stopping --------------------------------------------------------------


def test_wait_for_cache_sync_true_once_synced() -> None:
    source = FakeSource()
    source.add("a")
    informer = informer_on(source)
    registration = informer.add_event_handler(Recorder())
    with informer:
        assert wait_for_cache_sync(informer.has_synced, registration, timeout=GUARD)
        assert informer.has_synced() and registration.has_synced()


def test_wait_for_cache_sync_false_on_timeout_and_on_stop() -> None:
    """A LIST that never returns: the wait ends at the timeout, or at once on stop."""
    source = FakeSource()
    release = threading.Event()

    def stuck(call: ListCall) -> dict[str, Any] | None:
        release.wait(GUARD)
        return None

    source.on_list = stuck
    informer = informer_on(source)
    try:
        informer.start()
        assert not wait_for_cache_sync(informer, timeout=0.05)

        stop = StopEvent()
        result: list[bool] = []
        waiter = threading.Thread(
            target=lambda: result.append(wait_for_cache_sync(informer, timeout=GUARD, stop=stop)),
            name="waiter",
        )
        waiter.start()
        started = time.monotonic()
        stop.set()
        waiter.join(GUARD)
        assert result == [False]
        assert time.monotonic() - started < GUARD / 2  # the stop, not its GUARD-second timeout

        # Stopping the informer ends a wait too: it can never sync now.
        waiter = threading.Thread(
            target=lambda: result.append(wait_for_cache_sync(informer, timeout=GUARD)),
            name="waiter-2",
        )
        waiter.start()
        informer.stop()
        waiter.join(GUARD)
        assert result == [False, False]
    finally:
        release.set()
        informer.stop()
        assert informer.join(GUARD)


def test_wait_for_cache_sync_gives_up_when_an_informer_stops_before_it_synced() -> None:
    """Unlike client-go, on purpose: WaitForCacheSync polls until its stop channel closes and
    WaitFor waits until its context is done, even for an informer that was stopped and will
    never sync. Ours returns False at once, with no timeout and no stop of its own (chapter
    05's run() then raises CacheSyncError, and chapter 08a's program exits)."""
    source = FakeSource()
    release = threading.Event()

    def stuck(call: ListCall) -> dict[str, Any] | None:
        release.wait(GUARD)
        return None

    source.on_list = stuck
    unsynced, synced = informer_on(source, name="unsynced"), informer_on(FakeSource(), name="ok")
    stop, result = StopEvent(), []
    waiter = threading.Thread(
        target=lambda: result.append(
            wait_for_cache_sync(synced, unsynced, timeout=None, stop=stop)
        ),
        name="waiter",
    )
    try:
        unsynced.start()
        synced.start()
        waiter.start()
        assert wait_for_cache_sync(synced, timeout=GUARD)
        unsynced.stop()
        waiter.join(GUARD)
        assert result == [False], "still waiting for an informer that stopped before it synced"
        assert synced.has_synced() and not unsynced.has_synced()
    finally:
        stop.set()  # so that a waiter that did not give up ends anyway
        release.set()
        for informer in (unsynced, synced):
            informer.stop()
            assert informer.join(GUARD)
        waiter.join(GUARD)


def test_wait_for_cache_sync_refuses_what_cannot_signal() -> None:
    with pytest.raises(TypeError, match="informers or handler registrations"):
        wait_for_cache_sync(lambda: True, timeout=1)


def test_threads_are_named_and_gone_after_the_with_block() -> None:
    source = FakeSource()
    informer = informer_on(source, name="named")
    informer.add_event_handler(Recorder())
    with informer:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        ours = [t for t in threading.enumerate() if "named" in t.name]
        assert sorted(t.name for t in ours) == [
            "informer-named",
            "informer-named-handler-1",
            "reflector-named",
        ]
        assert not any(t.daemon for t in ours)
    assert not [t for t in threading.enumerate() if "named" in t.name]
    with pytest.raises(InformerStoppedError):
        informer.start()


# --- against the real cluster -------------------------------------------------------------------


def configmaps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def versions(objects: list[Any]) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in objects}


@pytest.mark.cluster
def test_real_cache_equals_a_fresh_list_after_changes(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """Creates, updates, deletes: the cache ends up equal to a fresh LIST, version for version.

    A label selector keeps out objects others put into the namespace (kube-root-ca.crt).
    """
    core = kubernetes.client.CoreV1Api(api)

    def create(name: str) -> None:
        body = {"metadata": {"name": name, "labels": {"test": "cache"}}}
        core.create_namespaced_config_map(namespace, body)

    for i in range(5):
        create(f"cm{i}")
    lw = ListWatch(api, configmaps(namespace), label_selector="test=cache")
    informer = SharedInformer(lw, name="cache")
    recorder = Recorder()
    informer.add_event_handler(recorder)
    with informer:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        assert set(versions(informer.indexer.list())) == {f"cm{i}" for i in range(5)}
        core.patch_namespaced_config_map("cm0", namespace, {"data": {"k": "v"}})
        core.patch_namespaced_config_map("cm1", namespace, {"data": {"k": "v"}})
        core.delete_namespaced_config_map("cm2", namespace)
        create("cm5")
        create("cm6")
        expected = versions(lw.list()["items"])
        assert set(expected) == {"cm0", "cm1", "cm3", "cm4", "cm5", "cm6"}
        assert recorder.wait_for(lambda r: versions(informer.indexer.list()) == expected)

        lister = informer.lister().namespace(namespace)
        assert lister.get("cm5")["metadata"]["name"] == "cm5"
        with pytest.raises(NotFoundError, match='configmaps "cm2" not found'):
            lister.get("cm2")
    assert "cm2" not in versions(informer.indexer.list())
    assert informer.reflector.errors == 0


def _event(namespace: str, name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": namespace},
        "reason": "Test",
        "message": name,
        "type": "Normal",
    }


@pytest.mark.cluster
def test_real_410_relists_and_delivers_tombstones(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """A real 410: the watch's resourceVersion is compacted away in etcd while the informer
    is cut off; the re-watch gets Expired, the reflector re-lists, handlers get a tombstone
    for the delete they missed, and the cache equals a fresh LIST.

    Events are used because the API server serves them from etcd directly (no watch cache),
    so a compaction really expires an old watch resourceVersion.
    """
    info = describe()
    assert info.etcd_url, f"compaction needs etcd on loopback (local control plane); got {info}"
    etcd = EtcdClient(info.etcd_url)
    core = kubernetes.client.CoreV1Api(api)
    for i in range(3):
        core.create_namespaced_event(namespace, _event(namespace, f"ev{i}"))
    lw = HeldListWatch(api, f"/api/v1/namespaces/{namespace}/events")
    informer = SharedInformer(lw, name="expiry", backoff=Backoff(initial=0.05, jitter=0.0, cap=0.2))
    recorder = Recorder()
    informer.add_event_handler(recorder)
    with informer:
        try:
            assert wait_for_cache_sync(informer, timeout=GUARD)
            core.create_namespaced_event(namespace, _event(namespace, "ev3"))
            assert recorder.wait_for(lambda r: "ev3" in r.names("add"))
            last_seen = int(informer.last_sync_resource_version)

            lw.hold(cut=True)
            assert lw.wait_until_held(GUARD), "the reflector never came back to watch"
            core.delete_namespaced_event("ev0", namespace)
            core.patch_namespaced_event("ev1", namespace, {"message": "changed"})
            core.create_namespaced_event(namespace, _event(namespace, "ev4"))
            etcd.compact(etcd.revision())
            assert etcd.revision() > last_seen + 1
            recorder.reset()
            lw.release()

            assert recorder.wait_for(lambda r: {"ev0", "ev1", "ev4"} <= r.names())
            expected = versions(ListWatch(api, lw.path).list()["items"])
            assert recorder.wait_for(lambda r: versions(informer.indexer.list()) == expected)
        finally:
            lw.release()  # before the informer stops: a held watch must not hang it
    reflector = informer.reflector
    assert isinstance(reflector.last_error, WatchExpired)
    assert reflector.relists == 1
    by_name = {e[1]: e for e in recorder.snapshot()}
    deleted = by_name["ev0"]
    assert deleted[0] == "delete" and isinstance(deleted[2], DeletedFinalStateUnknown)
    assert deleted[2].key == f"{namespace}/ev0"
    assert deleted[2].obj["message"] == "ev0", "the tombstone carries the last known state"
    assert by_name["ev1"][0] == "update"
    assert by_name["ev4"] == ("add", "ev4", False)
    assert "ev2" not in by_name and "ev3" not in by_name, "unchanged objects are not re-sent"


@pytest.mark.cluster
def test_real_slow_handler_does_not_delay_another(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    informer = SharedInformer(ListWatch(api, configmaps(namespace)), name="slow")
    gate = threading.Event()
    slow, fast = Recorder(gate=gate), Recorder()
    informer.add_event_handler(slow)
    informer.add_event_handler(fast)
    wanted = {"s0", "s1", "s2"}
    try:
        with informer:
            assert wait_for_cache_sync(informer, timeout=GUARD)
            for name in sorted(wanted):
                core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
            assert fast.wait_for(lambda r: wanted <= r.names("add"))
            assert wanted <= set(versions(informer.indexer.list()))
            assert not (wanted & slow.names()), "the slow handler is still stuck"
            gate.set()
            assert slow.wait_for(lambda r: wanted <= r.names("add"))
    finally:
        gate.set()


@pytest.mark.cluster
def test_real_stop_returns_promptly_with_a_watch_open(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """With a 5-10 minute watch open, stop() + join() end it at once."""
    informer = SharedInformer(
        ListWatch(api, configmaps(namespace)), name="prompt", min_watch_timeout=300
    )
    informer.add_event_handler(Recorder())
    informer.start()
    try:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        assert informer.reflector.wait_for(lambda r: r.watches == 1, timeout=GUARD)
    finally:
        started = time.monotonic()
        informer.stop()
        joined = informer.join(GUARD)
        took = time.monotonic() - started
    # stop() closes the stream: not the 5-10 minutes the watch would last. A tenth of its
    # shortest timeout leaves a loaded machine room.
    assert joined and took < 30, f"stop took {took:.2f}s"
    assert not [t for t in threading.enumerate() if "prompt" in t.name]
    assert informer.reflector.errors == 0


@pytest.fixture(autouse=True)
def _quiet_kubernetes_client(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="helpers")


@pytest.mark.cluster
def test_managed_fields_are_stripped_by_default_and_kept_on_request(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """client-go TransformStripManagedFields: cache and handlers see the smaller object."""
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "listed"}, "data": {"k": "v"}}
    )
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    stripped = SharedInformer(ListWatch(api, path), name="stripped")
    whole = SharedInformer(ListWatch(api, path), name="whole", transform=None)
    seen: dict[str, list[dict]] = {"stripped": [], "whole": []}
    # Handlers run after the cache is updated, so "the handler saw it" means "it is cached".
    watched_seen = {"stripped": threading.Event(), "whole": threading.Event()}

    def on_add(obj: dict, _: bool, name: str) -> None:
        seen[name].append(obj)
        if obj["metadata"]["name"] == "watched":
            watched_seen[name].set()

    for informer in (stripped, whole):
        informer.add_event_handler(on_add=lambda obj, init, n=informer.name: on_add(obj, init, n))
        informer.start()
    try:
        assert wait_for_cache_sync(stripped, whole, timeout=30)
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": "watched"}, "data": {"k": "v"}}
        )
        assert all(event.wait(30) for event in watched_seen.values())
        for name in ("listed", "watched"):
            key = f"{namespace}/{name}"
            assert "managedFields" not in stripped.indexer.get_by_key(key)["metadata"]
            assert whole.indexer.get_by_key(key)["metadata"]["managedFields"]
    finally:
        for informer in (stripped, whole):
            informer.stop()
            assert informer.join(10)
    assert all("managedFields" not in obj["metadata"] for obj in seen["stripped"])


def test_an_idle_informer_lets_go_of_the_list_it_synced_from() -> None:
    """A ReplacedAll delta holds a list of every object; once applied, nothing keeps it alive.

    The processing thread used to wait for the next delta with the last one
    still in its hands: after a LIST, a second reference to every object for
    as long as the watch stayed quiet (8 bytes an object on 100,000
    ConfigMaps; client-go zeroes the popped slot of its queue for the same
    reason).
    """
    clock = FakeClock()
    source = FakeSource()
    for name in ("pod1", "pod2", "pod3"):
        source.add(name)
    informer = informer_on(source, clock=clock)
    with informer:
        assert wait_for_cache_sync(informer, timeout=GUARD)
        settled(clock)
        gc.collect()
        alive = [obj for obj in gc.get_objects()
                 if isinstance(obj, Delta) and obj.type == REPLACED_ALL]  # fmt: skip
        assert len(informer.indexer) == 3
        assert alive == [], f"{len(alive)} ReplacedAll delta(s) still alive after being applied"
