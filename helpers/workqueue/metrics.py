"""Per-queue metrics: how deep, how busy, how slow, how stuck.

client-go counterpart: ``util/workqueue/metrics.go`` (what is measured) and
component-base ``metrics/prometheus/workqueue/metrics.go`` (the metric names,
subsystem ``workqueue``, label ``name``).

Why these numbers: depth and adds say how much work arrives; queue duration says
how long a key waits for a worker (too few workers?); work duration says how long
a sync takes; unfinished work and the longest running processor reveal a stuck
worker before it finishes (a histogram only learns about work once it is Done);
retries count AddAfter calls, i.e. failures being retried.

Like client-go, metrics only exist for a named queue: ``new_queue_metrics("")``
returns a ``NoopMetrics``. Unlike client-go there is no global registry: each
queue owns its metrics object, ``snapshot()`` gives a widget a plain dict and
``to_prometheus()`` the text exposition format.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Hashable, Iterable
from typing import Any

from helpers.clock import Clock

UPDATE_PERIOD = 0.5
"""Seconds of clock time between refreshes of the two "in flight" gauges."""


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Bucket upper bounds ``start * factor**i``, rounded so they print as ``1e-08``."""
    return tuple(float(f"{start * factor**i:.12g}") for i in range(count))


BUCKETS = exponential_buckets(1e-8, 10, 10)
"""client-go's workqueue histogram buckets: 10 ns up to 10 s."""


class Histogram:
    """A Prometheus-style histogram: counts per upper bound, a sum and a count."""

    def __init__(self, buckets: tuple[float, ...] = BUCKETS) -> None:
        self.buckets = buckets
        self._counts = [0] * len(buckets)  # not cumulative; +Inf is `count`
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self.buckets, value)  # first bound >= value
        if index < len(self._counts):
            self._counts[index] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[float, int]]:
        """``(upper bound, observations <= bound)`` pairs, as Prometheus reports them."""
        running, pairs = 0, []
        for bound, n in zip(self.buckets, self._counts, strict=True):
            running += n
            pairs.append((bound, running))
        return pairs


class NoopMetrics:
    """What an unnamed queue records: nothing (client-go: ``noMetrics``)."""

    def add(self, item: Hashable) -> None: ...
    def get(self, item: Hashable) -> None: ...
    def done(self, item: Hashable) -> None: ...
    def retry(self) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...

    def snapshot(self) -> dict[str, Any]:
        return {}

    def to_prometheus(self) -> str:
        return ""


