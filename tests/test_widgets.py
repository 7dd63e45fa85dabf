"""The live queue monitor: what it samples, how it stops, what it leaves behind.

Headless tests drive a real queue and compare every sample with the queue's own
metrics. Two tests start a real Jupyter kernel: one reads the IOPub messages a
front end would get (widget updates sent by the monitor's thread while the cell
still runs, then the static image), the other runs a notebook with nbclient
and reads what a saved notebook keeps (the PNG, not the widget).
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel
from matplotlib.figure import Figure
from matplotlib.image import imread
from matplotlib.text import Text
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from helpers.errors import CourseError
from helpers.widgets import BackgroundThreadError, LiveFigure, QueueMonitor, Sample
from helpers.workqueue import ItemExponentialFailureRateLimiter, Queue, RateLimitingQueue

ROOT = Path(__file__).resolve().parents[1]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GUARD = 10.0
"""Real seconds before a wait that should succeed is declared a failure."""


@pytest.fixture
def queue() -> Iterator[RateLimitingQueue[str]]:
    # A zero delay: add_rate_limited is an immediate add that still counts as a retry.
    q: RateLimitingQueue[str] = RateLimitingQueue(ItemExponentialFailureRateLimiter(0, 0), "test")
    yield q
    q.shut_down()


def monitor_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("queue-monitor-")]


def matches_metrics(sample: Sample, q: Queue[Any]) -> bool:
    snap = q.metrics.snapshot()
    return (sample.depth, sample.in_flight, sample.adds, sample.retries) == (
        snap["depth"],
        q.in_flight(),
        snap["adds_total"],
        snap["retries_total"],
    )


def test_each_sample_is_the_queue_metrics_at_that_moment(queue: RateLimitingQueue[str]) -> None:
    monitor = QueueMonitor(queue, show=False)
    queue.add("a")
    queue.add("b")
    queue.add("a")  # a duplicate: neither deeper nor another add
    first = monitor.sample()
    assert (first.depth, first.in_flight, first.adds, first.retries) == (2, 0, 2, 0)
    assert matches_metrics(first, queue)

    item, _ = queue.get()
    queue.add_rate_limited(item)  # failed: back in line (dirty while still processing)
    second = monitor.sample()
    assert (second.depth, second.in_flight, second.adds, second.retries) == (2, 1, 3, 1)
    assert matches_metrics(second, queue)

    queue.done(item)
    third = monitor.sample()
    assert (third.depth, third.in_flight) == (2, 0)
    assert matches_metrics(third, queue)
    assert list(monitor.samples) == [first, second, third]
    assert monitor.peak("in_flight") == 1 and monitor.peak("adds") == 3


def test_the_thread_samples_until_stop_joins_it(queue: RateLimitingQueue[str]) -> None:
    monitor = QueueMonitor(queue, interval=0.005, refresh=0.01, show=False)
    assert not monitor.show, "no Jupyter kernel here, so nothing should be displayed"
    monitor.start()
    assert [t.name for t in monitor_threads()] == ["queue-monitor-test"]
    for n in range(5):
        queue.add(f"key-{n}")
    assert monitor.wait_for_samples(5, timeout=GUARD), "the thread is not sampling"
    png = monitor.stop()
    assert not monitor.is_alive() and monitor_threads() == []
    after_stop = len(monitor.samples)
    assert monitor.samples[-1].adds == 5, "stop() takes a last sample of the final state"
    assert monitor.stop() == png, "a second stop() returns the same image"
    assert len(monitor.samples) == after_stop, "nothing samples after stop()"


def test_stop_leaves_a_png_of_the_final_plot(queue: RateLimitingQueue[str]) -> None:
    with QueueMonitor(queue, workers=3, show=False) as monitor:
        queue.add("a")
    assert monitor.png is not None and monitor.png.startswith(PNG_SIGNATURE)
    height, width, _channels = imread(io.BytesIO(monitor.png)).shape
    assert (width, height) == (900, 440)  # 9 x 4.4 inches at 100 dpi, as chapter 08's pictures
    assert monitor.render() == monitor.png, "the image shows the final samples"


def test_the_plot_is_readable_at_100_percent_zoom(queue: RateLimitingQueue[str]) -> None:
    """Text of at least 10 pixels (STYLE.md), and no legend over the data: each legend sits
    above its axes, so no line can run through it however the queue moves."""
    monitor = QueueMonitor(queue, workers=4, show=False)
    for n in range(150):
        queue.add(f"key-{n}")
    monitor.sample()
    monitor.render()
    figure = monitor._figure
    texts = [t for t in figure.findobj(Text) if t.get_text() and t.get_visible()]
    small = {t.get_text(): t.get_fontsize() * figure.dpi / 72 for t in texts}
    assert texts and min(small.values()) >= 10, {k: v for k, v in small.items() if v < 10}
    renderer = figure.canvas.get_renderer()
    for axes in figure.axes:
        legend = axes.get_legend()
        assert legend is not None
        box, data = legend.get_window_extent(renderer), axes.get_window_extent(renderer)
        assert box.y0 >= data.y1, f"the legend of {axes.get_ylabel()!r} overlaps its data"


def test_the_summary_says_what_the_plot_drew(queue: RateLimitingQueue[str]) -> None:
    monitor = QueueMonitor(queue, workers=3, show=False)
    for key in "abc":
        queue.add(key)
    monitor.sample()  # depth 3
    item, _ = queue.get()
    queue.add_rate_limited(item)  # failed: a retry, while it is still held
    monitor.sample()
    queue.done(item)
    monitor.sample()
    summary = monitor.summary()
    assert summary.startswith("queue plot of 'test' over ≈")
    assert summary.endswith(": depth up to 3, in flight up to 1 of 3 workers, 4 adds, 1 retries")


def test_the_summary_is_printed_once_when_the_monitor_stops(
    queue: RateLimitingQueue[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """By default only a monitor shown in Jupyter prints (a test or a script stays quiet)."""
    quiet = QueueMonitor(queue, show=False).start()
    quiet.stop()
    assert capsys.readouterr().out == ""
    monitor = QueueMonitor(queue, workers=2, show=False, summary=True).start()
    queue.add("a")
    monitor.stop()
    monitor.stop()
    assert capsys.readouterr().out == monitor.summary() + "\n"
    assert QueueMonitor(queue, show=True, summary=False).print_summary is False


def test_every_sample_stays_inside_the_plot_as_it_grows(queue: RateLimitingQueue[str]) -> None:
    """Each redraw rescales: a later, larger burst must not run off the top of the first plot."""
    monitor = QueueMonitor(queue, workers=2, show=False)
    for burst in (3, 40):
        for n in range(burst):
            queue.add(f"{burst}-{n}")
        monitor.sample()
        monitor.render()
        levels, totals = monitor._figure.axes
        last = monitor.samples[-1]
        assert levels.get_ylim()[0] == 0 and levels.get_ylim()[1] >= monitor.peak("depth")
        assert totals.get_ylim()[1] >= last.adds
        assert levels.get_xlim()[1] >= last.at and totals.get_xlim()[1] >= last.at


def test_a_queue_without_a_name_has_no_metrics_to_plot() -> None:
    anonymous: Queue[str] = Queue()
    with pytest.raises(CourseError, match="no name"):
        QueueMonitor(anonymous)
    anonymous.shut_down()


def test_a_failing_sampler_is_reported_by_stop_not_hidden(queue: RateLimitingQueue[str]) -> None:
    monitor = QueueMonitor(queue, interval=0.005, refresh=0.01, show=False)
    calls = 0

    def in_flight() -> int:
        nonlocal calls
        calls += 1
        if calls > 2:
            raise ZeroDivisionError("sampler broke")
        return 0

    queue.in_flight = in_flight  # type: ignore[method-assign]
    monitor.start()
    monitor.live.thread.join(GUARD)  # type: ignore[union-attr]  # it dies on the third sample
    with pytest.raises(RuntimeError, match="sampling thread failed") as failure:
        monitor.stop()
    assert isinstance(failure.value.__cause__, ZeroDivisionError)
    assert monitor_threads() == []
    assert monitor.png is not None, "it still leaves the plot of what it saw"


def test_monitor_cannot_start_twice(queue: RateLimitingQueue[str]) -> None:
    monitor = QueueMonitor(queue, show=False).start()
    with pytest.raises(RuntimeError, match="already been started"):
        monitor.start()
    monitor.stop()


# -- LiveFigure, the plumbing under QueueMonitor (and chapter 07's sequence diagram) ----------


class Calls:
    """What a LiveFigure's draw and tick did, in order, with a Condition to wait on."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.changed = threading.Condition()

    def add(self, what: str) -> None:
        with self.changed:
            self.log.append(what)
            self.changed.notify_all()

    def wait_for_ticks(self, count: int, thread_name: str) -> bool:
        with self.changed:
            return self.changed.wait_for(
                lambda: self.log.count(f"tick in {thread_name}") >= count, GUARD
            )


