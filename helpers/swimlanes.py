"""Draw a recorded chain of changes as a sequence diagram with one swimlane per actor.

No client-go counterpart: chapter 07's picture, written by hand. Time runs left
to right; each actor (you, the controllers, the scheduler, the kubelet) has a
lane, and the API server a lane of its own at the top, because every change is
a write to it. A numbered circle is a change (its step, see
:data:`helpers.attribution.STEPS`) on its actor's lane, with a line up to the API
server: the write. A dashed arrow from the API server down to the next actor is
a watch delivering that write to whoever acts on it next: the actors never talk
to each other, only through the API server. Step 4 (no kubelet sees a Pod not
bound to its node) is an absence, drawn as an empty circle.

Changes of one step on one lane that fall within a few pixels of each other
(three Pods created at once) are one circle, marked with how many ("x3"); other
circles that would cover each other move up or down. When ``roles`` name the
ReplicaSets of a rollout, the old one's changes (and its Pods') are squares and
the new one's circles.

:class:`Lanes` draws on any matplotlib ``Axes``; :class:`LiveSwimlanes` redraws a
:class:`helpers.chain.ChainRecorder`'s changes while they happen (a
:class:`helpers.widgets.LiveFigure`), then, in Jupyter, replays them at a pace
a person can follow (the chain itself is over in a second), and leaves a static
PNG behind.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from helpers.attribution import Change, from_write, pod_counts, replicas_asked
from helpers.chain import ChainRecorder
from helpers.widgets import LiveFigure

API_LANE = "API server (etcd)"
DPI = 100
FONT = 10
"""Points: 14 pixels at 100 dpi, readable at 100% zoom (chapter 08's plots are the model)."""

LANES = [
    "you",
    "sample-controller",
    "deployment-controller",
    "replicaset-controller",
    "scheduler",
    "kubelet",
    "kubelet (kwok)",
    "API server",
]
"""Every lane in its order, top to bottom under the API server's; unused ones are left out."""

CAUSES = {
    1: (0, 8),
    2: (1, 7),
    3: (2, 9),
    4: (3,),
    5: (3,),
    6: (5,),
    7: (6, 3, 9),
    8: (7,),
    10: (8,),
}
"""For each step, the steps whose write it reacts to (the dashed arrows)."""

SAME_POD = {4, 5, 6}
"""Steps that react to a write on the same Pod."""

LIVE_NUMBERS = 12
"""Circles numbered in a live frame: the newest (text is the dearest thing to draw)."""
REFRESH = 0.4
"""Seconds between live frames: drawing holds the interpreter lock, which the informers need."""
MERGE_PIXELS = 12
"""Changes of one step on one lane closer than this are one circle."""
CIRCLE_PIXELS = 20
"""Circles closer than this would cover each other: the later one moves up or down."""
LEVEL = 0.36
"""How far (in lanes) a circle moves up or down to clear another."""
MARKERS = {"new": "o", "old": "s"}
LEGEND = {
    0: "you create or change a Foo",
    1: "a Deployment is written",
    2: "a ReplicaSet is created or scaled",
    3: "Pods are created or deleted",
    4: "no kubelet sees an unbound Pod",
    5: "the scheduler binds a Pod",
    6: "a kubelet reports a Pod's status",
    7: "a ReplicaSet's status is written",
    8: "a Deployment's status is written",
    9: "a Pod goes: its kubelet confirms",
    10: "the Foo's status is copied",
}
"""Each step in a few words (:data:`helpers.attribution.STEPS` in full); the lane names who."""


def step_colour(step: int | None) -> str:
    palette = ["#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#bcbd22", "#d62728", "#9467bd",
               "#8c564b", "#e377c2", "#17becf", "#393b79"]  # fmt: skip
    return palette[step] if step is not None and 0 <= step < len(palette) else "#000000"


def lanes_for(changes: Sequence[Change], always: Sequence[str] = ()) -> list[str]:
    """The actor lanes, top to bottom, for ``changes`` (plus ``always``), API server's first."""
    used = {change.actor for change in changes if change.actor} | set(always)
    known = [lane for lane in LANES if lane in used]
    others = sorted(used - set(LANES))
    return [API_LANE, *known, *others]


def cause_of(change: Change, earlier: Sequence[Change]) -> Change | None:
    """The latest earlier change this one reacts to (see ``CAUSES``)."""
    steps = CAUSES.get(change.step or -1, ())
    for candidate in reversed(earlier):
        if candidate.step in steps and (
            change.step not in SAME_POD or candidate.name == change.name
        ):
            return candidate
    return None


def role_of(change: Change, roles: Mapping[str, str]) -> str | None:
    """ "old" or "new" for a change of a ReplicaSet named in ``roles`` or of one of its Pods."""
    for name, role in roles.items():
        if change.name == name or change.name.startswith(f"{name}-"):
            return role
    return None


@dataclass
class Circle:
    """Changes of one step, on one lane, at (nearly) one time: drawn as one mark."""

    changes: list[Change] = field(default_factory=list)
    x: float = 0.0
    y: float = 0.0

    @property
    def step(self) -> int | None:
        return self.changes[0].step


def circles(
    changes: Sequence[Change], row: Mapping[str, float], per_second: float,
    roles: Mapping[str, str],
) -> list[Circle]:  # fmt: skip
    """Group ``changes`` into circles and place them so that none covers another."""
    placed: list[Circle] = []
    last_x: dict[tuple[str, int], float] = {}  # (lane, level) -> x of its latest circle
    for change in changes:
        lane = change.actor or ""
        role = role_of(change, roles)
        previous = next((c for c in reversed(placed) if c.changes[0].actor == lane), None)
        if (
            previous is not None
            and previous.step == change.step
            and role_of(previous.changes[0], roles) == role
            and (change.at - previous.changes[-1].at) * per_second < MERGE_PIXELS
        ):
            previous.changes.append(change)
            continue
        free = [n for n in (0, 1, -1) if (change.at - last_x.get((lane, n), -1e9)) * per_second
                >= CIRCLE_PIXELS]  # fmt: skip
        level = free[0] if free else min((0, 1, -1), key=lambda n: last_x.get((lane, n), -1e9))
        last_x[lane, level] = change.at
        placed.append(Circle([change], change.at, row.get(lane, 0) + LEVEL * level))
    return placed


class Lanes:
    """The swimlanes on one ``Axes``, brought up to date by :meth:`draw` frame after frame.

    Each frame removes the marks of the last one and adds new ones, a few collections in all
    (cheaper than clearing the axes, whose ticks would be made again every time); the lanes'
    labels and the legend are made again only when they change. Drawing holds the interpreter
    lock, which the recorder's informers need while a cell runs.
    """

    def __init__(self, axes: Axes, legend: Axes | None = None) -> None:
        self.axes = axes
        self.legend = legend
        self._lanes: list[str] = []
        self._legend_key: tuple[object, ...] | None = None
        self._marks: list[Artist] = []
        self._legend_image: Artist | None = None
        for side in ("top", "right", "left"):
            axes.spines[side].set_visible(False)
        axes.tick_params(axis="y", length=0)
        axes.tick_params(axis="x", labelsize=FONT - 1)
        axes.set_xlabel("seconds since the recorder started", fontsize=FONT)
        self._title = axes.set_title("", loc="left", fontsize=FONT + 1)

    def draw(
        self,
        changes: Sequence[Change],
        *,
        title: str = "",
        lanes: Sequence[str] | None = None,
        span: tuple[float, float] | None = None,
        roles: Mapping[str, str] | None = None,
        numbers: int | None = None,
    ) -> None:
        """Draw ``changes`` (attributed, in time order). ``span`` fixes the time axis (a replay
        grows into it); ``numbers`` writes the step into only the last that many circles (live
        frames: text is the dearest thing to draw); None, into all of them."""
        axes = self.axes
        for mark in self._marks:
            mark.remove()
        self._marks = []
        roles = dict(roles or {})
        shown = [c for c in changes if c.actor is not None]
        lanes = list(lanes) if lanes is not None else lanes_for(shown)
        row = {lane: float(len(lanes) - 1 - i) for i, lane in enumerate(lanes)}
        top = row[API_LANE]
        if lanes != self._lanes:
            self._lanes = lanes
            axes.set_yticks(list(row.values()), list(row), fontsize=FONT)
            axes.set_ylim(-0.8, top + 0.6)
            axes.grid(axis="y", color="#dddddd", lw=1, zorder=0)
        if span is None:
            end = max([c.at for c in shown] + [0.05])
            start = min([c.at for c in shown] + [end])
            pad = (end - start) * 0.04 + 0.005
            span = (start - pad, end + pad)
        axes.set_xlim(*span)
        self._title.set_text(title)
        per_second = axes.bbox.width / max(span[1] - span[0], 1e-9)
        placed = circles(shown, row, per_second, roles)
        where = {id(change): circle for circle in placed for change in circle.changes}
        index = {id(change): i for i, change in enumerate(shown)}
        watches, watch_colours, writes, write_colours = [], [], [], []
        heads: list[tuple[float, float, str]] = []
        filled: dict[str, list[tuple[float, float, str]]] = {}
        empty: dict[str, list[tuple[float, float, str]]] = {}
        for circle in placed:
            first = circle.changes[0]
            colour = step_colour(circle.step)
            cause = cause_of(first, shown[: index[id(first)]])
            if cause is not None:  # a watch brought the cause's write to this actor
                watches.append([(where[id(cause)].x, top), (circle.x, circle.y + 0.2)])
                watch_colours.append(colour)
                heads.append((circle.x, circle.y + 0.2, colour))
            marker = MARKERS.get(role_of(first, roles) or "new", "o")
            if circle.step == 4:  # an absence: nothing was written
                empty.setdefault(marker, []).append((circle.x, circle.y, colour))
            else:
                writes.append([(circle.x, circle.y), (circle.x, top)])
                write_colours.append(colour)
                filled.setdefault(marker, []).append((circle.x, circle.y, colour))
        self._marks += [
            axes.add_collection(LineCollection(watches, colors=watch_colours, linewidths=0.8,
                                               linestyles="--", alpha=0.5, zorder=1)),
            axes.add_collection(LineCollection(writes, colors=write_colours, linewidths=0.8,
                                               alpha=0.5, zorder=1)),
        ]  # fmt: skip
        if heads:  # the arrowheads of the watches, and the writes' dots on the API server's lane
            xs, ys, colours = zip(*heads, strict=True)
            self._marks.append(axes.scatter(xs, ys, marker="v", s=22, c=colours, zorder=2))
        if writes:
            at = [line[0][0] for line in writes]
            self._marks.append(axes.scatter(at, [top] * len(at), s=14, c=write_colours, zorder=2))
        for marker, points in filled.items():
            xs, ys, colours = zip(*points, strict=True)
            self._marks.append(axes.scatter(xs, ys, s=190, c=colours, marker=marker, zorder=3))
        for marker, points in empty.items():
            xs, ys, colours = zip(*points, strict=True)
            self._marks.append(axes.scatter(xs, ys, s=190, facecolors="white", edgecolors=colours,
                                            linestyle="--", marker=marker, zorder=3))  # fmt: skip
        labelled = placed if numbers is None else placed[-numbers:] if numbers else []
        for circle in labelled:
            self._marks.append(axes.text(
                circle.x, circle.y, "" if circle.step is None else str(circle.step),
                ha="center", va="center", fontsize=FONT - 1, fontweight="bold", zorder=4,
                color="black" if circle.step == 4 else "white",
            ))  # fmt: skip
            if len(circle.changes) > 1:
                self._marks.append(axes.annotate(
                    f"x{len(circle.changes)}", (circle.x, circle.y), xytext=(8, 6),
                    textcoords="offset points", fontsize=FONT - 1, zorder=4,
                ))  # fmt: skip
        legend_key = (tuple(sorted({c.step for c in shown if c.step is not None})),
                      tuple(sorted(roles.items())))  # fmt: skip
        if self.legend is not None and legend_key != self._legend_key:
            self._legend_key = legend_key
            if self._legend_image is not None:
                self._legend_image.remove()
            self._legend_image = draw_legend(self.legend, legend_key[0], roles)


def draw_legend(axes: Axes, steps: Sequence[int], roles: Mapping[str, str]) -> Artist | None:
    """The steps drawn (and the ReplicaSets' marks), in two columns, drawn once into a picture
    of its own and pasted where ``axes`` is: drawing its text again for every frame would cost
    more than the lanes. Returns the pasted image (None when there is nothing to explain)."""
    axes.axis("off")
    handles = [
        Line2D([], [], marker="o", ls="", markersize=9, markeredgecolor=step_colour(step),
               markerfacecolor="white" if step == 4 else step_colour(step),
               label=f"{step}  {LEGEND[step]}")
        for step in steps
    ]  # fmt: skip
    handles += [
        Line2D([], [], marker=MARKERS[role], ls="", markersize=9, color="#555555",
               label=f"{role}: {name} and its Pods")
        for name, role in sorted(roles.items(), key=lambda item: item[1], reverse=True)
    ]  # fmt: skip
    if not handles:
        return None
    figure = axes.get_figure()
    assert isinstance(figure, Figure)  # the course's axes sit on a Figure, not a SubFigure
    box = axes.get_position()  # in fractions of the figure
    width, height = figure.get_figwidth() * box.width, figure.get_figheight() * box.height
    legend = Figure(figsize=(width, height), dpi=figure.dpi)
    legend.patch.set_alpha(0)
    canvas = FigureCanvasAgg(legend)
    legend.legend(handles=handles, loc="upper left", ncol=3, fontsize=FONT - 1, frameon=False,
                  columnspacing=0.8, handletextpad=0.3, borderaxespad=0.2)  # fmt: skip
    canvas.draw()
    x, y = box.x0 * figure.bbox.width, box.y0 * figure.bbox.height
    return figure.figimage(np.asarray(canvas.buffer_rgba()), xo=int(x), yo=int(y))


def draw_counts(
    axes: Axes, changes: Sequence[Change], since: float, limits: tuple[int, int]
) -> None:
    """A rollout against its limits: what the ReplicaSets ask for, at most ``limits[0]``
    (replicas + maxSurge), and the Ready Pods, at least ``limits[1]`` (replicas -
    maxUnavailable); and the Pods that exist, which may pass the first limit for a moment.

    ``changes`` must start before the rollout (Pods made earlier count); only
    the part from ``since`` is shown, on the swimlanes' time axis.
    """
    axes.clear()
    most, fewest = limits
    asked_at, asked = replicas_asked(changes, since)
    times, existing, ready = pod_counts(changes)
    for at, values, label, colour, width in [
        (asked_at, asked, "Pods the ReplicaSets ask for", "#1f77b4", 2),
        (times, ready, "Pods Ready (not being deleted)", "#2ca02c", 2),
        (times, existing, "Pods that exist (not being deleted)", "#aaaaaa", 1),
    ]:
        axes.step(at, values, where="post", label=label, color=colour, lw=width)
    axes.axhline(most, color="#1f77b4", ls="--", lw=1, label=f"at most {most} asked for")
    axes.axhline(fewest, color="#2ca02c", ls=":", lw=1.5, label=f"at least {fewest} Ready")
    axes.set_ylim(0, most + 2.3)
    axes.set_ylabel("Pods", fontsize=FONT)
    axes.tick_params(labelsize=FONT - 1)
    axes.legend(loc="upper left", ncol=3, fontsize=FONT - 2, frameon=False,
                bbox_to_anchor=(0.0, 1.02), columnspacing=1.0)  # fmt: skip
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def new_figure(counts: bool = False, key: bool = False) -> tuple[Figure, dict[str, Axes]]:
    """A figure 840 pixels wide and at most 600 tall: the lanes, the Pod counts if asked, the
    legend of the steps, and (``key``) how to read the marks, for the first picture."""
    parts = {"title": 0.35, "lanes": 2.7, "label": 0.3 if counts else 0.45,
             "counts": 1.15 if counts else 0.0, "counts_label": 0.45 if counts else 0.0,
             "legend": 0.85, "key": 1.25 if key else 0.0}  # fmt: skip
    height = sum(parts.values())
    figure = Figure(figsize=(8.4, height), dpi=DPI)
    FigureCanvasAgg(figure)

    def band(name: str) -> tuple[float, float]:
        names = list(parts)
        top = height - sum(parts[n] for n in names[: names.index(name)])
        return (top - parts[name]) / height, parts[name] / height

    left, width = 0.2, 0.77
    axes = {"lanes": figure.add_axes((left, band("lanes")[0], width, band("lanes")[1]))}
    if counts:
        axes["counts"] = figure.add_axes((left, band("counts")[0], width, band("counts")[1]),
                                         sharex=axes["lanes"])  # fmt: skip
    axes["legend"] = figure.add_axes((0.02, band("legend")[0], 0.96, band("legend")[1]))
    if key:
        axes["key"] = figure.add_axes((0.02, band("key")[0], 0.96, band("key")[1]))
        draw_key(axes["key"])
    return figure, axes


def draw_key(axes: Axes) -> None:
    """How to read the marks, in four small drawings with a caption each: a change, its write,
    a watch, an absence. Drawn once, for the chapter's first picture; the later pictures use
    the same marks."""
    axes.set_xlim(0, 100)
    axes.set_ylim(0, 5)
    axes.axis("off")
    axes.text(0, 4.85, "How to read it:", fontsize=FONT - 1, fontweight="bold", va="center")
    green, red, olive = step_colour(3), step_colour(5), step_colour(4)
    api, lane = 4.3, 2.9

    def circle(x: float, y: float, colour: str, step: int, empty: bool = False) -> None:
        if empty:
            axes.scatter([x], [y], s=190, facecolors="white", edgecolors=colour, linestyle="--",
                         zorder=3)  # fmt: skip
        else:
            axes.scatter([x], [y], s=190, c=colour, zorder=3)
        axes.text(x, y, str(step), ha="center", va="center", fontsize=FONT - 1,
                  fontweight="bold", color="black" if empty else "white", zorder=4)  # fmt: skip

    for x0, x1 in ((3, 22), (28, 47), (53, 72), (78, 97)):
        axes.plot([x0, x1], [lane, lane], color="#dddddd", lw=1, zorder=0)
    for x0, x1 in ((28, 47), (53, 72)):
        axes.plot([x0, x1], [api, api], color="#dddddd", lw=1, zorder=0)
        axes.text(x0, api + 0.3, "API server", fontsize=FONT - 2, color="#555555", va="bottom")
    circle(12.5, lane, green, 3)
    axes.annotate("x3", (12.5, lane), xytext=(8, 6), textcoords="offset points", fontsize=FONT - 1)
    axes.plot([37.5, 37.5], [lane, api], color=green, lw=0.8, alpha=0.5, zorder=1)
    axes.scatter([37.5], [api], s=14, c=green, zorder=2)
    circle(37.5, lane, green, 3)
    axes.plot([57, 68], [api, lane + 0.3], color=green, lw=0.8, ls="--", alpha=0.5, zorder=1)
    axes.scatter([57], [api], s=14, c=green, zorder=2)
    axes.scatter([68], [lane + 0.3], marker="v", s=22, c=green, zorder=2)
    circle(68, lane, red, 5)
    circle(87.5, lane, olive, 4, empty=True)
    captions = {
        12.5: "a change, numbered by its step,\non the lane of the actor that\n"
        "made it; x3: three at once",
        37.5: "its write: a line up to the\nAPI server, which stores it\n(in etcd)",
        62.5: "a watch delivers that write\nto the next actor, which\n"
        "reacts with a change of its own",
        87.5: "an empty circle: nothing\nwas written (checked, not\nassumed)",
    }  # fmt: skip
    for x, caption in captions.items():
        axes.text(x, 2.15, caption, ha="center", va="top", fontsize=FONT - 1, linespacing=1.15)


@dataclass(frozen=True)
class Drawn:
    """What a picture drew, in one line of text a notebook's checker can compare: the lanes,
    the steps, the objects of each kind that were made, went or changed, the changes and their
    span, and for a rollout what the ReplicaSets asked for and the Ready Pods.

    The statuses that flow up the chain (steps 7, 8 and 10) are in the picture and in the
    count of changes, but not listed: how many of them a run writes depends on timing (a
    Deployment whose ReplicaSet reports 2 and then 3 available at once may never report 2).
    """

    lanes: int
    steps: tuple[int, ...]  # the steps drawn, the statuses up the chain left out
    objects: tuple[tuple[str, int, int, int], ...]  # kind, new, gone, changed otherwise
    changes: int
    first: float
    last: float
    counts: tuple[int, int, int] | None = None  # most asked for, fewest Ready, Ready at the end

    def __str__(self) -> str:
        kinds = ", ".join(
            f"{kind} " + " + ".join(f"{n} {word}" for n, word in parts if n)
            for kind, *numbers in self.objects
            for parts in [list(zip(numbers, ("new", "gone", "changed"), strict=True))]
        )
        text = (
            f"drawn: {self.lanes} lanes, steps {_ranges(self.steps)} (+ statuses); {kinds}; "
            f"{self.changes} changes drawn from t+{self.first:.3f}s to t+{self.last:.3f}s"
        )
        if self.counts is not None:
            most, fewest, end = self.counts
            text += f"; asked for at most {most}, Ready at least {fewest}, at the end {end}"
        return text


STATUS_STEPS = frozenset({7, 8, 10})
"""The statuses that flow up the chain: how many a run writes depends on timing."""


def _ranges(numbers: Sequence[int]) -> str:
    """1 2 3 5 -> "1-3, 5"."""
    parts: list[list[int]] = []
    for number in sorted(numbers):
        if parts and number == parts[-1][-1] + 1:
            parts[-1].append(number)
        else:
            parts.append([number])
    return ", ".join(f"{p[0]}-{p[-1]}" if len(p) > 2 else ", ".join(map(str, p)) for p in parts)


KINDS = ("Foo", "Deployment", "ReplicaSet", "Pod")


def drawn(
    changes: Sequence[Change], lanes: Sequence[str], everything: Sequence[Change] = (),
    since: float = 0.0, limits: tuple[int, int] | None = None,
) -> Drawn:  # fmt: skip
    """:class:`Drawn` for ``changes`` on ``lanes`` (the API server's included); with
    ``limits``, the counts from ``everything`` (the whole record up to the end) from ``since``."""
    shown = [c for c in changes if c.actor is not None]
    objects = []
    for kind in KINDS:
        mine = [c for c in shown if c.kind == kind and c.step not in STATUS_STEPS]
        new = {c.name for c in mine if c.field == "created"}
        gone = {c.name for c in mine if c.field in ("deletionTimestamp", "deleted")}
        changed = {c.name for c in mine if c.step not in (4, 6)} - new - gone
        if new or gone or changed:
            objects.append((kind, len(new), len(gone), len(changed)))
    counts = None
    if limits is not None:
        asked = replicas_asked(everything, since)[1]
        times, _existing, ready = pod_counts(everything)
        before = [n for at, n in zip(times, ready, strict=True) if at < since][-1:]
        during = before + [n for at, n in zip(times, ready, strict=True) if at >= since]
        counts = (max(asked, default=0), min(during, default=0), (during or [0])[-1])
    return Drawn(
        lanes=len(lanes),
        steps=tuple(
            sorted({c.step for c in shown if c.step is not None and c.step not in STATUS_STEPS})
        ),
        objects=tuple(objects),
        changes=len(shown),
        first=min((c.at for c in shown), default=0.0),
        last=max((c.at for c in shown), default=0.0),
        counts=counts,
    )


class LiveSwimlanes:
    """The swimlanes of a recorder's changes since ``since``, redrawn while they happen.

    A :class:`helpers.widgets.LiveFigure`: in Jupyter the picture moves while
    the cell runs; once :meth:`freeze` has fixed what it shows and the ``with``
    block ends, it replays those changes over ``replay`` seconds (the chain
    itself is over in about a second on the local control plane), then leaves
    a static PNG whose ``text/plain`` is ``caption``. Outside Jupyter nobody
    watches, and there is no replay. ``lanes`` fixes lanes from the start, so
    that the picture does not jump when an actor first appears. ``limits``
    (most Pods asked for, fewest Ready) adds a panel counting Pods, for
    rollouts; ``roles`` names the old and the new ReplicaSet.
    """

    def __init__(
        self,
        recorder: ChainRecorder,
        *,
        caption: str,
        title: str,
        since: float = 0.0,
        lanes: Sequence[str] = (),
        limits: tuple[int, int] | None = None,
        roles: Mapping[str, str] | None = None,
        replay: float = 3.0,
        show: bool | None = None,
        key: bool = False,
    ) -> None:
        self.recorder = recorder
        self.since = since
        self.title = title
        self.lanes = lanes
        self.limits = limits
        self.roles = dict(roles or {})
        self.replay = replay
        self.changes: list[Change] = []
        """What the drawing shows; ``freeze`` fixes it for the final picture."""
        self._everything: list[Change] = []  # from the start, for the Pod counts
        self._frozen = False
        self._replay_from: float | None = None  # when the replay began (time.monotonic())
        self._replayed = threading.Event()  # the replay's last frame has been drawn
        self.figure, self.axes = new_figure(counts=limits is not None, key=key)
        self.lanes_drawing = Lanes(self.axes["lanes"], self.axes["legend"])
        self.live = LiveFigure(
            self.figure, self._draw, name="swimlanes", caption=caption, show=show,
            interval=REFRESH, refresh=REFRESH,
        )  # fmt: skip

    def freeze(self, changes: Sequence[Change], roles: Mapping[str, str] | None = None) -> None:
        """Draw exactly ``changes`` from now on, from the first one you made, in the order etcd
        wrote them (:func:`helpers.attribution.from_write`): what was written before it is the tail
        of something earlier, however late it arrived, and what it caused stays, however
        early. ``roles`` may name the old and the new ReplicaSet now that they are known."""
        end = max((change.at for change in changes), default=self.since)
        self._everything = [change for change in self.recorder.changes() if change.at <= end]
        self.changes = from_write([change for change in changes if change.at >= self.since])
        self.roles.update(roles or {})
        self._frozen = True

    @property
    def drawn(self) -> Drawn:
        """What the picture shows, as :class:`Drawn` (printed under it in Jupyter)."""
        lanes = lanes_for(self.changes, self.lanes)
        return drawn(self.changes, lanes, self._everything, self.since, self.limits)

    def _draw(self) -> None:
        if not self._frozen:
            self._everything = self.recorder.changes()
            self.changes = [change for change in self._everything if change.at >= self.since]
        shown, span, title = self.changes, None, self.title
        if self._replay_from is not None and shown:
            first, last = shown[0].at, shown[-1].at
            pad = (last - first) * 0.04 + 0.005
            span = (first - pad, last + pad)
            done = min((time.monotonic() - self._replay_from) / self.replay, 1.0)
            cutoff = first + done * (last - first)
            shown = [change for change in shown if change.at <= cutoff]
            title = f"{self.title} (replayed at a readable pace: t+{cutoff:.3f}s)"
            if done >= 1.0:
                self._replayed.set()
        lanes = lanes_for(self.changes, self.lanes)
        final = self._frozen and self._replay_from is None  # the picture that stays: every number
        self.lanes_drawing.draw(shown, title=title, lanes=lanes, span=span, roles=self.roles,
                                numbers=None if final else LIVE_NUMBERS)  # fmt: skip
        if self.limits is not None:
            counts = self.axes["counts"]
            upto = shown[-1].at if shown else self.since  # a replay counts up to its cursor
            draw_counts(counts, [c for c in self._everything if c.at <= upto], self.since,
                        self.limits)  # fmt: skip
            self.axes["lanes"].set_xlabel("")
            self.axes["lanes"].tick_params(labelbottom=True)
            counts.set_xlabel("seconds since the recorder started", fontsize=FONT)
            counts.set_xlim(self.axes["lanes"].get_xlim())

    def __enter__(self) -> LiveSwimlanes:
        self.live.start()
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        try:
            if exc_type is None and self._frozen and self.live.show and self.replay > 0:
                self._replay_from = time.monotonic()
                # The drawing thread says when the replay's last frame is drawn: no sleep here.
                self._replayed.wait(self.replay + 30)
        finally:
            self._replay_from = None
            self.live.stop()
        if exc_type is None and self._frozen and self.live.show:
            print(self.drawn)  # under the picture: what it drew, for the reader and the checker
