"""Record the conditions of Foos as they change, and draw them: chapter 10's first picture.

An instrument, not built by a chapter (STYLE.md: the phenomenon first, the instrument's
internals in helpers). :class:`ConditionRecorder` is an event handler on a Foo informer:
each time a Foo arrives whose ``status.conditions`` differ from what it last saw, it
writes down every condition that changed, with the moment it saw it. :func:`draw_conditions`
draws one Foo's conditions as lanes, one per type: a bar per stretch of one status, a
filled dot where the status changed (a new ``lastTransitionTime``), a hollow one where
only the reason, the message or the generation changed, and a dashed line for each
:meth:`ConditionRecorder.mark`.
"""

from __future__ import annotations

import io
import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from helpers.informer import SharedInformer

DPI = 100
TEXT = 9  # points: 12.5 px at 100 dpi, readable at 100% zoom
COLOURS = {"True": "#1565c0", "False": "#ef6c00", "Unknown": "#9e9e9e"}


@dataclass(frozen=True)
class Seen:
    """One condition of one Foo, as it was when the recorder saw it change."""

    at: float  # seconds since the recorder started
    generation: int  # the Foo's metadata.generation then
    type: str
    status: str
    reason: str
    message: str
    transition: str  # lastTransitionTime
    observed_generation: int


class ConditionRecorder:
    """Writes down every change of every Foo's conditions that an informer delivers."""

    def __init__(self, informer: SharedInformer, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._start = clock()
        self._changed = threading.Condition()
        self.seen: dict[str, list[Seen]] = {}  # Foo name -> the changes, in order
        self.marks: list[tuple[float, str]] = []
        self.registration = informer.add_event_handler(
            on_add=lambda foo, _initial: self._saw(foo),
            on_update=lambda _old, foo: self._saw(foo),
            name="condition-recorder",
        )

    def now(self) -> float:
        return self._clock() - self._start

    def mark(self, label: str) -> None:
        """Note that something was done now (drawn as a dashed line)."""
        with self._changed:
            self.marks.append((self.now(), label))

    def _saw(self, foo: Mapping[str, Any]) -> None:
        name = foo["metadata"]["name"]
        generation = foo["metadata"].get("generation", 0)
        with self._changed:
            changes = self.seen.setdefault(name, [])
            for found in (foo.get("status") or {}).get("conditions") or []:
                seen = Seen(self.now(), generation, found.get("type", ""),
                            found.get("status", ""), found.get("reason", ""),
                            found.get("message", ""), found.get("lastTransitionTime", ""),
                            found.get("observedGeneration", 0))  # fmt: skip
                last = self.last(name, seen.type)
                if last is None or _what(last) != _what(seen):
                    changes.append(seen)
            self._changed.notify_all()

    def last(self, name: str, type_: str) -> Seen | None:
        """The last change seen of condition ``type_`` of Foo ``name``."""
        with self._changed:
            return next((s for s in reversed(self.seen.get(name, [])) if s.type == type_), None)

    def of(self, name: str, type_: str) -> list[Seen]:
        """Every change seen of condition ``type_`` of Foo ``name``, in order."""
        with self._changed:
            return [seen for seen in self.seen.get(name, []) if seen.type == type_]

    def wait_for(
        self, name: str, statuses: Mapping[str, str], generation: int, timeout: float = 30
    ) -> None:
        """Block until Foo ``name``'s conditions last seen have ``statuses`` (type: status),
        judged on ``generation`` or later; checked again after every change."""

        def there() -> bool:
            last = {type_: self.last(name, type_) for type_ in statuses}
            return all(seen is not None and seen.status == statuses[type_]
                       and seen.observed_generation >= generation
                       for type_, seen in last.items())  # fmt: skip

        with self._changed:
            if not self._changed.wait_for(there, timeout):
                raise TimeoutError(f"Foo {name} did not get to {dict(statuses)} in {timeout} s")


def _what(seen: Seen) -> tuple[str, ...]:
    """What makes a condition different: not the moment it was seen."""
    return (seen.status, seen.reason, seen.message, seen.transition, str(seen.observed_generation))


def transitions(changes: Sequence[Seen]) -> int:
    """How many of ``changes`` changed the status (the first counts: it set one)."""
    return sum(1 for before, after in zip([None, *changes], changes, strict=False)
               if before is None or before.status != after.status)  # fmt: skip


def times_kept(changes: Sequence[Seen]) -> bool:
    """Did every change that kept the status keep ``lastTransitionTime`` too?"""
    return all(before.transition == after.transition
               for before, after in itertools.pairwise(changes)
               if before.status == after.status)  # fmt: skip


class Picture:
    """A drawn figure a notebook shows as a PNG, without pyplot's global figures."""

    def __init__(self, figure: Figure) -> None:
        self.figure = figure

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=DPI)
        return buffer.getvalue()

    def __repr__(self) -> str:
        return repr(self.figure)