class QueueMetrics:
    """Metrics of one named queue (client-go: ``defaultQueueMetrics``).

    The queue calls ``add``/``get``/``done``/``retry`` while holding its own
    lock; this object has its own lock too, so ``snapshot()`` can be read from a
    widget's thread at any time. A thread named ``workqueue-metrics-<name>``
    refreshes the two in-flight gauges every ``update_period`` seconds of clock
    time, until ``stop()`` (called by the queue's shutdown).
    """

    def __init__(self, name: str, clock: Clock, update_period: float = UPDATE_PERIOD) -> None:
        self.name = name
        self._clock = clock
        self._update_period = update_period
        self._lock = threading.Lock()
        self._depth = 0
        self._adds = 0
        self._retries = 0
        self._added_at: dict[Hashable, float] = {}  # first counted Add, for queue duration
        self._started_at: dict[Hashable, float] = {}  # Get, for work duration
        self._queue_duration = Histogram()
        self._work_duration = Histogram()
        self._unfinished_seconds = 0.0
        self._longest_running_seconds = 0.0
        self._stop = threading.Event()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    # Called by the queue -------------------------------------------------

    def add(self, item: Hashable) -> None:
        with self._lock:
            self._adds += 1
            self._depth += 1
            self._added_at.setdefault(item, self._clock.now())

    def get(self, item: Hashable) -> None:
        with self._lock:
            now = self._clock.now()
            self._depth -= 1
            self._started_at[item] = now
            added_at = self._added_at.pop(item, None)
            if added_at is not None:
                self._queue_duration.observe(now - added_at)

    def done(self, item: Hashable) -> None:
        with self._lock:
            started_at = self._started_at.pop(item, None)
            if started_at is not None:
                self._work_duration.observe(self._clock.now() - started_at)

    def retry(self) -> None:
        with self._lock:
            self._retries += 1

    # The refresher thread ------------------------------------------------

    def start(self) -> None:
        """Start the refresher thread (once)."""
        if self._thread is not None:
            return
        # daemon only so a queue nobody shut down cannot keep Python alive;
        # stop() is how it ends.
        self._thread = threading.Thread(
            target=self._run, name=f"workqueue-metrics-{self.name}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop refreshing and wait for the thread; no gauge update happens after this."""
        with self._wake:
            self._stop.set()
            self._wake.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        next_tick = self._clock.now() + self._update_period
        while True:
            with self._wake:
                stopped = self._clock.wait_until(self._wake, self._stop.is_set, next_tick)
            if stopped:
                return
            # A ticker that missed ticks (a big clock step) fires once, not once per tick.
            next_tick = self._clock.now() + self._update_period
            self.update_unfinished_work()

    def update_unfinished_work(self) -> None:
        """Recompute the in-flight gauges from the Get times of unfinished items."""
        with self._lock:
            if self._stop.is_set():  # never after shutdown, even if woken late
                return
            now = self._clock.now()
            ages = [now - started for started in self._started_at.values()]
            self._unfinished_seconds = sum(ages)
            self._longest_running_seconds = max(ages, default=0.0)

    # Reading -------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy of every metric as plain Python values."""
        with self._lock:
            return {
                "name": self.name,
                "depth": self._depth,
                "adds_total": self._adds,
                "retries_total": self._retries,
                "queue_duration_seconds": _histogram_dict(self._queue_duration),
                "work_duration_seconds": _histogram_dict(self._work_duration),
                "unfinished_work_seconds": self._unfinished_seconds,
                "longest_running_processor_seconds": self._longest_running_seconds,
            }

    def to_prometheus(self) -> str:
        """This queue's metrics in the Prometheus text exposition format."""
        return render_prometheus([self])


def new_queue_metrics(
    name: str, clock: Clock, update_period: float = UPDATE_PERIOD
) -> QueueMetrics | NoopMetrics:
    """Real metrics for a named queue, no-op metrics for an anonymous one."""
    return QueueMetrics(name, clock, update_period) if name else NoopMetrics()


def _histogram_dict(histogram: Histogram) -> dict[str, Any]:
    return {
        "count": histogram.count,
        "sum": histogram.sum,
        "buckets": dict(histogram.cumulative()),
    }


# Prometheus text format ----------------------------------------------------

_FAMILIES: list[tuple[str, str, str, str]] = [
    # (metric name, type, snapshot key, help)
    ("workqueue_depth", "gauge", "depth", "Current number of items waiting in the workqueue."),
    ("workqueue_adds_total", "counter", "adds_total", "Adds handled by the workqueue."),
    (
        "workqueue_queue_duration_seconds",
        "histogram",
        "queue_duration_seconds",
        "Seconds an item waits in the workqueue before a worker gets it.",
    ),
    (
        "workqueue_work_duration_seconds",
        "histogram",
        "work_duration_seconds",
        "Seconds a worker spends on an item, from Get to Done.",
    ),
    (
        "workqueue_unfinished_work_seconds",
        "gauge",
        "unfinished_work_seconds",
        "Seconds of work in progress not yet observed by work_duration; "
        "a steady rise means stuck workers.",
    ),
    (
        "workqueue_longest_running_processor_seconds",
        "gauge",
        "longest_running_processor_seconds",
        "Seconds the longest-running item in progress has been worked on.",
    ),
    ("workqueue_retries_total", "counter", "retries_total", "Retries handled by the workqueue."),
]


def render_prometheus(queues: Iterable[QueueMetrics | NoopMetrics]) -> str:
    """Metrics of several queues as one exposition: each family's HELP and TYPE once."""
    snapshots = [s for s in (q.snapshot() for q in queues) if s]
    lines: list[str] = []
    for metric, kind, key, help_text in _FAMILIES:
        lines.append(f"# HELP {metric} {help_text}")
        lines.append(f"# TYPE {metric} {kind}")
        for snap in snapshots:
            name = f'name="{_escape(snap["name"])}"'
            if kind != "histogram":
                lines.append(f"{metric}{{{name}}} {_number(snap[key])}")
                continue
            hist = snap[key]
            for bound, n in hist["buckets"].items():
                lines.append(f'{metric}_bucket{{{name},le="{_number(bound)}"}} {n}')
            lines.append(f'{metric}_bucket{{{name},le="+Inf"}} {hist["count"]}')
            lines.append(f"{metric}_sum{{{name}}} {_number(hist['sum'])}")
            lines.append(f"{metric}_count{{{name}}} {hist['count']}")
    return "\n".join(lines) + "\n" if snapshots else ""


def _escape(label_value: str) -> str:
    """Escape a label value as the text format requires."""
    return label_value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    """Shortest text for a number, as Go prints it: 1, 0.001, 1e-08."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))
