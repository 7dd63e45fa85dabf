"""Workqueue metrics, checked against client-go's metrics_test.go, plus their exposition
through prometheus_client.

Time is a FakeClock. A named queue runs one clock-driven thread (the refresher of
the in-flight gauges); after each step the test waits until it is parked again.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from itertools import pairwise

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, parser

from helpers.clock import FakeClock
from helpers.workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    NoopMetrics,
    Queue,
    QueueMetrics,
    RateLimitingQueue,
    render_prometheus,
)
from helpers.workqueue.metrics import BUCKETS, QueueMetricsCollector

GUARD = 5.0
"""Real seconds before a wait that should succeed is declared a failure."""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> Iterator[Queue[str]]:
    q: Queue[str] = Queue("test", clock=clock, metrics_update_period=0.001)
    assert clock.wait_for_waiters(1, GUARD), "the metrics refresher never started"
    yield q
    q.shut_down()


def get_ready(q: Queue[str]) -> str | None:
    """``q.get()`` for an item that must already be queued (fails rather than blocks)."""
    assert q.len() > 0, "nothing queued: get() would block"
    item, shutdown = q.get()
    assert not shutdown
    return item


def refresher_running(name: str) -> bool:
    return any(t.name == f"workqueue-metrics-{name}" for t in threading.enumerate())


def test_metrics__TestMetrics(clock: FakeClock, queue: Queue[str]) -> None:
    """metrics_test.go::TestMetrics - every metric along one item's life."""
    m = queue.metrics
    queue.add("foo")
    assert (m.snapshot()["adds_total"], m.snapshot()["depth"]) == (1, 1)

    clock.step(50e-6)
    item = get_ready(queue)
    assert item == "foo"
    latency = m.snapshot()["queue_duration_seconds"]
    assert (latency["count"], latency["sum"]) == (1, pytest.approx(5e-05))
    assert latency["buckets"][1e-05] == 0 and latency["buckets"][1e-04] == 1

    for _ in range(5):  # re-added while processing: counted once, still one in the queue
        queue.add(item)
    assert (m.snapshot()["adds_total"], m.snapshot()["depth"]) == (2, 1)
    assert queue.len() == 0  # depth counts it, the hand-out line does not yet

    clock.step(25e-6)
    queue.done(item)
    work = m.snapshot()["work_duration_seconds"]
    assert (work["count"], work["sum"]) == (1, pytest.approx(2.5e-05))
    assert m.snapshot()["depth"] == 1

    item = get_ready(queue)
    assert item == "foo"
    latency = m.snapshot()["queue_duration_seconds"]
    assert latency["count"] == 2
    assert latency["sum"] - 5e-05 == pytest.approx(2.5e-05)  # from the re-add, not from done()

    clock.step(0.001)  # one refresher tick
    assert clock.wait_for_waiters(1, GUARD)
    snap = m.snapshot()
    assert snap["unfinished_work_seconds"] == pytest.approx(0.001)
    assert snap["longest_running_processor_seconds"] == pytest.approx(0.001)

    queue.done(item)
    work = m.snapshot()["work_duration_seconds"]
    assert work["count"] == 2
    assert work["sum"] - 2.5e-05 == pytest.approx(0.001)


def test_metric_shutdown__TestMetricShutdown(clock: FakeClock) -> None:
    """metrics_test.go::TestMetricShutdown - no gauge update after shutdown."""
    q: Queue[str] = Queue("metric-shutdown", clock=clock, metrics_update_period=0.001)
    assert clock.wait_for_waiters(1, GUARD)
    q.add("foo")
    get_ready(q)
    clock.step(0.001)
    assert clock.wait_for_waiters(1, GUARD)
    assert q.metrics.snapshot()["unfinished_work_seconds"] == pytest.approx(0.001)

    q.shut_down()
    assert not refresher_running("metric-shutdown")
    assert not clock.has_waiters()
    clock.step(3600.0)
    assert isinstance(q.metrics, QueueMetrics)
    q.metrics.update_unfinished_work()  # even a late tick must not write
    assert q.metrics.snapshot()["unfinished_work_seconds"] == pytest.approx(0.001)