def counting_figure(**options: Any) -> tuple[LiveFigure, Calls]:
    """A LiveFigure whose draw and tick record that they ran (and tick, in which thread)."""
    calls = Calls()
    figure = Figure(figsize=(2, 1), dpi=50)
    axes = figure.subplots()

    def draw() -> None:
        calls.add("draw")
        axes.set_title(str(len(calls.log)))

    def tick() -> None:
        calls.add(f"tick in {threading.current_thread().name}")

    options.setdefault("show", False)
    live = LiveFigure(figure, draw, name="live-test", caption="a test", tick=tick, **options)
    return live, calls


def test_live_figure_ticks_in_its_named_thread_until_stop_joins_it() -> None:
    live, calls = counting_figure(interval=0.005, refresh=0.01)
    live.start()
    assert live.thread is not None and live.thread.name == "live-test"
    assert [t.name for t in threading.enumerate() if t.name == "live-test"] == ["live-test"]
    assert calls.wait_for_ticks(3, "live-test"), "the thread is not ticking"
    png = live.stop()
    assert not live.is_alive() and not live.thread.is_alive()
    assert png.startswith(PNG_SIGNATURE) and live.png == png
    assert calls.log[-2:] == ["tick in MainThread", "draw"], "stop() ticks once more, then draws"
    after = len(calls.log)
    assert live.stop() == png and len(calls.log) == after, "a second stop() draws nothing"


