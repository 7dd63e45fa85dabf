"""Chapter 08's instruments: the scraper, the pictures, the deletion recorder.

The scraper reads a real ``/metrics`` endpoint (chapter 08a's own); the pictures
are drawn from recorded intervals and checked for what their titles promise; the
deletion recorder watches a real Foo held by a finalizer on the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import kubernetes
import pytest

from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.controller_metrics import ControllerMetrics
from helpers.deletion_timeline import DeletionRecorder, plot_deletion
from helpers.endpoints import Endpoint, metrics_route
from helpers.finalizers import FINALIZER, set_foo_finalizers
from helpers.program_plots import leadership_gaps, per_second, plot_leadership
from helpers.scraper import Scraper, series_key


@dataclass
class Led:
    """What plot_leadership reads of a ControllerRun: its name and when it led."""

    name: str
    spans: list[tuple[float, float]]

    def intervals(self) -> list[tuple[float, float]]:
        return self.spans


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
    assert repr(picture).startswith("<Figure size 800x")


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