def test_unfinished_work_sums_and_longest_takes_the_oldest(clock: FakeClock) -> None:
    """metrics.go updateUnfinishedWork: sum of ages of in-flight items, and the oldest one."""
    q: Queue[str] = Queue("unfinished", clock=clock, metrics_update_period=0.5)
    try:
        assert clock.wait_for_waiters(1, GUARD)
        q.add("old")
        q.add("new")
        get_ready(q)
        clock.step(0.2)
        get_ready(q)
        clock.step(0.3)  # tick at 0.5: "old" in flight 0.5 s, "new" 0.3 s
        assert clock.wait_for_waiters(1, GUARD)
        snap = q.metrics.snapshot()
        assert snap["unfinished_work_seconds"] == pytest.approx(0.8)
        assert snap["longest_running_processor_seconds"] == pytest.approx(0.5)
        q.done("old")
        q.done("new")
        clock.step(0.5)
        assert clock.wait_for_waiters(1, GUARD)
        snap = q.metrics.snapshot()
        assert (snap["unfinished_work_seconds"], snap["longest_running_processor_seconds"]) == (
            0.0,
            0.0,
        )
    finally:
        q.shut_down()


def test_unnamed_queue_has_no_metrics(clock: FakeClock) -> None:
    """queue.go newQueue: no name, no metrics and no refresher thread."""
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    try:
        assert isinstance(q.metrics, NoopMetrics)
        q.add("foo")
        q.add_after("bar", 1.0)
        assert q.metrics.snapshot() == {}
        assert q.metrics.to_prometheus() == ""
        assert clock.wait_for_waiters(1, GUARD)  # the waiting loop...
        assert clock.waiter_count() == 1  # ...and nothing else
    finally:
        q.shut_down()


def test_retries_count_every_add_after(clock: FakeClock) -> None:
    """delaying_queue.go AddAfter: each accepted call is a retry, even with no delay."""
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    q: RateLimitingQueue[str] = RateLimitingQueue(limiter, "retries", clock=clock)
    try:
        q.add_rate_limited("foo")
        q.add_rate_limited("foo")  # deduplicated in the heap, still a retry
        q.add_after("bar", 0)
        q.add("baz")  # a plain add is not a retry
        assert q.metrics.snapshot()["retries_total"] == 3
    finally:
        q.shut_down()
    q.add_after("foo", 1.0)  # ignored while shutting down
    assert q.metrics.snapshot()["retries_total"] == 3


# Prometheus text exposition --------------------------------------------------

