"""Live plots for the notebooks: a figure that redraws itself while a cell runs.

No client-go counterpart, and no chapter builds this module: it is a *tool* for
looking at the components the chapters build, the way a profiler is a tool for
looking at a program. A controller does not need it, and what it teaches (a
burst of keys meeting N workers, a chain of controllers passing work along) is
in the plots, not in their code; so it is written by hand here, not exported
from a chapter's ``#| export`` cells.

Three pieces:

- :class:`LiveFigure`, the plumbing: a matplotlib ``Figure`` shown in Jupyter
  and redrawn from a background thread several times a second, until
  ``stop()`` leaves a static PNG in its place. Chapter 04's queue plot, chapter
  07's sequence diagram and chapter 06's timeline are all one of these.
- :class:`QueueSampler`, the one way of sampling a queue: what client-go
  exports as Prometheus metrics (``workqueue_depth``, ``workqueue_adds_total``,
  ``workqueue_retries_total``) next to the number of items in processing
  (``Queue.in_flight()``), which is what a dashboard would put beside them.
- :class:`QueueMonitor`, a ``LiveFigure`` of a ``QueueSampler``'s samples over
  time, which prints a one-line summary of what it drew when it stops.

How a LiveFigure works, and why this way:

- A background thread, named by its owner, calls an optional ``tick`` every
  ``interval`` seconds (QueueMonitor samples the queue there) and redraws every
  ``refresh`` seconds (counted from the start of the last frame), until
  ``stop()`` sets its stop event and joins it. The kernel's main thread stays
  free: the cell that does the work keeps running while the plot moves. Live
  frames are PNGs compressed at the lowest level: at the default level the
  encoding takes longer than the drawing; the final image is compressed fully.
- The owner draws with matplotlib's object-oriented API (a ``Figure`` on an Agg
  canvas, never ``pyplot``), so drawing from a thread touches no global state
  and no GUI backend, and leaves the notebook's inline figures alone.
- In Jupyter the PNG goes into an ``ipywidgets.Image``, and only the
  LiveFigure's thread sets its ``value``. With the pinned ipywidgets 8.1 and
  ipykernel 7 that is safe from a thread: the change leaves as a comm message
  on IOPub, which ipykernel hands to its IO thread, and a thread we start takes
  the executing cell as its parent message, so JupyterLab redraws while the
  cell is still running (``tests/test_widgets.py`` checks those messages in a
  real kernel).
- ``stop()`` replaces the widget with a static PNG of the final figure (a
  display update), so a saved notebook shows the plot on GitHub, under nbval,
  and in any viewer that does not run widgets. Its ``text/plain`` is a fixed
  caption, the same before and after: nbval compares the output a cell first
  showed, never its updates. What a picture drew is said in text by its owner
  (QueueMonitor prints a summary line when it stops).
- Outside a Jupyter kernel (a test, a script) nothing is displayed; ticking
  and drawing work the same, and ``stop()`` returns the PNG bytes.
"""

from __future__ import annotations

import base64
import io
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from helpers.errors import CourseError
from helpers.workqueue.metrics import QueueMetrics
from helpers.workqueue.queue import Queue

DPI = 100
TEXT = 9
"""Points: 12.5 pixels at 100 dpi, as chapter 08's pictures (helpers/program_plots.py)."""
MAX_SAMPLES = 20_000
"""Samples kept (the oldest are dropped): over 15 minutes at the default interval."""


class BackgroundThreadError(RuntimeError):
    """A LiveFigure's thread failed; ``__cause__`` is what it raised."""


