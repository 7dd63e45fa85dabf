"""The reconcile loop as a picture: a recorder's syncs, writes and informer events, drawn live.

No client-go counterpart: chapter 05 and 06's picture, written by hand. It draws
what a :class:`helpers.timeline.TimelineRecorder` recorded.
:class:`ReconcileTimeline` (a :class:`helpers.widgets.LiveFigure`) has a lane
per worker with one bar per sync, coloured by outcome, the writes as ticks on
it, a lane of informer events above with a thin line from each event to the
sync that took its key next (:func:`helpers.timeline.caused`), and the queue
below: keys ready, keys in a worker's hands, and keys waiting out a retry delay
(which the depth does not count). While live it shows what happened since it
started; stopped, it leaves a static PNG of the span it was frozen on and, in
Jupyter, prints one line saying what that PNG shows (:class:`Drawn`), which a
stored notebook keeps as text.

Drawing happens in the widget's own thread, several times a second, and holds
the interpreter lock while it draws.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from helpers.controller import FooController
from helpers.errors import CourseError
from helpers.timeline import (
    FAILED,
    RUNNING,
    SKIPPED,
    STATUS_WRITE,
    SYNCED,
    InformerEvent,
    QueueLevel,
    Sync,
    TimelineRecorder,
    caused,
    counts,
    table,
)
from helpers.widgets import LiveFigure

DPI = 100
FONT = 10
"""Points: 14 pixels at 100 dpi, readable at 100% zoom (chapter 08's plots are the model)."""

COLOURS = {SYNCED: "#2ca02c", FAILED: "#d62728", SKIPPED: "#b0b0b0", RUNNING: "#9ecae1"}
WRITE_COLOURS = {
    "create Deployment": "#1f77b4",
    "update Deployment": "#ff7f0e",
    STATUS_WRITE: "#9467bd",
    "Event": "#7f7f7f",
}
EVENT_MARKERS = {"add": "^", "update": "o", "delete": "v", "resync": "."}
KIND_COLOURS = {"Foo": "#9467bd", "Deployment": "#1f77b4"}
EVENT_LANE = "informer events"
MAX_WAITS = 12
"""More retry waits than this in view are left to the queue strip (they would overlap)."""
QUEUE_LINES = {
    "ready": ("ready (depth)", "#1f77b4"),
    "in_flight": ("being synced", "#ff7f0e"),
    "waiting": ("in a retry delay", "#d62728"),
}


def write_colour(verb: str) -> str:
    """Writes of one kind share a colour; every Event is grey, a failed write is red."""
    return WRITE_COLOURS.get(verb, WRITE_COLOURS["Event"])


def worker_order(name: str) -> tuple[int, str]:
    """foo-worker-2 before foo-worker-10: by the number at the end, then by name."""
    head, _, tail = name.rpartition("-")
    return (int(tail), head) if tail.isdigit() else (1_000_000, name)


@dataclass(frozen=True)
class Note:
    """A sentence pinned to one sync's bar in the picture."""

    sync: Sync
    text: str


def lane_rows(shown: Sequence[Sync], workers: Sequence[str]) -> dict[str, int]:
    """Each worker's lane, top to bottom (the informer events' lane is one above the first)."""
    lanes = sorted({*workers, *(s.worker for s in shown)}, key=worker_order)
    return {worker: len(lanes) - i for i, worker in enumerate(lanes)}


def draw_lanes(
    axes: Axes,
    syncs: list[Sync],
    events: list[InformerEvent],
    *,
    left: float,
    right: float,
    now: float,
    workers: list[str],
    notes: Sequence[Note] = (),
    highlight: str | None = None,
) -> list[Artist]:
    """Worker lanes of sync bars with their write ticks, and a lane of informer events on top.

    Adds its artists to ``axes`` and returns them; the caller removes them before the next
    frame (cheaper than clearing the axes, whose ticks would be made again every time).
    """
    shown = [s for s in syncs if s.end(now) >= left and s.started <= right]
    row = lane_rows(shown, workers)
    top = len(row) + 1
    names = [EVENT_LANE, *row]
    if [label.get_text() for label in axes.get_yticklabels()] != names:
        axes.set_yticks([top, *row.values()], names, fontsize=FONT)
    axes.set_ylim(-0.5 if notes else 0.4, top + 0.7)  # notes go under the lowest lane
    axes.set_xlim(left, right)
    per_second = axes.bbox.width / max(right - left, 1e-9)  # pixels per second
    thinnest = 2 / per_second  # a sync of a millisecond is still 2 pixels wide
    bars, bar_colours, edges, waits, ticks, colours, labels = [], [], [], [], [], [], []
    for s in shown:
        y: float = row[s.worker]
        end = s.end(now)
        width = max(end - s.started, thinnest)
        bars.append([(s.started, y - 0.3), (s.started + width, y - 0.3),
                     (s.started + width, y + 0.3), (s.started, y + 0.3)])  # fmt: skip
        bar_colours.append(COLOURS[s.outcome])
        edges.append("black" if s.key.rpartition("/")[2] == highlight else "white")
        if s.requeue_after is not None and s.requeued_at is not None:  # the wait for the retry
            due = s.requeued_at + max(s.requeue_after, 3 * thinnest)  # 5 ms is still 6 pixels
            waits.append([(s.requeued_at, y - 0.4), (due, y - 0.4)])
        for w in s.writes:
            ticks.append([(w.at, y + 0.3), (w.at, y + 0.55)])
            colours.append(COLOURS[FAILED] if w.error else write_colour(w.verb))
        label = s.key.rpartition("/")[2]
        if width * per_second > 8 * len(label) + 6:
            labels.append(((s.started + end) / 2, y, label))
    if len(waits) > MAX_WAITS:  # they would lie on top of each other: the queue strip counts them
        waits = []
    seen_events = [e for e in events if left <= e.at <= right]
    links = [
        [(event.at, top - 0.2), (sync.started, row[sync.worker] + 0.3)]
        for event, sync in caused(seen_events, shown)
    ]
    added: list[Artist] = [
        axes.add_collection(LineCollection(links[-300:], colors="#bbbbbb", linewidths=0.7)),
        axes.add_collection(PolyCollection(bars, facecolors=bar_colours, edgecolors=edges,
                                           linewidths=[1.5 if e == "black" else 0.5
                                                       for e in edges])),
        axes.add_collection(LineCollection(waits, colors=COLOURS[FAILED], linewidths=1.2,
                                           linestyles=":")),
        axes.add_collection(LineCollection(ticks, colors=colours, linewidths=2)),
    ]  # fmt: skip
    for x, y, label in labels[-20:]:  # the most recent, if there are very many
        added.append(axes.text(x, y, label, ha="center", va="center", fontsize=FONT - 1,
                               color="white", clip_on=True))  # fmt: skip
    for event_type, marker in EVENT_MARKERS.items():
        for kind, colour in KIND_COLOURS.items():
            at = [e.at for e in seen_events if e.type == event_type and e.kind == kind]
            if at:
                y = top + (0.2 if kind == "Foo" else -0.05)
                added.append(axes.scatter(at, [y] * len(at), marker=marker, s=45, color=colour,
                                          zorder=3, clip_on=False))  # fmt: skip
    for n, note in enumerate(notes):
        if note.sync.worker in row and left <= note.sync.started <= right:
            y = row[note.sync.worker]
            added.append(axes.annotate(
                note.text, xy=(note.sync.started, y - 0.3), xytext=(left + (right - left) * 0.01,
                -0.1 - 0.3 * n), fontsize=FONT - 1, va="center",
                bbox={"boxstyle": "round", "fc": "white", "ec": "#888888"},
                arrowprops={"arrowstyle": "->", "color": "#555555"}, zorder=5,
            ))  # fmt: skip
    return added


def annotate_marks(
    axes: Axes,
    syncs: list[Sync],
    events: list[InformerEvent],
    *,
    left: float,
    right: float,
    now: float,
    workers: list[str],
) -> list[Artist]:
    """Name each kind of mark once, with an arrow to one of them: an informer event and the
    line to the sync it woke, a sync's bar and its writes, a failed sync's wait for its retry.
    The names stand in the margin right of the lanes; a mark not in view gets no name."""
    shown = [s for s in syncs if s.end(now) >= left and s.started <= right]
    row = lane_rows(shown, workers)
    top = len(row) + 1
    seen = [e for e in events if left <= e.at <= right]
    event = next((e for e in seen if e.type == "add"), seen[0] if seen else None)
    done = next((s for s in shown if s.outcome == SYNCED and s.ended is not None), None)
    failed = next((s for s in shown if s.requeue_after is not None and s.requeued_at), None)
    callouts = []
    if event is not None:
        y = top + (0.2 if event.kind == "Foo" else -0.05)
        callouts.append(((event.at, y), f"an informer event, here\n{event.kind} {event.type}"
                                        "\n(▲ add, ● update, ▼ delete)"))  # fmt: skip
        woke = dict(caused([event], shown)).get(event)
        if woke is not None:
            middle = ((event.at + woke.started) / 2, (top - 0.2 + row[woke.worker] + 0.3) / 2)
            callouts.append((middle, "grey: the sync that\ntook the event's key"))
    if done is not None:
        end = done.end(now)
        mark = (end, row[done.worker] + 0.3)
        callouts.append((mark, "a sync, start to end\n(green: it wrote, red:\nit failed, "
                               "grey: no-op);\nticks: its writes"))  # fmt: skip
    if failed is not None:
        assert failed.requeue_after is not None and failed.requeued_at is not None
        at = failed.requeued_at + failed.requeue_after / 2
        delay = f"{failed.requeue_after * 1000:.0f} ms"
        waits = f"red dots: it waits\n{delay}, then its key\nis queued again"
        callouts.append(((at, row[failed.worker] - 0.4), waits))
    added: list[Artist] = []
    line = (FONT - 1) * 1.25 * DPI / 72 / axes.bbox.height  # one line of text, in axes heights
    height = 1.04
    for xy, text in callouts:  # stacked down the margin, in the order of the list
        added.append(axes.annotate(
            text, xy=xy, xytext=(1.03, height), textcoords="axes fraction", ha="left",
            va="top", fontsize=FONT - 1, annotation_clip=False,
            arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 0.8,
                        "connectionstyle": "arc3,rad=0.1", "shrinkA": 2, "shrinkB": 3},
            zorder=6,
        ))  # fmt: skip
        height -= line * (text.count("\n") + 1.6)
    return added


