"""What the controller process tells Prometheus: its queue, its syncs, its leadership.

Counterparts: client-go's workqueue metrics (chapter 04's
:class:`~helpers.workqueue.metrics.QueueMetricsCollector`, same names),
controller-runtime's ``controller_runtime_reconcile_*`` metrics (here
``controller_syncs_total``, ``controller_sync_errors_total``,
``controller_sync_duration_seconds``), client-go's leader election gauge
``leader_election_master_status``, and the ``process_*`` metrics every Go
binary exports.

Why these: a queue that only grows says the workers cannot keep up; a rising
error count says syncs fail (the log says why); sync duration says how long a
worker is busy per key; the leader gauge says which replica works (exactly one
should show 1); process memory and CPU say whether the process itself is
healthy.

One :class:`ControllerMetrics` per process, with its own
``CollectorRegistry`` (no global state); :mod:`helpers.endpoints` serves it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.process_collector import ProcessCollector

from helpers.workqueue.metrics import QueueMetrics, QueueMetricsCollector

SYNC_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Seconds; a sync makes a few API calls, so milliseconds to seconds."""


class ControllerMetrics:
    """The metrics of one controller process, in a registry of their own.

    ``controller`` labels the sync metrics (controller-runtime does the same,
    so that one process can run several controllers).
    """

    def __init__(self, controller: str = "foo") -> None:
        self.controller = controller
        self.registry = CollectorRegistry(auto_describe=True)
        self.queues = QueueMetricsCollector([])
        self.registry.register(self.queues)
        ProcessCollector(registry=self.registry)
        self.syncs = Counter(
            "controller_syncs",
            "Syncs finished, by result (success or error).",
            ["controller", "result"],
            registry=self.registry,
        )
        self.sync_errors = Counter(
            "controller_sync_errors",
            "Syncs that raised: the key goes back on the queue with backoff.",
            ["controller"],
            registry=self.registry,
        )
        self.sync_duration = Histogram(
            "controller_sync_duration_seconds",
            "Seconds one sync took, from start to its return or exception.",
            ["controller"],
            buckets=SYNC_BUCKETS,
            registry=self.registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "1 while this process holds the lease named by `name`, else 0.",
            ["name"],
            registry=self.registry,
        )
        # Both results show from the start (at 0), so a rate() has a series to work on.
        for result in ("success", "error"):
            self.syncs.labels(controller, result)
        self.sync_errors.labels(controller)

    def watch_queue(self, metrics: QueueMetrics) -> None:
        """Expose a named workqueue's metrics (read at scrape time)."""
        self.queues.queues.append(metrics)

    @contextmanager
    def sync(self) -> Iterator[None]:
        """Time and count one sync; an exception counts as an error and is raised on."""
        started = time.perf_counter()
        try:
            yield
        except Exception:
            self.syncs.labels(self.controller, "error").inc()
            self.sync_errors.labels(self.controller).inc()
            raise
        else:
            self.syncs.labels(self.controller, "success").inc()
        finally:
            self.sync_duration.labels(self.controller).observe(time.perf_counter() - started)

    def set_leader(self, lease: str, leading: bool) -> None:
        self.leader.labels(lease).set(1 if leading else 0)
