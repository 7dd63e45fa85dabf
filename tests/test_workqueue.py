"""The work queue, scenario by scenario, as client-go's own tests specify it.

Each test is named ``test_<what>__<UpstreamTest>`` and its docstring cites the
upstream file (under k8s.io/client-go/util/workqueue/). Time is a FakeClock:
tests step it and then wait, with a real-time guard, until the waiting loop is
parked again; nothing sleeps to synchronise.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import pytest

from helpers.clock import FakeClock
from helpers.workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    Queue,
    RateLimitingQueue,
)

GUARD = 5.0
"""Real seconds before a wait that should succeed is declared a failure."""

GRACE = 0.05
"""Real seconds a broken queue gets to do the wrong thing in a "must stay blocked" check."""


class Background:
    """Run ``fn`` in a named thread and keep its result (or exception)."""

    def __init__(self, fn: Callable[[], Any], name: str) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.result = fn()
        except BaseException as exc:  # re-raised in the test thread by wait()
            self.error = exc
        finally:
            self.finished.set()

    def wait(self, timeout: float = GUARD) -> bool:
        done = self.finished.wait(timeout)
        if self.error is not None:
            raise self.error
        return done


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def delaying(clock: FakeClock) -> Iterator[DelayingQueue[str]]:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    yield q
    q.shut_down()


def step(clock: FakeClock, seconds: float) -> None:
    """Advance fake time once the waiting loop is parked, and wait until it parks again."""
    assert clock.wait_for_waiters(1, GUARD), "waiting loop never parked before the step"
    clock.step(seconds)
    assert clock.wait_for_waiters(1, GUARD), "waiting loop never parked after the step"


def get_within(q: Queue[Any], timeout: float = GUARD) -> tuple[Any, bool]:
    """``q.get()`` that fails the test instead of hanging it when nothing ever arrives."""
    getter = Background(q.get, "get")
    assert getter.wait(timeout), "get() is still blocked"
    return getter.result


def get_done(q: Queue[str]) -> str | None:
    item, shutdown = get_within(q)
    assert not shutdown
    q.done(item)
    return item


# queue_test.go ---------------------------------------------------------------


def test_len__TestLen() -> None:
    """queue_test.go::TestLen - a duplicate add does not lengthen the queue."""
    q: Queue[str] = Queue()
    q.add("foo")
    assert q.len() == 1
    q.add("bar")
    assert q.len() == 2
    q.add("foo")
    assert q.len() == 2


def test_reinsert__TestReinsert() -> None:
    """queue_test.go::TestReinsert - an item added while processing comes back after done."""
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = get_within(q)
    assert item == "foo"
    q.add(item)
    assert q.len() == 0  # not handed out while a worker holds it
    q.done(item)
    item, _ = get_within(q)
    assert item == "foo"
    q.done(item)
    assert q.len() == 0


def test_in_flight_counts_items_between_get_and_done() -> None:
    """Not upstream: ``in_flight()`` is what a live plot reads next to ``len()``."""
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    assert (q.len(), q.in_flight()) == (2, 0)
    foo, _ = get_within(q)
    assert (q.len(), q.in_flight()) == (1, 1)
    q.add(foo)  # dirty again: waiting for done(), neither queued nor a second item in flight
    assert (q.len(), q.in_flight()) == (1, 1)
    bar, _ = get_within(q)
    assert q.in_flight() == 2
    q.done(foo)  # foo goes back in line
    assert (q.len(), q.in_flight()) == (1, 1)
    q.done(bar)
    assert q.in_flight() == 0


def test_collapse__TestCollapse() -> None:
    """queue_test.go::TestCollapse - two adds of a waiting item give one get."""
    q: Queue[str] = Queue()
    q.add("bar")
    q.add("bar")
    item, shutdown = get_within(q)
    assert (item, shutdown) == ("bar", False)
    assert q.len() == 0
    q.done(item)
    assert q.len() == 0


def test_collapse_while_processing__TestCollapseWhileProcessing() -> None:
    """queue_test.go::TestCollapseWhileProcessing - a second worker waits for done()."""
    q: Queue[str] = Queue()
    q.add("foo")
    first, _ = get_within(q)
    q.add("foo")
    q.add("foo")
    second_worker = Background(q.get, "second-worker")
    assert not second_worker.wait(GRACE), "foo was handed out while still being processed"
    q.done(first)
    assert second_worker.wait(), "foo never came back after done()"
    assert second_worker.result == ("foo", False)
    q.done("foo")
    assert q.len() == 0


SHUTDOWNS = [
    pytest.param("shut_down", id="ShutDown"),
    pytest.param("shut_down_with_drain", id="ShutDownWithDrain"),
]


@pytest.mark.parametrize("shutdown", SHUTDOWNS)
def test_basic__TestBasic(shutdown: str) -> None:
    """queue_test.go::TestBasic - 50 producers, 10 consumers, nothing added after shutdown."""
    q: Queue[Hashable] = Queue()
    late: list[Hashable] = []
    seen: set[Hashable] = set()  # set.add is atomic under the GIL

    def produce(i: int) -> None:
        for _ in range(50):
            q.add(i)

    def consume() -> None:
        while True:
            item, quit_ = q.get()
            if item == "added after shutdown!":
                late.append(item)
            if quit_:
                return
            seen.add(item)
            q.done(item)

    producers = [Background(lambda i=i: produce(i), f"producer-{i}") for i in range(50)]
    consumers = [Background(consume, f"consumer-{i}") for i in range(10)]
    assert all(p.wait() for p in producers)
    getattr(q, shutdown)()
    q.add("added after shutdown!")
    assert all(c.wait() for c in consumers), "a consumer never saw shutdown"
    assert late == []
    assert seen == set(range(50))
    assert q.len() == 0


@pytest.mark.parametrize("shutdown", SHUTDOWNS)
def test_add_while_processing__TestAddWhileProcessing(shutdown: str) -> None:
    """queue_test.go::TestAddWhileProcessing - workers re-add what they hold; all ends empty."""
    q: Queue[int] = Queue()
    handled: Counter[int] = Counter()
    handled_lock = threading.Lock()

    def consume() -> None:
        mine: Counter[int] = Counter()  # every worker re-adds every item up to twice
        while True:
            item, quit_ = q.get()
            if quit_:
                return
            assert item is not None
            mine[item] += 1
            with handled_lock:
                handled[item] += 1
            if mine[item] < 2:
                q.add(item)
            q.done(item)

    producers = [Background(lambda i=i: q.add(i), f"producer-{i}") for i in range(50)]
    consumers = [Background(consume, f"consumer-{i}") for i in range(10)]
    assert all(p.wait() for p in producers)
    getattr(q, shutdown)()
    assert all(c.wait() for c in consumers)
    assert q.len() == 0
    assert set(handled) == set(range(50))  # shutdown drops nothing already queued


def test_drain__TestQueueDrainageUsingShutDownWithDrain() -> None:
    """queue_test.go::TestQueueDrainageUsingShutDownWithDrain - waits for in-flight items."""
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    first, _ = get_within(q)
    second, _ = get_within(q)
    drain = Background(q.shut_down_with_drain, "drain")
    _, shutdown = get_within(q)  # the queue is empty, so this only returns once shutdown has begun
    assert shutdown
    assert not drain.finished.is_set(), "drain returned with two items still in flight"
    q.done(first)
    assert not drain.wait(GRACE), "drain returned with one item still in flight"
    q.done(second)
    assert drain.wait(), "drain never returned after both items were done"


def test_no_queue_drainage_using_shut_down__TestNoQueueDrainageUsingShutDown() -> None:
    """queue_test.go::TestNoQueueDrainageUsingShutDown - shut_down does not wait for workers."""
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    get_within(q)
    get_within(q)
    shut = Background(q.shut_down, "shut-down")
    assert shut.wait(), "shut_down waited for items in flight"
    assert q.shutting_down()


def test_force_queue_shutdown_using_shut_down__TestForceQueueShutdownUsingShutDown() -> None:
    """queue_test.go::TestForceQueueShutdownUsingShutDown - shut_down releases a pending drain."""
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    get_within(q)
    get_within(q)
    drain = Background(q.shut_down_with_drain, "drain")
    _, shutdown = get_within(q)
    assert shutdown
    assert not drain.wait(GRACE)
    q.shut_down()
    assert drain.wait(), "shut_down did not release shut_down_with_drain"


def test_drain_dirty_item__TestQueueDrainageUsingShutDownWithDrainWithDirtyItem() -> None:
    """queue_test.go::TestQueueDrainageUsingShutDownWithDrainWithDirtyItem.

    An item re-added before the drain started is still handed out after done().
    """
    q: Queue[str] = Queue()
    q.add("foo")
    gotten, _ = get_within(q)
    q.add("foo")
    drain = Background(q.shut_down_with_drain, "drain")
    _, shutdown = get_within(q)
    assert shutdown
    q.done(gotten)
    again, shutdown = get_within(q)
    assert (again, shutdown) == ("foo", False)
    assert not drain.wait(GRACE), "drain returned while foo was in flight again"
    q.done(again)
    assert get_within(q) == (None, True)
    assert drain.wait()


# delaying_queue_test.go ------------------------------------------------------


def test_simple_queue__TestSimpleQueue(clock: FakeClock, delaying: DelayingQueue[str]) -> None:
    """delaying_queue_test.go::TestSimpleQueue - added after the delay, once."""
    delaying.add_after("foo", 0.050)
    assert delaying.len() == 0
    step(clock, 0.060)
    assert delaying.len() == 1
    assert get_done(delaying) == "foo"
    step(clock, 10.0)  # past the next heartbeat
    assert delaying.len() == 0


def test_deduping__TestDeduping(clock: FakeClock, delaying: DelayingQueue[str]) -> None:
    """delaying_queue_test.go::TestDeduping - a waiting item only ever moves earlier."""
    delaying.add_after("foo", 0.050)
    delaying.add_after("foo", 0.070)  # later: ignored
    assert [item for item, _ in delaying.waiting()] == ["foo"]
    assert delaying.len() == 0
    step(clock, 0.060)
    assert delaying.len() == 1
    get_done(delaying)
    step(clock, 0.020)  # past the ignored 70 ms
    assert delaying.len() == 0

    delaying.add_after("foo", 0.050)
    delaying.add_after("foo", 0.030)  # earlier: wins
    assert delaying.len() == 0
    step(clock, 0.040)
    assert delaying.len() == 1
    get_done(delaying)
    step(clock, 0.020)  # past the superseded 50 ms
    assert delaying.len() == 0
    assert delaying.waiting() == []


def test_superseded_entry_never_fires(clock: FakeClock, delaying: DelayingQueue[str]) -> None:
    """delaying_queue.go insert: an entry moved earlier is gone for good.

    Our heap keeps the replaced entry and skips it when it surfaces; it must not
    fire a newer, later wait for the same item ahead of time.
    """
    delaying.add_after("foo", 0.050)  # replaced below, but stays in the heap...
    delaying.add_after("bar", 0.045)  # ...behind bar, so it is not dropped at once
    delaying.add_after("foo", 0.030)
    step(clock, 0.040)
    assert get_done(delaying) == "foo"
    delaying.add_after("foo", 0.100)  # due at 140 ms
    step(clock, 0.020)  # 60 ms: bar, and the replaced 50 ms entry, surface
    assert get_done(delaying) == "bar"
    assert delaying.len() == 0
    assert [item for item, _ in delaying.waiting()] == ["foo"]
    step(clock, 0.080)
    assert get_done(delaying) == "foo"


def test_add_two_fire_early__TestAddTwoFireEarly(
    clock: FakeClock, delaying: DelayingQueue[str]
) -> None:
    """delaying_queue_test.go::TestAddTwoFireEarly - the sooner item fires first."""
    delaying.add_after("foo", 1.0)
    delaying.add_after("bar", 0.050)
    assert delaying.len() == 0
    step(clock, 0.060)
    assert delaying.len() == 1
    assert get_within(delaying) == ("bar", False)

    delaying.add_after("baz", 2.0)
    step(clock, 1.0)
    assert delaying.len() == 1
    assert get_within(delaying) == ("foo", False)
    step(clock, 2.0)
    assert delaying.len() == 1
    assert get_within(delaying) == ("baz", False)


def test_copy_shifting__TestCopyShifting(clock: FakeClock, delaying: DelayingQueue[str]) -> None:
    """delaying_queue_test.go::TestCopyShifting - items due together come out by ready time."""
    delaying.add_after("foo", 1.0)
    delaying.add_after("bar", 0.500)
    delaying.add_after("baz", 0.250)
    assert delaying.len() == 0
    step(clock, 2.0)
    assert delaying.len() == 3
    assert [get_within(delaying)[0] for _ in range(3)] == ["baz", "bar", "foo"]


def test_shut_down_drops_waiting_items(clock: FakeClock) -> None:
    """delaying_queue.go ShutDown: entries still waiting are dropped, the loop thread ends."""
    q: DelayingQueue[str] = DelayingQueue("drop-test", clock=clock)
    q.add_after("foo", 1.0)
    q.shut_down()
    assert q.waiting() == []
    assert not any(t.name == "workqueue-delay-drop-test" for t in threading.enumerate())
    q.add_after("bar", 1.0)  # ignored while shutting down
    clock.step(2.0)
    assert get_within(q) == (None, True)


# rate_limiting_queue_test.go ------------------------------------------------


def test_rate_limiting_queue__TestRateLimitingQueue(clock: FakeClock) -> None:
    """rate_limiting_queue_test.go::TestRateLimitingQueue - delays come from the limiter."""
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    q: RateLimitingQueue[str] = RateLimitingQueue(limiter, clock=clock)

    def delay_of(item: str) -> float:
        """The delay ``item`` was just given; then let it fire so the next one is fresh."""
        ((waiting_item, ready_at),) = q.waiting()
        assert waiting_item == item
        delay = ready_at - clock.now()
        step(clock, 10.0)
        assert q.waiting() == []
        return delay

    try:
        q.add_rate_limited("one")
        assert delay_of("one") == pytest.approx(0.001)
        q.add_rate_limited("one")
        assert delay_of("one") == pytest.approx(0.002)
        assert q.num_requeues("one") == 2

        q.add_rate_limited("two")
        assert delay_of("two") == pytest.approx(0.001)
        q.add_rate_limited("two")
        assert delay_of("two") == pytest.approx(0.002)

        q.forget("one")
        assert q.num_requeues("one") == 0
        q.add_rate_limited("one")
        assert delay_of("one") == pytest.approx(0.001)
        assert sorted(get_within(q)[0] for _ in range(2)) == ["one", "two"]  # forget never dequeues
    finally:
        q.shut_down()


# One key, one worker: the property everything above exists for -------------


class ForgetsProcessingQueue(Queue[str]):
    """Broken on purpose: queues a key even while a worker is still processing it."""

    def add(self, item: str) -> None:
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            self._dirty.add(item)
            self._queue.append(item)
            self._has_items.notify()


def overlapping_syncs(
    q: Queue[str], keys: int = 6, workers: int = 8, sync_seconds: float = 0.001
) -> tuple[list[str], Counter]:
    """Hammer ``q`` and return (keys seen in two workers at once, syncs per key).

    Fewer keys than workers, so idle workers are always waiting in get(); each
    sync re-adds its own key mid-sync (an event arriving while we work) a few
    times, while producer threads add all keys concurrently. A sync lasts
    ``sync_seconds``.

    Whether the hammering hands a key to a second worker within another's sync
    depends on how the threads happen to run (with syncs that take no time, a
    queue that forgets its processing check was never caught). So it opens with
    a sync scripted to catch such a queue every time: this thread gets the
    first key and re-adds it mid-sync before any worker runs. The key alone in
    the queue, ``len()`` is 1 only if the queue would hand it out now; then the
    sync goes on until a worker has taken it too, which the check records.
    """
    names = [f"ns/foo-{k}" for k in range(keys)]
    readds_per_key = 10
    lock = threading.Lock()
    in_flight: set[str] = set()
    overlaps: list[str] = []
    syncs: Counter[str] = Counter()
    readds: Counter[str] = Counter()
    progress = threading.Condition(lock)  # an overlap seen, or a re-add made
    abort = threading.Event()

    def worker() -> None:
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            assert key is not None
            with lock:
                if key in in_flight:
                    overlaps.append(key)
                    progress.notify_all()
                in_flight.add(key)
                readd = readds[key] < readds_per_key
                readds[key] += readd
            if readd:
                q.add(key)
            abort.wait(sync_seconds)  # the "sync": simulated work, not synchronisation
            with lock:
                in_flight.discard(key)
                syncs[key] += 1
                if sum(readds.values()) == keys * readds_per_key:
                    progress.notify_all()
            q.done(key)

    def produce(offset: int) -> None:
        for i in range(100):
            q.add(names[(offset + i) % keys])

    q.add(names[0])
    held, _ = q.get()  # the scripted sync: no worker runs yet
    assert held == names[0]
    with lock:
        in_flight.add(held)
        readds[held] += 1
    q.add(held)
    handed_out_again = q.len() == 1
    pool = [Background(worker, f"worker-{i}") for i in range(workers)]
    try:
        taken = True
        if handed_out_again:
            with lock:
                taken = progress.wait_for(lambda: held in overlaps, GUARD)
        with lock:
            in_flight.discard(held)
            syncs[held] += 1
        q.done(held)
        assert taken, "the queue offered a held key, and no worker took it"
        producers = [Background(lambda o=o: produce(o), f"producer-{o}") for o in range(16)]
        assert all(p.wait() for p in producers)
        with lock:
            finished = progress.wait_for(
                lambda: sum(readds.values()) == keys * readds_per_key, GUARD
            )
        assert finished, "workers stopped re-adding: the queue lost work"
    finally:
        abort.set()
        q.shut_down_with_drain()
        assert all(w.wait() for w in pool)
    return overlaps, syncs


def test_no_key_is_processed_by_two_workers_at_once() -> None:
    """queue.go contract: between get() and done() a key belongs to one worker only."""
    q: Queue[str] = Queue()
    overlaps, syncs = overlapping_syncs(q)
    assert overlaps == []
    # Each re-add arrived mid-sync and still caused one more sync: nothing was lost.
    assert all(n >= 11 for n in syncs.values()), syncs
    assert q.len() == 0


@pytest.mark.parametrize("sync_seconds", [0.001, 0.0])
def test_overlap_check_catches_a_queue_that_forgets_processing(sync_seconds: float) -> None:
    """The test above can fail: a queue that skips the processing check is caught, every time,
    however short a sync (the scripted first sync, on the first key, catches it)."""
    overlaps, _ = overlapping_syncs(ForgetsProcessingQueue(), sync_seconds=sync_seconds)
    assert overlaps[:1] == ["ns/foo-0"], "the harness did not notice two workers holding one key"
