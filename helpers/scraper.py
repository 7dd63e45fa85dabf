"""Read a process's ``/metrics`` a few times a second, as Prometheus would, and keep it.

Not a client-go counterpart, and not built by a chapter: an instrument, with which
chapter 08a watches a running controller process from outside, the way Prometheus
does (it scrapes every 15 s or so; we scrape every 0.2 s to see seconds-long
events). One thread, named ``scraper``, with a stop event and a join; a Condition
notified after every scrape, so that a cell waits for a state instead of sleeping.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

from helpers.clock import StopEvent

Values = dict[str, float]
"""One scrape: ``name{label=value,...}`` (labels sorted) -> value."""


def series_key(name: str, labels: dict[str, str]) -> str:
    """How one sample is filed: its name and its labels, sorted, as Prometheus writes them."""
    inside = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    return f"{name}{{{inside}}}"


class Scraper:
    """Scrapes ``url``/metrics every ``interval`` seconds on a thread of its own until stop()."""

    def __init__(self, url: str, interval: float = 0.2) -> None:
        self.url = url
        self.interval = interval
        self.samples: list[tuple[float, Values]] = []  # (monotonic time, values)
        # When each scrape's request began: the process read its counters after that, and
        # before the scrape's time above (on a busy machine, long before it).
        self.asked: list[float] = []
        self.failed = 0  # scrapes that got no answer (the process ending, say)
        self.changed = threading.Condition()
        self._stop = StopEvent()
        self._thread = threading.Thread(target=self._run, name="scraper")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            asked = time.monotonic()
            try:
                with urllib.request.urlopen(f"{self.url}/metrics", timeout=5) as answer:
                    text = answer.read().decode()
            except (OSError, urllib.error.URLError):
                with self.changed:
                    self.failed += 1
                continue
            values = {
                series_key(sample.name, sample.labels): sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples
            }
            with self.changed:
                self.samples.append((time.monotonic(), values))
                self.asked.append(asked)
                self.changed.notify_all()

    def series(self, name: str, /, **labels: str) -> list[float]:
        """One sample's values, scrape by scrape (0 where a scrape lacked it)."""
        key = series_key(name, labels)
        with self.changed:
            return [values.get(key, 0.0) for _, values in self.samples]

    def times(self, since: float) -> list[float]:
        """The scrapes' times, in seconds after ``since`` (a monotonic time)."""
        with self.changed:
            return [at - since for at, _ in self.samples]

    def last(self, name: str, /, **labels: str) -> float:
        """The latest value of one sample (0 before the first scrape)."""
        key = series_key(name, labels)
        with self.changed:
            return self.samples[-1][1].get(key, 0.0) if self.samples else 0.0

    def increases(
        self, name: str, /, window: float = 1.0, **labels: str
    ) -> list[tuple[float, float]]:
        """How much a counter grew over every stretch of at least ``window`` seconds.

        One ``(seconds, increase)`` per scrape: from it to the first scrape at least
        ``window`` seconds later (stretches run longer when scrapes come late). The
        seconds run from when the first scrape was asked to when the last one was
        answered, so they are never shorter than the time between the two readings of
        the counter, however late a busy machine handles an answer: a bound such as
        "at most 5 a second" holds for them.
        """
        with self.changed:
            times = [at for at, _ in self.samples]
            asked = list(self.asked)
        values = self.series(name, **labels)[: len(times)]
        stretches = []
        for first, began in enumerate(times):
            last = next((j for j in range(first, len(times)) if times[j] - began >= window), None)
            if last is not None:
                stretches.append((times[last] - asked[first], values[last] - values[first]))
        return stretches

    def wait_for_value(
        self, name: str, wanted: float, /, timeout: float = 60, **labels: str
    ) -> None:
        """Until the latest scrape shows ``wanted`` for one sample."""
        key = series_key(name, labels)
        self.wait_for(lambda values: values.get(key) == wanted, timeout)

    def wait_for(self, test: Callable[[Values], bool], timeout: float = 60) -> None:
        """Until the latest scrape passes ``test``; fails after ``timeout`` seconds."""
        with self.changed:
            passed = self.changed.wait_for(
                lambda: bool(self.samples) and test(self.samples[-1][1]), timeout
            )
        assert passed, f"no scrape of {self.url} passed within {timeout:g} s"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
