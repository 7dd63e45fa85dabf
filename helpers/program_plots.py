"""Chapters 08 and 08a's pictures: who led when, a stale leader's writes, a process's pace.

Not built by a chapter: drawing code, kept out of the chapter's way (STYLE.md:
the phenomenon first, the instrument's internals in helpers). Each function
draws one matplotlib figure from what the instruments recorded
(:mod:`helpers.runner`'s log lines, :mod:`helpers.scraper`'s scrapes) and says
in its title what it draws and how many. Sizes follow the course's rule: text of
at least 9 points at 100 dpi (12 px), 8 to 9 inches wide.

Each picture also says what it drew in one line of text, its ``repr``: the
text a notebook stores beside the PNG, which nbval compares (it never compares
images). Durations in that line are printed as ``≈4.3 s``, which the course's
sanitizer masks: the cell that draws asserts what they must be.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from matplotlib.figure import Figure

from helpers.runner import ControllerRun
from helpers.scraper import Scraper

DPI = 100
TEXT = 9  # points: 12.5 px at 100 dpi


class Picture:
    """A drawn figure that a notebook shows as a PNG, without pyplot's global figures.

    A cell that ends with one shows the PNG once, and as text the one-line
    ``summary`` of what was drawn (nbval compares that line, not the image).
    """

    def __init__(self, figure: Figure, summary: str = "") -> None:
        self.figure = figure
        self.summary = summary or repr(figure)

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=DPI)
        return buffer.getvalue()

    def __repr__(self) -> str:
        return self.summary


def leadership_gaps(runs: Sequence[ControllerRun]) -> list[tuple[float, float]]:
    """The stretches (from, to) between one leadership's end and the next one's start."""
    spans = sorted(span for run in runs for span in run.intervals())
    return [(ended, began) for (_, ended), (began, _) in itertools.pairwise(spans)]


def _named_spans(runs: Sequence[ControllerRun]) -> list[tuple[float, float, str]]:
    """Every leadership as (from, to, process), in the order they began."""
    return sorted((began, ended, run.name) for run in runs for began, ended in run.intervals())


def _overlaps(spans: Sequence[tuple[float, float, str]]) -> list[tuple[float, float]]:
    """The stretches in which two processes both believed they led."""
    found = []
    for (start_1, end_1, name_1), (start_2, end_2, name_2) in itertools.combinations(spans, 2):
        if name_1 != name_2 and max(start_1, start_2) < min(end_1, end_2):
            found.append((max(start_1, start_2), min(end_1, end_2)))
    return found


def plot_leadership(
    runs: Sequence[ControllerRun], marks: Sequence[tuple[float, str]] = ()
) -> Picture:
    """One row per process, a bar while it led; red where nobody led; a line per signal.

    ``marks``: (monotonic time, label) of what was done to the processes. Its
    summary names the leaders in turn, the time without one, and the span.
    """
    spans = sorted(span for run in runs for span in run.intervals())
    start = min([spans[0][0], *(at for at, _ in marks)]) if spans else 0.0
    gaps = leadership_gaps(runs)
    figure = Figure(figsize=(8, 1.4 + 0.55 * len(runs)), dpi=DPI)
    ax = figure.subplots()
    for row, run in enumerate(runs):
        for began, ended in run.intervals():
            ax.barh(row, ended - began, left=began - start, height=0.5, color=f"C{row % 10}")
    finish = max([spans[-1][1], *(at for at, _ in marks)]) if spans else 1.0
    for ended, began in gaps:
        ax.axvspan(ended - start, began - start, color="red", alpha=0.15, linewidth=0)
        if began - ended >= 0.15 * (finish - start):  # room for a label; the title has them all
            ax.text((ended + began) / 2 - start, len(runs) - 0.45,
                    f"no leader\n{began - ended:.1f} s", ha="center", va="top",
                    fontsize=TEXT)  # fmt: skip
    for at, label in marks:
        ax.axvline(at - start, color="black", linestyle=":")
        ax.text(at - start, -0.62, f" {label}", ha="left", va="center", fontsize=TEXT)
    ax.set_xlim(0, (finish - start) * 1.12)  # room for the last mark's label
    ax.set_yticks(range(len(runs)), [run.name for run in runs], fontsize=TEXT + 1)
    ax.set_ylim(-0.9, len(runs) - 0.3)
    ax.set_xlabel("seconds", fontsize=TEXT + 1)
    named = _named_spans(runs)
    together = "never two at once" if not _overlaps(named) else "TWO AT ONCE"
    shown = ", ".join(f"{began - ended:.1f} s" for ended, began in gaps) or "none"
    ax.set_title(
        f"{len(runs)} processes, one Lease: {len(spans)} leaderships, {together}\n"
        f"time without a leader: {shown}",
        fontsize=TEXT + 1,
    )
    figure.tight_layout()
    without = ", ".join(f"≈{began - ended:.1f} s" for ended, began in gaps) or "none"
    summary = (
        f"{len(runs)} processes, one Lease: leaders in turn {', '.join(n for _, _, n in named)}, "
        f"{together}; without a leader: {without}; span ≈{finish - start:.1f} s"
    )
    return Picture(figure, summary)


def plot_fencing(
    runs: Sequence[ControllerRun], paused: tuple[str, float, float],
    marks: Sequence[tuple[float, str]] = (),
) -> Picture:  # fmt: skip
    """Leaderships as each process believed them, its writes as ticks, and the pause.

    ``paused``: (process, from, to), monotonic: when it was stopped and resumed.
    Red marks the stretch in which two processes both believed they led; a tick
    is a write the API server answered (the process's "wrote" lines). Its
    summary says who took over, how long the resumed process led on, and how
    many of its writes landed after the other had taken the Lease.
    """
    who, stopped, resumed = paused
    named = _named_spans(runs)
    writes = {run.name: run.writes() for run in runs}
    times = [t for began, ended, _ in named for t in (began, ended)] + [stopped, resumed]
    start, finish = min(times), max(times)
    figure = Figure(figsize=(8, 1.7 + 0.7 * len(runs)), dpi=DPI)
    ax = figure.subplots()
    for row, run in enumerate(runs):
        for began, ended in run.intervals():
            ax.barh(row, ended - began, left=began - start, height=0.4, color=f"C{row % 10}",
                    alpha=0.6)  # fmt: skip
        ticks = [at - start for at, _ in writes[run.name]]
        ax.plot(ticks, [row + 0.3] * len(ticks), "|", color="black", markersize=9)
        if run.name == who:
            ax.barh(row, resumed - stopped, left=stopped - start, height=0.4, color="white",
                    hatch="//", edgecolor="grey")  # fmt: skip
            ax.text((stopped + resumed) / 2 - start, row, "paused", ha="center", va="center",
                    fontsize=TEXT, backgroundcolor="white")  # fmt: skip
    both = _overlaps(named)
    for began, ended in both:
        ax.axvspan(began - start, ended - start, color="red", alpha=0.15, linewidth=0)
    for at, label in marks:
        ax.axvline(at - start, color="black", linestyle=":")
        ax.text(at - start, -0.62, f" {label}", ha="left", va="center", fontsize=TEXT)
    ax.set_xlim(0, (finish - start) * 1.15)
    ax.set_yticks(range(len(runs)), [run.name for run in runs], fontsize=TEXT + 1)
    ax.set_ylim(-0.9, len(runs) - 0.2)
    ax.set_xlabel("seconds (ticks: writes the API server answered)", fontsize=TEXT + 1)
    others = [began for began, _, name in named if name != who and began > stopped]
    took_over = min(others) if others else finish
    successor = next((name for began, _, name in named if began == took_over), "nobody")
    late = [at for at, _ in writes[who] if at > took_over]
    beside = sum(ended - began for began, ended in both)
    more = max((ended - resumed for began, ended, name in named if name == who), default=0.0)
    ax.set_title(
        f"{who} was paused past its lease and {successor} took over: both believed they led for "
        f"{beside:.1f} s (red),\nand {len(late)} of {who}'s writes landed after {successor} "
        "had taken the Lease",
        fontsize=TEXT + 1,
    )
    figure.tight_layout()
    summary = (
        f"{len(runs)} processes, one Lease: {successor} took over while {who} was paused; "
        f"{who}, resumed, led ≈{more:.1f} s more and wrote {len(late)} times after "
        f"{successor} took over"
    )
    return Picture(figure, summary)


@dataclass
class PaceRun:
    """One scraped run of the controller for :func:`plot_pace`."""

    label: str  # "--kube-api-qps 5", say
    scraper: Scraper
    start: float  # monotonic: when the changes began
    marks: list[tuple[float, str]] = field(default_factory=list)  # (monotonic, what)
    changes: int = 24  # how many changes the run made (its summary says so)


def per_second(times: Sequence[float], totals: Sequence[float], window: float = 1.0) -> list[float]:
    """The rate of a counter at each scrape, over the ``window`` seconds before it."""
    rates = []
    for index, now in enumerate(times):
        earlier = next((j for j in range(index + 1) if times[j] >= now - window), index)
        span = now - times[earlier]
        rates.append((totals[index] - totals[earlier]) / span if span > 0 else 0.0)
    return rates


TOKEN_WAITS = "rest_client_rate_limiter_duration_seconds_sum"
GROUPS = {"samplecontroller.k8s.io": "Foo status", "apps": "Deployments", "core": "Events"}


def plot_pace(runs: Sequence[PaceRun]) -> Picture:
    """A column per run: queue depth, successful syncs a second, seconds spent waiting for
    client tokens (by API group's bucket), on one time axis from when the changes began."""
    figure = Figure(figsize=(9, 6.4), dpi=DPI)
    axes = figure.subplots(3, len(runs), sharex=True, sharey="row", squeeze=False)
    for column, run in enumerate(runs):
        depth_ax, rate_ax, wait_ax = axes[:, column]
        times = run.scraper.times(run.start)
        syncs = run.scraper.series("controller_syncs_total", controller="foo", result="success")
        done = syncs[-1] if syncs else 0  # since the process started, before the first change
        depth_ax.step(times, run.scraper.series("workqueue_depth", name="Foos"), where="post")
        rate_ax.plot(times, per_second(times, syncs), color="C1")
        for index, (group, what) in enumerate(GROUPS.items()):
            waits = run.scraper.series(TOKEN_WAITS, group=group)
            total = waits[-1] if waits else 0.0  # lines at 0 lie on each other: say so here
            wait_ax.plot(times, waits, label=f"{what}: {total:.1f} s", color=f"C{index + 2}",
                         linestyle=("-", "--", ":")[index])  # fmt: skip
        wait_ax.legend(title="bucket: waited in all", fontsize=TEXT, title_fontsize=TEXT,
                       loc="best")  # fmt: skip
        for at, _ in run.marks:
            for ax in (depth_ax, rate_ax, wait_ax):
                ax.axvline(at - run.start, color="grey", linestyle=":")
        span = times[-1] if times else 0
        marked = "; ".join(what for _, what in run.marks)
        depth_ax.set_title(f"{run.label}: {done:.0f} syncs in {span:.1f} s\n(dotted: {marked})"
                           if marked else f"{run.label}: {done:.0f} syncs in {span:.1f} s",
                           fontsize=TEXT + 1)  # fmt: skip
        wait_ax.set_xlabel("seconds after the first change", fontsize=TEXT)
    axes[0, 0].set_ylabel("keys queued", fontsize=TEXT)
    axes[1, 0].set_ylabel("syncs a second", fontsize=TEXT)
    axes[2, 0].set_ylabel("seconds waited\nfor a token", fontsize=TEXT)
    for ax in axes.flat:
        ax.tick_params(labelsize=TEXT)
    figure.suptitle("The same changes at two client paces", fontsize=TEXT + 2)
    figure.tight_layout()
    return Picture(figure, "; ".join(_pace_line(run) for run in runs))


def _pace_line(run: PaceRun) -> str:
    """One run in words: its syncs, its span and the Foo-status bucket's waits."""
    times = run.scraper.times(run.start)
    syncs = run.scraper.series("controller_syncs_total", controller="foo", result="success")
    waits = run.scraper.series(TOKEN_WAITS, group="samplecontroller.k8s.io")
    done, span, waited = (syncs or [0])[-1], (times or [0.0])[-1], (waits or [0.0])[-1]
    return (
        f"{run.label}: {run.changes} changes -> {done:.0f} syncs in ≈{span:.1f} s, "
        f"Foo-status writes waited ≈{waited:.1f} s for tokens"
    )
