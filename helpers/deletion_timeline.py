"""Record and draw how objects go: alive, then Terminating (deletionTimestamp set), then gone.

Not a client-go counterpart, and not built by a chapter: an instrument, with which
chapter 08b shows a finalizer holding a Foo after its DELETE. Two of the course's
own informers (Foos and Deployments of one namespace) note, on the monotonic
clock, when each object appeared, when it was first seen with a
``deletionTimestamp``, when its finalizers changed and when it was deleted;
whoever does the cleanup notes its attempts with :meth:`DeletionRecorder.attempt`.
A Condition is notified on every note, so a cell waits for a state, never for a
fixed time. :func:`plot_deletion` draws the notes, and prints in one line what it
drew (the rows, the cleanup attempts by outcome, how long the Foo was Terminating),
so a notebook's stored text says what the picture shows.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kubernetes
from matplotlib.figure import Figure

from helpers.informer import SharedInformer, wait_for_cache_sync
from helpers.listwatch import ListWatch
from helpers.program_plots import DPI, TEXT, Picture


@dataclass(frozen=True)
class Note:
    """One thing seen about one object: ``what`` is "added", "terminating",
    "finalizers" (``detail`` lists them), "deleted", or a cleanup "attempt"
    (``detail`` "failed" or "done")."""

    at: float  # monotonic
    kind: str
    name: str
    what: str
    detail: str = ""


class DeletionRecorder:
    """Watches Foos and Deployments in ``namespace`` until :meth:`stop`; notes their lives."""

    def __init__(self, api: kubernetes.client.ApiClient, namespace: str, foo_path: str) -> None:
        self.notes: list[Note] = []
        self.changed = threading.Condition()
        paths = {"Foo": foo_path, "Deployment": f"/apis/apps/v1/namespaces/{namespace}/deployments"}
        self.informers = []
        for kind, path in paths.items():
            informer = SharedInformer(ListWatch(api, path), name=f"deletions-{kind.lower()}")
            informer.add_event_handler(
                on_add=functools.partial(self._added, kind),
                on_update=functools.partial(self._seen, kind),
                on_delete=functools.partial(self._deleted, kind),
                name=f"deletions-{kind.lower()}",
            )
            self.informers.append(informer)
        for informer in self.informers:
            informer.start()
        assert wait_for_cache_sync(*self.informers, timeout=60), "the informers did not sync"

    def _added(self, kind: str, obj: Mapping[str, Any], _initial: bool) -> None:
        self._seen(kind, None, obj)

    def _deleted(self, kind: str, obj: Any) -> None:
        self._note(kind, _name(obj), "deleted")

    def _seen(self, kind: str, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        name = _name(new)
        if old is None:
            self._note(kind, name, "added")
        was_ending = bool(old and _meta(old).get("deletionTimestamp"))
        if _meta(new).get("deletionTimestamp") and not was_ending:
            self._note(kind, name, "terminating")
        finalizers = _meta(new).get("finalizers") or []
        if old is None or finalizers != (_meta(old).get("finalizers") or []):
            self._note(kind, name, "finalizers", ", ".join(finalizers) or "none")

    def _note(self, kind: str, name: str, what: str, detail: str = "") -> None:
        with self.changed:
            self.notes.append(Note(time.monotonic(), kind, name, what, detail))
            self.changed.notify_all()

    def attempt(self, name: str, succeeded: bool) -> None:
        """Note one cleanup attempt for Foo ``name`` (called by whoever cleans up)."""
        self._note("Foo", name, "attempt", "done" if succeeded else "failed")

    def wait_for(self, test: Callable[[list[Note]], bool], timeout: float = 60) -> None:
        """Until ``test(notes)`` holds; fails after ``timeout`` seconds."""
        with self.changed:
            passed = self.changed.wait_for(lambda: test(self.notes), timeout)
        assert passed, f"the recorded notes never passed the test: {self.notes[-5:]}"

    def of(self, kind: str, name: str, what: str | None = None) -> list[Note]:
        with self.changed:
            return [n for n in self.notes if (n.kind, n.name) == (kind, name)
                    and (what is None or n.what == what)]  # fmt: skip

    def terminating_for(self, kind: str, name: str) -> float:
        """Seconds from "terminating" to "deleted" for one object (0 if either is missing)."""
        with self.changed:
            return _span(self.notes, kind, name)

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()
        for informer in self.informers:
            informer.join(30)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _name(obj: Any) -> str:
    """The name of an object, or of the last state of one whose delete was missed."""
    obj = getattr(obj, "obj", obj)  # a tombstone (DeletedFinalStateUnknown) carries it
    return str(_meta(obj).get("name", ""))


def plot_deletion(recorder: DeletionRecorder, rows: Sequence[tuple[str, str]],
                  deleted_at: float) -> Picture:  # fmt: skip
    """One bar per object in ``rows`` ((kind, name)): blue alive, orange Terminating;
    the Foo's cleanup attempts as marks (x failed, o done); a line at the DELETE."""
    notes = [n for n in recorder.notes if (n.kind, n.name) in set(rows)]
    start = min(n.at for n in notes)
    end = max(n.at for n in notes)
    figure = Figure(figsize=(8, 1.9 + 0.5 * len(rows)), dpi=DPI)
    ax = figure.subplots()
    for row, (kind, name) in enumerate(reversed(rows)):
        added = [n.at for n in notes if (n.kind, n.name, n.what) == (kind, name, "added")]
        ending = [n.at for n in notes if (n.kind, n.name, n.what) == (kind, name, "terminating")]
        deleted = [n.at for n in notes if (n.kind, n.name, n.what) == (kind, name, "deleted")]
        born, died = (added or [start])[0], (deleted or [end])[0]
        doomed = (ending or [died])[0]
        ax.barh(row, doomed - born, left=born - start, height=0.5, color="C0")
        if doomed < died:
            ax.barh(row, died - doomed, left=doomed - start, height=0.5, color="C1")
        if kind == "Foo":
            for note in (n for n in notes if (n.name, n.what) == (name, "attempt")):
                done = note.detail == "done"
                ax.plot(note.at - start, row + 0.42, marker="o" if done else "x",
                        color="green" if done else "red", markersize=7, linestyle="")  # fmt: skip
    ax.axvline(deleted_at - start, color="black", linestyle=":")
    ax.text(deleted_at - start, -0.55, " DELETE", ha="left", va="center", fontsize=TEXT)
    ax.set_yticks(range(len(rows)), [f"{kind} {name}" for kind, name in reversed(rows)],
                  fontsize=TEXT + 1)  # fmt: skip
    ax.set_ylim(-0.8, len(rows) - 0.2)
    ax.set_xlabel("seconds (blue: alive; orange: Terminating, deletionTimestamp set)",
                  fontsize=TEXT)  # fmt: skip
    attempts = [n for n in notes if n.what == "attempt"]
    failed = sum(n.detail == "failed" for n in attempts)
    foo = next(name for kind, name in rows if kind == "Foo")
    held = _span(notes, "Foo", foo)
    ax.set_title(
        f"Foo {foo} held {held:.1f} s by its finalizer: {failed} failed cleanups "
        f"(x), {len(attempts) - failed} done (o)",
        fontsize=TEXT + 1,
    )
    ax.tick_params(labelsize=TEXT)
    figure.tight_layout()
    drawn = ", ".join(f"{kind} {name}" for kind, name in rows)
    gone = [f"{kind} {name}" for kind, name in rows if _gone(notes, kind, name)]
    print(f"drew {len(rows)} rows ({drawn}): {failed} failed cleanups (x) and "
          f"{len(attempts) - failed} done (o); Foo {foo} Terminating ≈{held:.1f} s; "
          f"gone by the end: {', '.join(gone) or 'none'}")  # fmt: skip
    return Picture(figure)


def _gone(notes: Sequence[Note], kind: str, name: str) -> bool:
    return any((n.kind, n.name, n.what) == (kind, name, "deleted") for n in notes)


def _span(notes: Sequence[Note], kind: str, name: str) -> float:
    """Seconds from "terminating" to "deleted" for one object (0 if either is missing)."""
    ending = [n.at for n in notes if (n.kind, n.name, n.what) == (kind, name, "terminating")]
    gone = [n.at for n in notes if (n.kind, n.name, n.what) == (kind, name, "deleted")]
    return gone[0] - ending[0] if ending and gone else 0.0