def style_lanes(axes: Axes) -> None:
    """What stays the same from frame to frame."""
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    axes.tick_params(axis="y", length=0)
    axes.tick_params(axis="x", labelbottom=False)
    axes.grid(axis="x", color="#eeeeee", lw=0.6)


def new_queue_strip(axes: Axes) -> dict[str, Line2D]:
    """The queue strip under the lanes: a step line per count, moved by :func:`draw_queue`."""
    lines = {
        name: axes.step([], [], where="post", color=colour, lw=1.5, label=label)[0]
        for name, (label, colour) in QUEUE_LINES.items()
    }
    axes.set_xlabel("seconds since the recorder started", fontsize=FONT)
    axes.set_ylabel("keys", fontsize=FONT)
    axes.tick_params(labelsize=FONT - 1)
    axes.yaxis.set_major_locator(MaxNLocator(nbins=3, integer=True))
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.05), fontsize=FONT - 1, frameon=False,
                handlelength=1.2)  # fmt: skip
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    return lines


def draw_queue(
    axes: Axes, lines: dict[str, Line2D], levels: list[QueueLevel], *, left: float, right: float
) -> None:
    """Move the queue's lines to the levels inside the window (the last one before it too)."""
    before = [q for q in levels if q.at < left][-1:]
    inside = [*(replace(q, at=left) for q in before), *(q for q in levels if left <= q.at <= right)]
    at = [s.at for s in inside]
    for name, line in lines.items():
        line.set_data(at, [getattr(s, name) for s in inside])
    highest = max([1, *(getattr(s, name) for s in inside for name in lines)])
    axes.set_ylim(0, highest * 1.2)