def test_live_figure_renders_what_draw_made() -> None:
    live, calls = counting_figure()
    first = live.render()
    second = live.render()
    assert calls.log == ["draw", "draw"] and first != second  # the title changed from 1 to 2
    height, width, _ = imread(io.BytesIO(second)).shape
    assert (width, height) == (100, 50)  # 2 x 1 inches at 50 dpi


def test_live_figure_raises_a_failing_tick_from_stop_with_its_cause() -> None:
    figure = Figure(figsize=(2, 1), dpi=50)
    figure.subplots()

    def tick() -> None:
        raise KeyError("sampler broke")

    live = LiveFigure(
        figure, lambda: None, name="live-fails", caption="c", tick=tick, interval=0.005, show=False
    )
    live.start()
    live.thread.join(GUARD)  # type: ignore[union-attr]
    with pytest.raises(BackgroundThreadError, match="live-fails") as failure:
        live.stop()
    assert isinstance(failure.value.__cause__, KeyError)
    assert live.png is not None, "it still leaves the image of what was drawn"


def test_live_figure_options_are_checked() -> None:
    with pytest.raises(ValueError, match="interval"):
        LiveFigure(Figure(), lambda: None, name="x", caption="c", interval=0.5, refresh=0.1)
    live, _ = counting_figure()
    with pytest.raises(RuntimeError, match="never started"):
        live.stop()
    live.start()
    with pytest.raises(RuntimeError, match="already been started"):
        live.start()
    live.stop()


KERNEL_CODE = """
from helpers.widgets import QueueMonitor
from helpers.workqueue import Queue

q = Queue("kernel-test")
monitor = QueueMonitor(q, interval=0.01, refresh=0.01).start()
for n in range(20):
    q.add(n)
assert monitor.wait_for_samples(10, timeout=10)
monitor.stop()
q.shut_down()
"""


def test_a_kernel_gets_widget_updates_while_the_cell_runs_then_the_png() -> None:
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    try:
        msg_id = client.execute(KERNEL_CODE)
        messages = []
        while True:
            msg = client.get_iopub_msg(timeout=GUARD * 3)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            messages.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        reply = client.get_shell_msg(timeout=GUARD)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", reply["content"]

    kinds = [m["msg_type"] for m in messages]
    updates = [
        m
        for m in messages
        if m["msg_type"] == "comm_msg"
        and m["content"]["data"].get("method") == "update"
        and ["value"] in m["content"]["data"].get("buffer_paths", [])  # bytes travel as buffers
    ]
    # Sent from the monitor's thread, yet attributed to this cell, before it ended:
    assert len(updates) >= 3, kinds
    assert kinds.index("comm_msg") < kinds.index("update_display_data")
    assert all(m["buffers"] and m["buffers"][0][:8] == PNG_SIGNATURE for m in updates)

    (shown,) = [m for m in messages if m["msg_type"] == "display_data"]
    (final,) = [m for m in messages if m["msg_type"] == "update_display_data"]
    assert "application/vnd.jupyter.widget-view+json" in shown["content"]["data"]
    display_id = shown["content"]["transient"]["display_id"]
    assert final["content"]["transient"]["display_id"] == display_id
    assert set(final["content"]["data"]) == {"image/png", "text/plain"}
    assert final["content"]["data"]["text/plain"] == shown["content"]["data"]["text/plain"]
    assert "comm_close" in kinds, "the widget is closed once the image replaces it"


def test_a_saved_notebook_keeps_the_static_png_not_the_widget() -> None:
    notebook = new_notebook(cells=[new_code_cell(KERNEL_CODE)])
    NotebookClient(notebook, timeout=60, kernel_name="python3").execute(cwd=str(ROOT))
    output, summary = notebook.cells[0].outputs
    assert set(output["data"]) == {"image/png", "text/plain"}
    assert output["data"]["text/plain"].startswith("QueueMonitor of workqueue 'kernel-test'")
    assert summary["output_type"] == "stream"
    assert summary["text"].startswith("queue plot of 'kernel-test' over ≈")
    assert summary["text"].endswith(": depth up to 20, in flight up to 0, 20 adds, 0 retries\n")
    nbformat.validate(notebook)