def draw_conditions(
    recorder: ConditionRecorder, name: str, types: Sequence[str] = ("Ready", "Progressing")
) -> Picture:
    """One lane per condition type of Foo ``name``, from the first change seen to now."""
    start = min((changes[0].at for t in types if (changes := recorder.of(name, t))), default=0.0)
    end = recorder.now()
    end += (end - start) * 0.08  # the last status, for a while
    figure = Figure(figsize=(8.2, 1.5 + 0.7 * len(types)), dpi=DPI)
    axes = figure.add_subplot()
    moved = changed = 0
    for row, type_ in enumerate(reversed(types)):
        changes = recorder.of(name, type_)
        for index, seen in enumerate(changes):
            until = changes[index + 1].at if index + 1 < len(changes) else end
            colour = COLOURS.get(seen.status, COLOURS["Unknown"])
            axes.barh(row, until - seen.at, left=seen.at, height=0.5, color=colour, alpha=0.3)
            transition = index == 0 or changes[index - 1].status != seen.status
            moved, changed = moved + transition, changed + (not transition)
            axes.plot(seen.at, row, "o", markersize=8, color=colour,
                      markerfacecolor=colour if transition else "white", zorder=3)  # fmt: skip
    for at, label in recorder.marks:
        axes.axvline(at, color="#555555", linestyle="--", linewidth=1)
        axes.annotate(label, (at, len(types) - 0.55), fontsize=TEXT, ha="left", va="bottom",
                      xytext=(3, 0), textcoords="offset points")  # fmt: skip
    axes.set_yticks(range(len(types)), list(reversed(types)), fontsize=TEXT + 1)
    axes.set_ylim(-0.6, len(types) - 0.1)
    first = min(start, *(at for at, _ in recorder.marks))
    axes.set_xlim(first - (end - first) * 0.03, end)
    axes.set_xlabel("seconds since the recorder started", fontsize=TEXT)
    axes.tick_params(axis="x", labelsize=TEXT)
    handles = [Line2D([], [], color=colour, linewidth=8, alpha=0.3, label=status)
               for status, colour in COLOURS.items() if status != "Unknown"]  # fmt: skip
    handles += [
        Line2D([], [], marker="o", linestyle="", color="#555555", label="status changed"),
        Line2D([], [], marker="o", linestyle="", color="#555555", markerfacecolor="white",
               label="reason or message alone"),
    ]  # fmt: skip
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=TEXT - 1,
                frameon=False)  # fmt: skip
    axes.set_title(f"Foo {name}'s conditions as the controller wrote them: {moved} status "
                   f"change{_s(moved)} (new lastTransitionTime),\n{changed} change{_s(changed)} "
                   "of reason or message alone (time kept)", fontsize=TEXT, loc="left")  # fmt: skip
    figure.tight_layout()
    return Picture(figure)


def _s(count: int) -> str:
    return "" if count == 1 else "s"
