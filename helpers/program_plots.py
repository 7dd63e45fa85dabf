"""Chapter 08a's pictures: who led when, and a controller process's pace.

Not built by a chapter: drawing code, kept out of the chapter's way (STYLE.md:
the phenomenon first, the instrument's internals in helpers). Each function
draws one matplotlib figure from what the instruments recorded
(:mod:`helpers.runner`'s log lines, :mod:`helpers.scraper`'s scrapes) and says
in its title what it draws and how many. Sizes follow the course's rule: text of
at least 9 points at 100 dpi (12 px), 8 to 9 inches wide.
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

    A cell that ends with one shows the PNG once; its text form is matplotlib's
    ("<Figure size 800x305 with 1 Axes>"), which depends on nothing but the layout.
    """

    def __init__(self, figure: Figure) -> None:
        self.figure = figure

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=DPI)
        return buffer.getvalue()

    def __repr__(self) -> str:
        return repr(self.figure)


def leadership_gaps(runs: Sequence[ControllerRun]) -> list[tuple[float, float]]:
    """The stretches (from, to) between one leadership's end and the next one's start."""
    spans = sorted(span for run in runs for span in run.intervals())
    return [(ended, began) for (_, ended), (began, _) in itertools.pairwise(spans)]


def plot_leadership(
    runs: Sequence[ControllerRun], marks: Sequence[tuple[float, str]] = ()
) -> Picture:
    """One row per process, a bar while it led; red where nobody led; a line per signal.

    ``marks``: (monotonic time, label) of what was done to the processes.
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
    shown = ", ".join(f"{began - ended:.1f} s" for ended, began in gaps) or "none"
    ax.set_title(
        f"{len(runs)} processes, one Lease: {len(spans)} leaderships, never two at once\n"
        f"time without a leader: {shown}",
        fontsize=TEXT + 1,
    )
    figure.tight_layout()
    return Picture(figure)


@dataclass
class PaceRun:
    """One scraped run of the controller for :func:`plot_pace`."""

    label: str  # "--kube-api-qps 5", say
    scraper: Scraper
    start: float  # monotonic: when the changes began
    marks: list[tuple[float, str]] = field(default_factory=list)  # (monotonic, what)


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
    return Picture(figure)
