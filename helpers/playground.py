"""Chapter 06a's playground: sliders for a running Foo controller, and its timeline, live.

No client-go counterpart: a toy for a learner in JupyterLab. :class:`Playground`
starts a :class:`helpers.reconcile_bench.Bench`'s controller on six Foos of its own
(``play-0`` to ``play-5``) with :class:`~helpers.faults.clients.FlakyClients`, and
shows three sliders (workers, "fail 1 in N" writes, latency per write), a button
that changes all six Foos at once, and the timeline of the last 12 seconds.
Moving the workers slider restarts the controller; the other two change the
running one's faults. :meth:`Playground.stop` leaves the timeline as a static
image and greys the controls out.

Making one again works at any time, also after the chapter's last cell deleted
its namespace: the playground brings the namespace back
(:func:`helpers.namespaces.ensure_namespace`) and creates its Foos if they are
missing.
"""

from __future__ import annotations

from typing import Any

from helpers.foos import Foos
from helpers.reconcile_bench import Bench
from helpers.timeline_plot import ReconcileTimeline

NAMES = tuple(f"play-{n}" for n in range(6))
LABELS = {"group": "play"}
WINDOW = 12.0
"""Seconds of timeline the playground shows."""


class Playground:
    """Sliders for a bench's controller (workers, failures, latency) and a burst button."""

    def __init__(
        self, bench: Bench, *, workers: int = 2, fail_every: int = 4, latency: float = 0.02,
        show: bool | None = None,
    ) -> None:  # fmt: skip
        import ipywidgets

        # Here, not at the top: the namespaces' module knows where the course keeps its files,
        # and a widget module should not load that on import (tests/test_import_direction.py).
        from helpers.namespaces import ensure_namespace

        ensure_namespace(bench.api, bench.namespace)  # after Run All, the chapter deleted it
        self.bench = bench
        self.foos = Foos(bench.api, bench.namespace)
        for name in NAMES:
            self.foos.ensure(name, 1, LABELS)
        wide = {"style": {"description_width": "initial"}, "layout": {"width": "300px"}}
        self.workers = ipywidgets.IntSlider(workers, 1, 4, description="workers", **wide)
        self.fail_every = ipywidgets.IntSlider(fail_every, 0, 10, description="fail 1 write in",
                                               **wide)  # fmt: skip
        self.latency = ipywidgets.FloatSlider(latency, min=0, max=0.5, step=0.01,
                                              description="latency (s)", **wide)  # fmt: skip
        self.button = ipywidgets.Button(description="burst: change the 6 Foos",
                                        layout={"width": "auto"})  # fmt: skip
        self.round = 0
        self.written: dict[str, str] = {}  # the Foo versions the last burst wrote
        self.started = bench.recorder.now()
        self._start()
        caption = "ReconcileTimeline: the playground (workers, failures, latency, bursts)"
        self.picture = ReconcileTimeline(bench.recorder, caption=caption, window=WINDOW,
                                         title="playground", show=show)  # fmt: skip
        self.workers.observe(lambda change: self._restart(), names="value")
        self.fail_every.observe(lambda change: self._set("fail_every", change.new), "value")
        self.latency.observe(lambda change: self._set("latency", change.new), "value")
        self.button.on_click(lambda _button: self.burst())
        self.controls = ipywidgets.VBox([
            ipywidgets.HBox([self.workers, self.fail_every]),
            ipywidgets.HBox([self.latency, self.button]),
        ])  # fmt: skip
        if self.picture.live.show:
            from IPython.display import display

            display(self.controls)
        self.picture.start()

    def _start(self) -> None:
        self.bench.start(workers=self.workers.value, fail_every=self.fail_every.value,
                         latency=self.latency.value)  # fmt: skip

    def _restart(self) -> None:
        self._start()
        assert self.bench.controller is not None
        self.picture.follow(self.bench.controller)

    def _set(self, fault: str, value: Any) -> None:
        if self.bench.flaky is not None:
            setattr(self.bench.flaky, fault, value)

    def burst(self) -> dict[str, str]:
        """Change every playground Foo once; returns the versions written."""
        self.round += 1
        patch = {"spec": {"replicas": 1 + self.round % 2}}
        self.written = {n: self.foos.patch(n, patch)["metadata"]["resourceVersion"] for n in NAMES}
        return self.written

    def stop(self) -> None:
        """Stop the controller (its syncs end), leave the timeline of the playground's last
        seconds as an image, and grey the controls out."""
        self.bench.stop()
        now = self.bench.recorder.now()
        self.picture.freeze(max(self.started, now - WINDOW), now)  # what it showed last
        self.picture.stop()
        for control in (self.workers, self.fail_every, self.latency, self.button):
            control.disabled = True