def legend_handles() -> list[Line2D]:
    """What the colours and marks mean, for the legend under the picture."""
    bars = [Line2D([], [], color=c, lw=7, label=f"sync {o}") for o, c in COLOURS.items()]
    ticks = [Line2D([], [], color=c, lw=2, label=v) for v, c in WRITE_COLOURS.items()]
    failed = [
        Line2D([], [], color=COLOURS[FAILED], lw=2, label="write failed"),
        Line2D([], [], color=COLOURS[FAILED], lw=1.2, ls=":", label="wait before retry"),
    ]
    marks = [
        Line2D([], [], marker=m, ls="", color="#555555", label=f"event: {t}")
        for t, m in EVENT_MARKERS.items()
        if t != "resync"
    ]
    kinds = [Line2D([], [], marker="s", ls="", color=c, label=k) for k, c in KIND_COLOURS.items()]
    link = [Line2D([], [], color="#bbbbbb", lw=1, label="event → the sync it queued")]
    return [*bars, *ticks, *failed, *marks, *kinds, *link]


def place_legend(figure: Figure, bottom: float, height: float) -> None:
    """The legend, drawn once into a picture of its own and pasted across the figure between
    ``bottom`` and ``bottom + height`` (fractions of its height): it never changes, and drawing
    its text again for every frame would cost more than the lanes."""
    size = (figure.get_figwidth(), figure.get_figheight() * height)
    legend = Figure(figsize=size, dpi=figure.dpi)
    legend.patch.set_alpha(0)
    canvas = FigureCanvasAgg(legend)
    legend.legend(handles=legend_handles(), loc="center", ncol=4, fontsize=FONT - 1,
                  frameon=False, columnspacing=1.0, handlelength=1.4)  # fmt: skip
    canvas.draw()
    figure.figimage(np.asarray(canvas.buffer_rgba()), xo=0, yo=int(bottom * figure.bbox.height))