class LiveFigure:
    """A matplotlib ``Figure`` redrawn from a named background thread, then left as a PNG.

    ``draw()`` brings the figure up to date (move line data, set limits and
    titles); it runs under a lock, in whichever thread renders, so it must only
    touch this figure. ``tick()``, if given, runs in the background thread every
    ``interval`` seconds (for sampling), and once more in ``stop()``. The widget
    is redrawn every ``refresh`` seconds. ``show`` decides whether to display a
    widget (default: only inside a Jupyter kernel); ``caption`` is the fixed
    ``text/plain`` of the widget and of the final image.

    Use it as a context manager, or call ``start()`` and ``stop()``::

        figure = Figure(figsize=(8, 3), dpi=72)
        axes = figure.subplots()
        with LiveFigure(figure, lambda: axes.plot(data), name="plot", caption="my plot"):
            ...  # the work the plot shows
    """

    def __init__(
        self,
        figure: Figure,
        draw: Callable[[], None],
        *,
        name: str,
        caption: str,
        tick: Callable[[], object] | None = None,
        interval: float = 0.25,
        refresh: float = 0.25,
        show: bool | None = None,
    ) -> None:
        if interval <= 0 or refresh < interval:
            raise ValueError(f"need 0 < interval <= refresh, got {interval=} and {refresh=}")
        self.figure = figure
        if figure.canvas is None or not isinstance(figure.canvas, FigureCanvasAgg):
            FigureCanvasAgg(figure)
        self.name = name
        self.caption = caption
        self.interval = interval
        self.refresh = refresh
        self.show = in_jupyter_kernel() if show is None else show
        self.png: bytes | None = None
        """The final image, set by ``stop()``."""
        self._draw = draw
        self._tick = tick
        self._draw_lock = threading.Lock()  # one drawing at a time on the one Figure
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._image: Any = None  # the ipywidgets.Image, when shown
        self._handle: Any = None  # its display handle

    @property
    def thread(self) -> threading.Thread | None:
        """The background thread (named ``name``), once started."""
        return self._thread

    def start(self) -> LiveFigure:
        """Show the widget (in Jupyter) and start the background thread."""
        if self._thread is not None:
            raise RuntimeError(f"LiveFigure {self.name!r} has already been started; make a new one")
        if self.show:
            self._display(self.render())
        # daemon only so a figure nobody stopped cannot keep Python alive; stop() is how it ends.
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> bytes:
        """Stop and join the thread, tick once more, and leave the final figure as a PNG.

        Returns the PNG bytes; a second call returns the same. If the
        background thread failed, raises :class:`BackgroundThreadError` after
        cleaning up (the image then shows what was drawn before the failure),
        rather than leaving a plot that silently stopped moving.
        """
        if self._thread is None:
            raise RuntimeError(f"LiveFigure {self.name!r} was never started")
        self._stop.set()
        self._thread.join()
        if self.png is None:
            if self._error is None and self._tick is not None:
                self._tick()
            self.png = self.render()
            if self._image is not None:
                self._handle.update(
                    {
                        "image/png": base64.b64encode(self.png).decode("ascii"),
                        "text/plain": self.caption,
                    },
                    raw=True,
                )
                self._image.close()  # the static image replaced it; free its comm
                self._image = None
        if self._error is not None:
            raise BackgroundThreadError(
                f"the thread of {self.name!r} failed: {self._error!r}"
            ) from self._error
        return self.png

    def __enter__(self) -> LiveFigure:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def is_alive(self) -> bool:
        """True while the background thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def render(self, *, fast: bool = False) -> bytes:
        """Bring the figure up to date with ``draw()`` and return it as PNG bytes.

        ``fast`` compresses the PNG less (a live frame: encoding at the default
        level takes longer than drawing), at the cost of a bigger image.
        """
        with self._draw_lock:
            self._draw()
            buffer = io.BytesIO()
            options: dict[str, Any] = {"pil_kwargs": {"compress_level": 1}} if fast else {}
            self.figure.savefig(buffer, format="png", **options)
        return buffer.getvalue()

    def _run(self) -> None:
        next_draw = time.monotonic() + self.refresh
        try:
            # The timed wait paces the ticks; stop() ends it at once.
            while not self._stop.wait(self.interval):
                if self._tick is not None:
                    self._tick()
                if self._image is not None and time.monotonic() >= next_draw:
                    next_draw = time.monotonic() + self.refresh  # from this frame's start
                    self._image.value = self.render(fast=True)
        except BaseException as error:  # kept for stop() to raise in the caller's thread
            self._error = error

    def _display(self, png: bytes) -> None:
        """Show an Image widget with our fixed caption as its text form."""
        import ipywidgets
        from IPython.display import display

        self._image = ipywidgets.Image(value=png, format="png")
        bundle = self._image._repr_mimebundle_()
        bundle["text/plain"] = self.caption
        self._handle = display(bundle, raw=True, display_id=True)


@dataclass(frozen=True)
class Sample:
    """One look at the queue, ``at`` seconds after the monitor started."""

    at: float
    depth: int  # workqueue_depth: counted adds not yet handed out
    in_flight: int  # items between get() and done()
    adds: int  # workqueue_adds_total
    retries: int  # workqueue_retries_total


class QueueSampler:
    """Samples of a named queue's metrics and in-flight count, taken when asked.

    :class:`QueueMonitor` plots its samples (chapter 06's timeline notes the
    queue's levels its own way, at each sync). ``started_at`` (a
    ``time.monotonic()`` reading) is time zero of each sample's ``at``; ``queue``
    may be replaced by another queue's (a restarted controller's), and sampling
    carries on from the new one.
    """

    def __init__(self, queue: Queue[Any], *, started_at: float | None = None) -> None:
        if not isinstance(queue.metrics, QueueMetrics):
            raise CourseError(
                "This queue keeps no metrics to plot, because it has no name.",
                "give it one, for example RateLimitingQueue(limiter, 'configmaps').",
            )
        self.queue = queue
        self.started_at = time.monotonic() if started_at is None else started_at
        self.samples: deque[Sample] = deque(maxlen=MAX_SAMPLES)
        self._sampled = threading.Condition()  # guards samples; notified on each sample

    def sample(self) -> Sample:
        """Read the queue's metrics and in-flight count now, and record them."""
        metrics = self.queue.metrics.snapshot()
        sample = Sample(
            at=time.monotonic() - self.started_at,
            depth=metrics["depth"],
            in_flight=self.queue.in_flight(),
            adds=metrics["adds_total"],
            retries=metrics["retries_total"],
        )
        with self._sampled:
            self.samples.append(sample)
            self._sampled.notify_all()
        return sample

    def snapshot(self) -> list[Sample]:
        """A copy of the samples so far, oldest first."""
        with self._sampled:
            return list(self.samples)

    def wait_for_samples(self, count: int, timeout: float | None = None) -> bool:
        """Block until at least ``count`` samples exist; False on timeout."""
        with self._sampled:
            return self._sampled.wait_for(lambda: len(self.samples) >= count, timeout)

    def peak(self, field: str) -> int:
        """The largest value of one ``Sample`` field so far (``"depth"``, ``"in_flight"``...)."""
        with self._sampled:
            return max((getattr(s, field) for s in self.samples), default=0)