SAMPLE = re.compile(
    r"^(?P<metric>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r"\{(?P<labels>[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\]|\\.)*\""
    r"(?:,[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\]|\\.)*\")*)\}"
    r" (?P<value>\S+)$"
)

FAMILIES = {
    "workqueue_depth": "gauge",
    "workqueue_adds_total": "counter",
    "workqueue_queue_duration_seconds": "histogram",
    "workqueue_work_duration_seconds": "histogram",
    "workqueue_unfinished_work_seconds": "gauge",
    "workqueue_longest_running_processor_seconds": "gauge",
    "workqueue_retries_total": "counter",
}


def busy_queue(clock: FakeClock, name: str) -> Queue[str]:
    """A queue with 3 adds, 2 gets 1 ms apart, and 1 done after 2 ms of work."""
    q: Queue[str] = Queue(name, clock=clock)
    for key in ("a", "b", "c"):
        q.add(key)
    clock.step(0.001)
    get_ready(q)
    get_ready(q)
    clock.step(0.002)
    q.done("a")
    return q


def test_prometheus_lines_are_well_formed(clock: FakeClock) -> None:
    """Every line is a HELP, a TYPE or a sample; each family is typed once, as client-go's."""
    q = busy_queue(clock, "demo")
    try:
        text = q.metrics.to_prometheus()
    finally:
        q.shut_down()
    assert text.endswith("\n")
    types: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            assert len(line.split(" ", 3)) == 4, line
        elif line.startswith("# TYPE "):
            _, _, metric, kind = line.split(" ")
            assert metric not in types, f"{metric} typed twice"
            types[metric] = kind
        else:
            match = SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            family = re.sub(r"_(bucket|sum|count)$", "", match["metric"])
            assert family in types, f"sample before its TYPE: {line!r}"
            assert 'name="demo"' in match["labels"]
            float(match["value"].replace("+Inf", "inf"))
    assert types == FAMILIES


def test_prometheus_values_follow_the_queue(clock: FakeClock) -> None:
    """The exposition carries the same numbers as the queue: gauges, counters, histograms."""
    q = busy_queue(clock, "demo")
    try:
        text = q.metrics.to_prometheus()
    finally:
        q.shut_down()
    lines = set(text.splitlines())
    assert 'workqueue_depth{name="demo"} 1.0' in lines  # 3 added, 2 handed out
    assert 'workqueue_adds_total{name="demo"} 3.0' in lines
    assert 'workqueue_retries_total{name="demo"} 0.0' in lines
    assert 'workqueue_queue_duration_seconds_count{name="demo"} 2.0' in lines
    assert 'workqueue_queue_duration_seconds_sum{name="demo"} 0.002' in lines
    assert 'workqueue_work_duration_seconds_count{name="demo"} 1.0' in lines

    buckets = re.findall(
        r'^workqueue_queue_duration_seconds_bucket\{le="([^"]+)",name="demo"\} (\S+)$',
        text,
        re.MULTILINE,
    )
    assert [le for le, _ in buckets] == [
        "1e-08", "1e-07", "1e-06", "1e-05", "0.0001", "0.001", "0.01", "0.1", "1.0", "10.0",
        "+Inf",
    ]  # fmt: skip
    assert [float(n) for _, n in buckets] == [0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2]  # both waited 1 ms


def test_client_go_histogram_buckets() -> None:
    """metrics.go: exponential buckets from 1e-8 s, factor 10, 10 of them."""
    assert len(BUCKETS) == 10
    assert BUCKETS[0] == 1e-8 and BUCKETS[-1] == 10.0
    assert all(b / a == pytest.approx(10.0) for a, b in pairwise(BUCKETS))


def test_prometheus_several_queues_and_label_escaping(clock: FakeClock) -> None:
    """One HELP/TYPE per family for many queues; quotes in a name are escaped."""
    odd_name = 'say "hi"\\now'
    queues = [Queue("first", clock=clock), Queue(odd_name, clock=clock), Queue(clock=clock)]
    try:
        queues[0].add("x")
        text = render_prometheus(q.metrics for q in queues)
    finally:
        for q in queues:
            q.shut_down()
    assert text.count("# TYPE workqueue_depth gauge") == 1
    assert 'workqueue_depth{name="first"} 1.0' in text
    assert 'workqueue_depth{name="say \\"hi\\"\\\\now"} 0.0' in text
    assert text.count("workqueue_depth{") == 2  # the unnamed queue has no metrics


def test_prometheus_client_parses_it(clock: FakeClock) -> None:
    """The official parser reads our exposition back to the same values."""
    q = busy_queue(clock, "demo")
    try:
        text = q.metrics.to_prometheus()
    finally:
        q.shut_down()
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    assert families["workqueue_depth"].type == "gauge"
    assert families["workqueue_depth"].samples[0].value == 1
    assert families["workqueue_depth"].samples[0].labels == {"name": "demo"}
    assert families["workqueue_adds"].type == "counter"  # the parser strips _total
    assert families["workqueue_adds"].samples[0].value == 3
    latency = {
        (s.name, s.labels.get("le")): s.value
        for s in families["workqueue_queue_duration_seconds"].samples
    }
    assert latency[("workqueue_queue_duration_seconds_count", None)] == 2
    assert latency[("workqueue_queue_duration_seconds_bucket", "+Inf")] == 2
    assert latency[("workqueue_queue_duration_seconds_bucket", "0.0001")] == 0


def test_snapshot_is_readable_from_another_thread(clock: FakeClock) -> None:
    """A widget reads snapshot() on its own thread while workers change the queue."""
    q: Queue[int] = Queue("widget", clock=clock)
    seen: list[int] = []

    def watch() -> None:
        for _ in range(300):
            snap = q.metrics.snapshot()
            assert snap["depth"] >= 0
            seen.append(snap["adds_total"])

    watcher = threading.Thread(target=watch, name="widget-reader")
    watcher.start()
    try:
        for i in range(2000):
            q.add(i)
            item = get_ready(q)
            q.done(item)
    finally:
        watcher.join(GUARD)
        q.shut_down()
    assert not watcher.is_alive()
    assert len(seen) == 300, "the reader thread failed"
    assert seen == sorted(seen), "a snapshot went backwards"
    assert q.metrics.snapshot()["adds_total"] == 2000


def test_collector_reads_the_queue_at_scrape_time(clock: FakeClock) -> None:
    """One collector, registered once: each scrape shows the queue as it is then."""
    q: Queue[str] = Queue("live", clock=clock)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueMetricsCollector([q.metrics]))
    try:
        assert registry.get_sample_value("workqueue_depth", {"name": "live"}) == 0
        q.add("a")
        q.add("b")
        assert registry.get_sample_value("workqueue_depth", {"name": "live"}) == 2
        assert registry.get_sample_value("workqueue_adds_total", {"name": "live"}) == 2
    finally:
        q.shut_down()


def test_no_global_registry_is_touched(clock: FakeClock) -> None:
    """Each exposition has its own registry: the library's global one stays empty of ours."""
    q = busy_queue(clock, "private")
    try:
        assert "workqueue_depth" in render_prometheus([q.metrics])
    finally:
        q.shut_down()
    assert "workqueue_depth" not in generate_latest(REGISTRY).decode()