@dataclass(frozen=True)
class Drawn:
    """What a picture showed in its last frame: the line printed under it."""

    lanes: int
    synced: int
    failed: int
    skipped: int
    running: int
    events: int
    span: float  # seconds

    @property
    def syncs(self) -> int:
        return self.synced + self.failed + self.skipped + self.running

    def __str__(self) -> str:
        running = f", {self.running} running" if self.running else ""
        return (
            f"drawn: {_plural(self.lanes, 'worker lane')}, {_plural(self.syncs, 'sync')} "
            f"({self.synced} synced, {self.failed} failed, {self.skipped} skipped{running}), "
            f"{_plural(self.events, 'informer event')}, over ≈{self.span:.1f} s"
        )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


class ReconcileTimeline:
    """A recorder's timeline, redrawn while the controller works, then left as a static PNG.

    A :class:`helpers.widgets.LiveFigure` named ``reconcile-timeline``: in
    Jupyter it redraws every ``refresh`` seconds while cells run, and samples
    the controller's queue every ``interval`` seconds. While live it shows what
    happened since it started (the cell's own experiment), or only the last
    ``window`` seconds of that; ``highlight`` (a Foo's name) outlines that
    Foo's bars in black; :meth:`freeze` or :meth:`freeze_on` fix what the
    final picture shows. ``annotate`` names each kind of mark once, in the
    margin (the chapter's first picture). ``caption`` is the fixed
    ``text/plain`` of the widget and the final image; ``last`` syncs are
    listed under the picture (default: none; the cells print what matters).
    Stopped in Jupyter, it prints one line saying what it drew (:class:`Drawn`:
    lanes, syncs by outcome, informer events, the span), which a stored
    notebook keeps as text; ``drawn`` holds the same numbers.
    """

    def __init__(
        self,
        recorder: TimelineRecorder,
        *,
        caption: str,
        title: str = "",
        window: float | None = None,
        highlight: str | None = None,
        last: int = 0,
        interval: float = 0.1,
        refresh: float = 0.4,
        show: bool | None = None,
        annotate: bool = False,
    ) -> None:
        if recorder.controller is None:
            raise CourseError(
                "This recorder observes no controller, so there is no queue to draw.",
                "attach it first: TimelineRecorder(controller).",
            )
        self.recorder = recorder
        self.title_text = title
        self.window = window
        self.highlight = highlight
        self.last = last
        self.annotate = annotate
        self.notes: list[Note] = []
        self.frames = 0
        self.drawn: Drawn | None = None  # what the last frame showed
        self._opened = recorder.now()  # start() sets it again: live frames show from then on
        self._said = False
        self._span: tuple[float, float] | None = None  # fixed by freeze()
        self._last_start: float | None = None  # fixed by freeze_on(): show no sync begun later
        self._busy = 0.0  # seconds spent drawing
        self._frame_times: list[float] = []
        # Laid out in inches, top to bottom: title, lanes, queue strip, its axis label, legend,
        # and the table if asked for; 8.2 inches at 100 dpi are 820 pixels.
        parts = {"title": 0.45, "lanes": 2.4, "gap": 0.15, "queue": 0.8, "label": 0.45,
                 "legend": 0.95, "table": 0.2 * (last + 1) + 0.1 if last else 0.05}  # fmt: skip
        height = sum(parts.values())
        self.figure = Figure(figsize=(8.2, height), dpi=DPI)
        FigureCanvasAgg(self.figure)

        def band(name: str) -> tuple[float, float]:
            """A part's bottom and height, as fractions of the figure's height."""
            names = list(parts)
            top = height - sum(parts[n] for n in names[: names.index(name)])
            return (top - parts[name]) / height, parts[name] / height

        left, width = 0.16, 0.57 if annotate else 0.62  # annotations: a wider right margin
        self.lanes = self.figure.add_axes((left, band("lanes")[0], width, band("lanes")[1]))
        self.queue = self.figure.add_axes((left, band("queue")[0], width, band("queue")[1]),
                                          sharex=self.lanes)  # fmt: skip
        style_lanes(self.lanes)
        self.queue_lines = new_queue_strip(self.queue)
        place_legend(self.figure, *band("legend"))
        self.title = self.figure.suptitle("", x=0.02, y=1 - 0.12 / height, ha="left",
                                          va="top", fontsize=FONT + 1)  # fmt: skip
        self.table = None
        if last:
            bottom, _ = band("table")
            self.table = self.figure.text(0.03, bottom + parts["table"] / height, "", va="top",
                                          family="monospace", fontsize=FONT - 2)  # fmt: skip
        self._artists: list[Artist] = []
        self.live = LiveFigure(self.figure, self._draw, name="reconcile-timeline", caption=caption,
                               tick=recorder.sample_queue, interval=interval, refresh=refresh,
                               show=show)  # fmt: skip

    @property
    def png(self) -> bytes | None:
        return self.live.png

    def follow(self, controller: FooController) -> None:
        """Carry on with another controller (a restarted one): record and sample it instead."""
        self.recorder.attach(controller)

    def freeze(self, since: float = 0.0, until: float | None = None) -> None:
        """The final picture shows from ``since`` to ``until`` (default: now)."""
        self._span = (since, self.recorder.now() if until is None else until)
        self._last_start = None

    def freeze_on(self, syncs: Sequence[Sync], *, margin: float = 0.08) -> None:
        """The final picture shows exactly these syncs, which must have ended (and whatever else
        overlaps their span), with ``margin`` of their span on either side."""
        if not syncs or any(s.ended is None for s in syncs):
            raise ValueError("freeze_on needs syncs that have all ended")
        first = min(s.started for s in syncs)
        last = max(s.end(0.0) for s in syncs)
        pad = max((last - first) * margin, 0.005)
        self._span = (first - pad, last + pad)
        self._last_start = max(s.started for s in syncs)  # a sync begun later is not theirs

    def note(self, sync: Sync, text: str) -> None:
        """Pin ``text`` to ``sync``'s bar (a sentence in the picture, with an arrow)."""
        self.notes.append(Note(sync, text))

    def redraws_per_second(self) -> float:
        """Frames drawn per second, from the first frame to the last so far."""
        times = self._frame_times
        return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0

    def milliseconds_per_frame(self) -> float:
        """How long bringing the figure up to date took, on average (not counting the PNG)."""
        return 1000 * self._busy / max(self.frames, 1)

    def start(self) -> ReconcileTimeline:
        self._opened = self.recorder.now()
        self.recorder.sample_queue()
        self.live.start()
        return self

    def stop(self) -> bytes:
        """Leave the final picture; in Jupyter, print what it drew (once)."""
        png = self.live.stop()
        if self.live.show and not self._said and self.drawn is not None:
            self._said = True
            print(self.drawn)
        return png

    def __enter__(self) -> ReconcileTimeline:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _draw(self) -> None:
        started = time.perf_counter()
        now = self.recorder.now()
        if self._span is not None:
            left, right = self._span
        else:  # live: the cell's own experiment, from when the picture started
            right = max(now, self._opened + 0.5)
            left = max(self._opened, right - self.window) if self.window else self._opened
        syncs, events = self.recorder.syncs(), self.recorder.events()
        if self._last_start is not None:
            syncs = [s for s in syncs if s.started <= self._last_start]
        controller = self.recorder.controller
        workers = [t.name for t in controller.worker_threads] if controller is not None else []
        for artist in self._artists:
            artist.remove()
        self._artists = draw_lanes(self.lanes, syncs, events, left=left, right=right, now=now,
                                   workers=workers, notes=self.notes,
                                   highlight=self.highlight)  # fmt: skip
        if self.annotate:
            self._artists += annotate_marks(self.lanes, syncs, events, left=left, right=right,
                                            now=now, workers=workers)  # fmt: skip
        draw_queue(self.queue, self.queue_lines, self.recorder.levels(), left=left, right=right)
        shown = [s for s in syncs if s.started <= right and s.end(now) >= left]
        found = counts(shown)
        lanes = len(lane_rows(shown, workers))
        seen = sum(1 for e in events if left <= e.at <= right)
        self.drawn = Drawn(lanes, found[SYNCED], found[FAILED], found[SKIPPED], found[RUNNING],
                           seen, right - left)  # fmt: skip
        parts = [f"{found[SYNCED]} synced", f"{found[FAILED]} failed"]
        parts += [f"{found[o]} {o}" for o in (SKIPPED, RUNNING) if found[o]]
        head = f"{self.title_text}: " if self.title_text else ""
        self.title.set_text(f"{head}{len(shown)} syncs ({', '.join(parts)})")
        if self.table is not None:
            self.table.set_text(table(shown, self.last, names_only=True, width=112))
        self.frames += 1
        self._frame_times.append(time.perf_counter())
        self._busy += time.perf_counter() - started