class QueueMonitor:
    """Plot a named queue's depth, in-flight items, adds and retries, live.

    A :class:`LiveFigure` (``self.live``) whose thread, named
    ``queue-monitor-<queue name>``, samples the queue (a :class:`QueueSampler`,
    ``self.sampler``) every ``interval`` seconds and redraws every ``refresh``
    seconds. The depth has a red mark where a retry joined the line; the items in
    flight have a strip of their own under it, where ``workers`` (optional) draws a
    line at the number of workers, the ceiling for in-flight items.
    Use it as a context manager, or call ``start()`` and ``stop()``; ``show``
    decides whether to display a widget (default: only inside a Jupyter kernel).
    When it stops it prints :meth:`summary` (``summary``: default only when shown):
    one line of text that a saved notebook keeps beside the picture, and that nbval
    compares, where the picture's own text is a fixed caption.
    """

    # Made by _build_figure(); _draw() only moves their data.
    _figure: Figure
    _strip: Axes
    _title: Text
    _in_flight_fill: Any

    def __init__(
        self,
        queue: Queue[Any],
        *,
        interval: float = 0.05,
        refresh: float = 0.25,
        workers: int | None = None,
        show: bool | None = None,
        summary: bool | None = None,
    ) -> None:
        self.sampler = QueueSampler(queue)
        self.queue = queue
        self.workers = workers
        self._build_figure()
        self.live = LiveFigure(
            self._figure,
            self._draw,
            name=f"queue-monitor-{queue.name}",
            caption=(
                f"QueueMonitor of workqueue {queue.name!r}: depth, in flight, adds and retries "
                "over time (a static image once stopped)"
            ),
            tick=self.sample,
            interval=interval,
            refresh=refresh,
            show=show,
        )
        self.print_summary = self.live.show if summary is None else summary
        self._summarised = False

    @property
    def samples(self) -> deque[Sample]:
        return self.sampler.samples

    @property
    def interval(self) -> float:
        return self.live.interval

    @property
    def refresh(self) -> float:
        return self.live.refresh

    @property
    def show(self) -> bool:
        return self.live.show

    @property
    def caption(self) -> str:
        return self.live.caption

    @property
    def png(self) -> bytes | None:
        """The final plot, set by ``stop()``."""
        return self.live.png

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> QueueMonitor:
        """Take a first sample, show the widget (in Jupyter), start sampling in the background."""
        if self.live.thread is not None:
            raise RuntimeError("this QueueMonitor has already been started; make a new one")
        self.sampler.started_at = time.monotonic()
        self.sample()
        self.live.start()
        return self

    def stop(self) -> bytes:
        """Stop and join the thread, take a last sample, and leave the final plot as a PNG.

        Returns the PNG bytes, and prints the summary line (once, if asked to). If
        the sampling thread failed, raises after cleaning up, rather than showing a plot
        that silently stopped moving.
        """
        if self.live.thread is None:
            raise RuntimeError("this QueueMonitor was never started")
        try:
            png = self.live.stop()
        except BackgroundThreadError as failure:
            cause = failure.__cause__
            raise RuntimeError(f"the monitor's sampling thread failed: {cause!r}") from cause
        if self.print_summary and not self._summarised:
            self._summarised = True
            print(self.summary())
        return png

    def __enter__(self) -> QueueMonitor:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def is_alive(self) -> bool:
        """True while the sampling thread runs."""
        return self.live.is_alive()

    # -- sampling -----------------------------------------------------------------------

    def sample(self) -> Sample:
        """Read the queue's metrics and in-flight count now, and record them."""
        return self.sampler.sample()

    def wait_for_samples(self, count: int, timeout: float | None = None) -> bool:
        """Block until at least ``count`` samples exist; False on timeout."""
        return self.sampler.wait_for_samples(count, timeout)

    def peak(self, field: str) -> int:
        """The largest value of one ``Sample`` field so far (``"depth"``, ``"in_flight"``...)."""
        return self.sampler.peak(field)

    # -- drawing ------------------------------------------------------------------------

    def render(self) -> bytes:
        """The plot of the samples so far, as PNG bytes."""
        return self.live.render()

    def _draw(self) -> None:
        """Move the lines to the samples so far (called by the LiveFigure, under its lock)."""
        samples = self.sampler.snapshot()
        at = [s.at for s in samples]
        series = {name: [getattr(s, name) for s in samples] for name in self._lines}
        levels, totals = self._figure.axes
        for name, line in self._lines.items():
            line.set_data(at, series[name])
        marks = retry_marks(samples)
        self._retry_marks.set_data([m[0] for m in marks], [m[1] for m in marks])
        if self._in_flight_fill is not None:
            self._in_flight_fill.remove()
        self._in_flight_fill = self._strip.fill_between(
            at, series["in_flight"], step="post", color="tab:orange", alpha=0.35, lw=0
        )
        # Limits set by hand: every sample inside, zero at the bottom, room above the top.
        right = max(at[-1] if at else 0.0, self.live.interval)
        ceiling = max([self.workers or 0, *series["in_flight"]])
        for axes, top in [
            (levels, max([0, *series["depth"]])),
            (totals, max([0, *series["adds"], *series["retries"]])),
            (self._strip, ceiling),
        ]:
            axes.set_xlim(0, right)
            axes.set_ylim(0, max(top, 1) * (1.35 if axes is self._strip else 1.08))
        last = samples[-1] if samples else Sample(0.0, 0, 0, 0, 0)
        self._title.set_text(
            f"workqueue {self.queue.name!r}: depth {last.depth}, in flight {last.in_flight}, "
            f"adds {last.adds}, retries {last.retries}"
        )

    def summary(self) -> str:
        """One line saying what the plot drew: its span, the peaks, the totals at the end.

        The span and the in-flight peak depend on timing (the sampler looks every
        ``interval`` seconds); the totals are the queue's own counters at the last sample.
        """
        samples = self.sampler.snapshot()
        last = samples[-1] if samples else Sample(0.0, 0, 0, 0, 0)
        workers = f" of {self.workers} workers" if self.workers is not None else ""
        return (
            f"queue plot of {self.queue.name!r} over ≈{last.at:.1f} s: "
            f"depth up to {self.peak('depth')}, in flight up to {self.peak('in_flight')}{workers}, "
            f"{last.adds} adds, {last.retries} retries"
        )

    def _build_figure(self) -> None:
        """Axes and lines made once; _draw() only moves their data (a redraw costs ~50 ms).

        Left, the depth (keys waiting) with a red mark where a retry joined the line; under it,
        a strip of its own for the items in flight, scaled to the workers, so that a handful of
        busy workers stays visible beside a queue 150 deep (on one axis they would be a line
        along the bottom, hidden under the workers' ceiling). Right, the totals so far. Sizes
        as chapter 08's pictures (:mod:`helpers.program_plots`): 9 inches at 100 dpi, text of
        9 points (12.5 pixels) and more; each legend sits above its axes, where no line runs.
        """
        figure = Figure(figsize=(9, 4.4), dpi=DPI)
        FigureCanvasAgg(figure)
        levels, totals = figure.subplots(1, 2)
        levels.set_position((0.08, 0.45, 0.39, 0.35))
        totals.set_position((0.59, 0.13, 0.39, 0.67))
        # A child axes: drawn with `levels`, but not one of figure.axes (two panels, as before).
        strip = levels.inset_axes((0.08, 0.13, 0.39, 0.2), transform=figure.transFigure)
        self._lines = {
            "depth": levels.step([], [], where="post", label="depth: keys waiting")[0],
            "in_flight": strip.step([], [], where="post", color="tab:orange", lw=2)[0],
            "adds": totals.plot([], [], label="adds")[0],
            "retries": totals.plot([], [], color="tab:red", label="retries")[0],
        }
        self._retry_marks = levels.plot(
            [], [], "v", color="tab:red", ms=6, ls="none", label="a retry joins the line"
        )[0]
        self._in_flight_fill = None
        strip_title = "in flight"
        if self.workers is not None:
            strip.axhline(self.workers, color="grey", linestyle="--", lw=1, zorder=1)
            strip.set_yticks(sorted({0, self.workers}))
            strip_title = f"in flight (dashed: {self.workers} workers, the most there can be)"
        strip.set_title(strip_title, fontsize=TEXT, loc="left")
        levels.tick_params(labelbottom=False)
        levels.set_ylabel("keys now", fontsize=TEXT)
        strip.set_xlabel("seconds", fontsize=TEXT)
        totals.set_xlabel("seconds", fontsize=TEXT)
        totals.set_ylabel("keys so far", fontsize=TEXT)
        for axes in (levels, strip, totals):
            axes.tick_params(labelsize=TEXT)
        # Above the axes, outside the data: a line can never run through a legend there.
        for axes in (levels, totals):
            axes.legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncol=2, fontsize=TEXT,
                        frameon=False, borderaxespad=0, handlelength=1.5)  # fmt: skip
        self._strip = strip
        self._title = figure.suptitle("", fontsize=TEXT + 2)
        self._figure = figure


def retry_marks(samples: list[Sample]) -> list[tuple[float, int]]:
    """Where a retry joined the line: (time, depth) of each sample that counted one or more."""
    pairs = itertools.pairwise(samples)
    return [(now.at, now.depth) for was, now in pairs if now.retries > was.retries]


def in_jupyter_kernel() -> bool:
    """True inside a Jupyter kernel (where widgets can render), False in plain Python."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None
