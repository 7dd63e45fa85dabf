"""Chapter 08's instruments: the scraper, the pictures, the deletion recorder.

The scraper reads a real ``/metrics`` endpoint (chapter 08a's own); the pictures
are drawn from recorded intervals and checked for what their titles promise; the
deletion recorder watches a real Foo held by a finalizer on the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import kubernetes
import pytest

from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.controller_metrics import ControllerMetrics
from helpers.deletion_timeline import DeletionRecorder, plot_deletion
from helpers.endpoints import Endpoint, metrics_route
from helpers.finalizers import FINALIZER, set_foo_finalizers
from helpers.program_plots import (
    PaceRun,
    leadership_gaps,
    per_second,
    plot_fencing,
    plot_leadership,
    plot_pace,
)
from helpers.scraper import Scraper, series_key


@dataclass
class Led:
    """What the pictures read of a ControllerRun: its name, when it led, what it wrote."""

    name: str
    spans: list[tuple[float, float]]
    wrote: list[float] = field(default_factory=list)

    def intervals(self) -> list[tuple[float, float]]:
        return self.spans

    def writes(self) -> list[tuple[float, str]]:
        return [(at, f"{self.name}={n}") for n, at in enumerate(self.wrote, 1)]


def test_gaps_are_the_time_between_one_leadership_and_the_next() -> None:
    runs = [Led("a", [(0.0, 4.0)]), Led("b", [(9.0, 12.0)]), Led("a2", [(12.5, 14.0)])]
    assert leadership_gaps(runs) == [(4.0, 9.0), (12.0, 12.5)]  # type: ignore[arg-type]


def test_the_leadership_picture_counts_what_it_draws() -> None:
    runs = [Led("a", [(0.0, 4.0)]), Led("b", [(9.0, 12.0)]), Led("a2", [(12.5, 14.0)])]
    picture = plot_leadership(runs, [(4.0, "SIGKILL to a"), (12.0, "SIGTERM to b")])  # type: ignore[arg-type]
    (ax,) = picture.figure.axes
    assert "3 processes, one Lease: 3 leaderships" in ax.get_title()
    assert "5.0 s, 0.5 s" in ax.get_title()
    assert [label.get_text() for label in ax.get_yticklabels()] == ["a", "b", "a2"]
    assert picture._repr_png_().startswith(b"\x89PNG")
    # The line a notebook stores beside the PNG, which nbval compares: durations as ≈N s.
    assert repr(picture) == (
        "3 processes, one Lease: leaders in turn a, b, a2, never two at once; "
        "without a leader: ≈5.0 s, ≈0.5 s; span ≈14.0 s"
    )


def test_the_fencing_picture_says_who_led_beside_whom_and_what_landed_late() -> None:
    """one leads and writes, is paused at 2 s, two takes over at 7 s, one resumes at 8 s and
    leads until 11 s, writing at 8.5 and 9 s: both believed they led from 7 to 11 s."""
    one = Led("one", [(0.0, 11.0)], wrote=[1.0, 1.5, 8.5, 9.0])
    two = Led("two", [(7.0, 12.0)], wrote=[7.5, 8.0])
    picture = plot_fencing([one, two], ("one", 2.0, 8.0), [(2.0, "SIGSTOP"), (8.0, "SIGCONT")])  # type: ignore[list-item]
    (ax,) = picture.figure.axes
    assert "both believed they led for 4.0 s" in ax.get_title()
    assert "2 of one's writes landed after two had taken the Lease" in ax.get_title()
    assert [label.get_text() for label in ax.get_yticklabels()] == ["one", "two"]
    assert repr(picture) == (
        "2 processes, one Lease: two took over while one was paused; one, resumed, led "
        "≈3.0 s more and wrote 2 times after two took over"
    )
    assert picture._repr_png_().startswith(b"\x89PNG")


def test_per_second_is_the_rate_over_the_window_before_each_sample() -> None:
    times = [0.0, 0.5, 1.0, 1.5, 2.0]
    totals = [0, 5, 10, 10, 10]
    assert per_second(times, totals) == [0.0, 10.0, 10.0, 5.0, 0.0]


def test_the_scraper_reads_a_real_metrics_endpoint() -> None:
    metrics = ControllerMetrics("foo")
    served = Endpoint("metrics", ("127.0.0.1", 0), {"/metrics": metrics_route(metrics.registry)})
    served.start()
    scraper = Scraper(served.url, interval=0.05)
    try:
        syncs = 'controller_syncs_total{controller="foo",result="success"}'
        scraper.wait_for(lambda values: syncs in values)
        for _ in range(3):
            with metrics.sync():
                pass
        scraper.wait_for_value("controller_syncs_total", 3, controller="foo", result="success")
        assert scraper.last("controller_syncs_total", controller="foo", result="success") == 3
        series = scraper.series("controller_syncs_total", controller="foo", result="success")
        assert series[0] <= series[-1] == 3
        stretches = scraper.increases("controller_syncs_total", window=0.05,
                                      controller="foo", result="success")  # fmt: skip
        assert sum(grew for _, grew in stretches) >= 3 and all(s >= 0.05 for s, _ in stretches)
    finally:
        scraper.stop()
        served.stop()
    assert series_key("x", {"b": "2", "a": "1"}) == 'x{a="1",b="2"}'


@pytest.mark.cluster
def test_the_deletion_recorder_sees_a_foo_held_by_its_finalizer(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    custom = kubernetes.client.CustomObjectsApi(api)
    foos = dict(group=FOO_GROUP, version=FOO_VERSION, namespace=namespace, plural=FOO_PLURAL)
    recorder = DeletionRecorder(api, namespace, f"/apis/{FOO_GROUP}/{FOO_VERSION}/namespaces/"
                                                f"{namespace}/foos")  # fmt: skip
    try:
        body = foo_body("held", "held", 1)
        body["metadata"]["finalizers"] = [FINALIZER]
        custom.create_namespaced_custom_object(**foos, body=body)
        recorder.wait_for(lambda notes: any(n.what == "added" for n in notes))
        custom.delete_namespaced_custom_object(**foos, name="held")
        recorder.wait_for(lambda notes: any(n.what == "terminating" for n in notes))
        recorder.attempt("held", succeeded=False)
        recorder.attempt("held", succeeded=True)
        foo = custom.get_namespaced_custom_object(**foos, name="held")
        set_foo_finalizers(api, foo, [])
        recorder.wait_for(lambda notes: any(n.what == "deleted" for n in notes))
        whats = [n.what for n in recorder.of("Foo", "held")]
        assert whats[0] == "added" and whats[-1] == "deleted"
        assert whats.index("terminating") < whats.index("deleted")
        assert [n.detail for n in recorder.of("Foo", "held", "attempt")] == ["failed", "done"]
        picture = plot_deletion(recorder, [("Foo", "held")], recorder.of("Foo", "held")[0].at)
        title = picture.figure.axes[0].get_title()
        assert "1 failed cleanups (x), 1 done (o)" in title
    finally:
        recorder.stop()


class _Scrapes:
    """What plot_pace reads of a Scraper: two scrapes, 0.5 s and 1.0 s after the start."""

    def times(self, start: float) -> list[float]:
        return [0.5 - start, 1.0 - start]

    def series(self, metric: str, **labels: str) -> list[float]:
        return {
            "controller_syncs_total": [3.0, 30.0],
            "rest_client_rate_limiter_duration_seconds_sum": [0.0, 2.5],
            "workqueue_depth": [4.0, 0.0],
        }[metric]


def test_the_pace_picture_says_each_runs_syncs_span_and_waits() -> None:
    run = PaceRun("--kube-api-qps 5", _Scrapes(), 0.0)  # type: ignore[arg-type]
    picture = plot_pace([run])
    assert repr(picture) == (
        "--kube-api-qps 5: 24 changes -> 30 syncs in ≈1.0 s, "
        "Foo-status writes waited ≈2.5 s for tokens"
    )
