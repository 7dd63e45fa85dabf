"""/metrics, /healthz and /readyz: the HTTP side of the controller process.

Unit tests for the pieces (addresses, checks, the metrics of one process), then
two real processes on the cluster, scraped the way Prometheus and the kubelet
would: the leader shows leader_election_master_status 1 and its syncs, the
standby 0; both are ready once their caches have synced.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import kubernetes
import pytest
from prometheus_client.parser import text_string_to_metric_families

from helpers.clock import FakeClock
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.controller_metrics import ControllerMetrics
from helpers.endpoints import Endpoint, checks_route, metrics_route, parse_address, serve
from helpers.throttle import Throttle
from helpers.waiting import wait_for
from helpers.workqueue import Queue
from tests.program_harness import ControllerRun, eventually, first_to_log, program_args

WORKQUEUE_METRICS = {
    "workqueue_depth": "gauge",
    "workqueue_adds": "counter",
    "workqueue_queue_duration_seconds": "histogram",
    "workqueue_work_duration_seconds": "histogram",
    "workqueue_retries": "counter",
    "workqueue_unfinished_work_seconds": "gauge",
    "workqueue_longest_running_processor_seconds": "gauge",
}


def get(url: str, accept: str = "") -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        (":8080", ("", 8080)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9", ("::1", 9)),
        ("0", None),
        ("", None),
    ],
)
def test_parse_address(address: str, parsed: tuple[str, int] | None) -> None:
    assert parse_address(address) == parsed


def test_parse_address_refuses_a_bare_port() -> None:
    with pytest.raises(ValueError, match="is not"):
        parse_address("8080")


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    problems: dict[str, str | None] = {"informers": "caches not synced yet: foos"}

    def broken() -> str | None:
        raise RuntimeError("boom")

    routes = {
        "/readyz": checks_route("readyz", {"ping": lambda: None,
                                           "informers": lambda: problems["informers"]}),
        "/healthz": checks_route("healthz", {"ping": lambda: None, "broken": broken}),
    }  # fmt: skip
    served = Endpoint("probes", ("127.0.0.1", 0), routes).start()
    served.problems = problems  # type: ignore[attr-defined]
    yield served
    served.stop()


def test_checks_list_every_check_like_the_api_server(endpoint: Endpoint) -> None:
    status, content_type, body = get(f"{endpoint.url}/readyz")
    assert status == 500 and content_type.startswith("text/plain")
    assert body.splitlines() == [
        "[+]ping ok",
        "[-]informers failed: caches not synced yet: foos",
        "readyz check failed",
    ]
    endpoint.problems["informers"] = None  # type: ignore[attr-defined]
    assert get(f"{endpoint.url}/readyz")[0] == 200


def test_a_check_that_raises_is_a_failed_check(endpoint: Endpoint) -> None:
    status, _, body = get(f"{endpoint.url}/healthz")
    assert status == 500
    assert "[-]broken failed: RuntimeError: boom" in body


def test_unknown_path_is_404_and_stop_joins_the_thread(endpoint: Endpoint) -> None:
    assert get(f"{endpoint.url}/nothing")[0] == 404
    endpoint.stop()
    assert not any(t.name == "http-probes" for t in threading.enumerate())


def test_address_zero_serves_nothing() -> None:
    assert serve("metrics", "0", {}) is None


def test_controller_metrics_count_and_time_syncs() -> None:
    metrics = ControllerMetrics("foo")
    with metrics.sync():
        pass
    with pytest.raises(ValueError), metrics.sync():
        raise ValueError("a failed sync")
    value = metrics.registry.get_sample_value
    assert value("controller_syncs_total", {"controller": "foo", "result": "success"}) == 1
    assert value("controller_syncs_total", {"controller": "foo", "result": "error"}) == 1
    assert value("controller_sync_errors_total", {"controller": "foo"}) == 1
    assert value("controller_sync_duration_seconds_count", {"controller": "foo"}) == 2
    metrics.set_leader("ns/lease", True)
    assert value("leader_election_master_status", {"name": "ns/lease"}) == 1
    assert value("process_resident_memory_bytes") > 0


def test_token_waits_are_read_from_the_buckets_at_scrape_time() -> None:
    """client-go's rest_client_rate_limiter_duration_seconds, by API group; a bucket the
    client makes after registration (a group first used later) shows up too."""
    buckets = {"": Throttle(qps=2, burst=1)}
    metrics = ControllerMetrics("foo")
    metrics.watch_throttles(buckets)
    waited = sum(buckets[""].wait() for _ in range(2))  # the second waits for its token
    buckets["apps"] = Throttle(qps=2, burst=1)
    buckets["apps"].wait()
    value = metrics.registry.get_sample_value
    name = "rest_client_rate_limiter_duration_seconds"
    assert value(f"{name}_count", {"group": "core"}) == 2
    # Up to half a second, less by whatever time passed between the two takes.
    assert 0 <= waited <= 0.5
    assert value(f"{name}_sum", {"group": "core"}) == pytest.approx(waited)
    assert value(f"{name}_count", {"group": "apps"}) == 1
    assert value(f"{name}_sum", {"group": "apps"}) == 0


def test_metrics_route_speaks_both_formats() -> None:
    metrics = ControllerMetrics("foo")
    queue: Queue[str] = Queue("Foos", clock=FakeClock())
    metrics.watch_queue(queue.metrics)
    queue.add("ns/a")
    served = Endpoint("metrics", ("127.0.0.1", 0), {"/metrics": metrics_route(metrics.registry)})
    served.start()
    try:
        status, content_type, text = get(f"{served.url}/metrics")
        assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
        assert 'workqueue_depth{name="Foos"} 1.0' in text
        _, content_type, text = get(
            f"{served.url}/metrics", "application/openmetrics-text; version=1.0.0"
        )
        assert content_type.startswith("application/openmetrics-text")
        assert text.endswith("# EOF\n")
    finally:
        served.stop()
        queue.shut_down()


# --- two real processes --------------------------------------------------------------------------


@pytest.fixture
def pair(namespace: str) -> Iterator[tuple[ControllerRun, ControllerRun]]:
    condition = threading.Condition()
    runs = [
        ControllerRun(program_args(namespace, identity=n), name=n, condition=condition)
        for n in ("a", "b")
    ]
    leader = first_to_log(runs, "started leading", 30)
    standby = runs[1] if leader is runs[0] else runs[0]
    yield leader, standby
    for run in runs:
        run.stop()


def scrape(run: ControllerRun) -> dict[str, object]:
    status, _, text = get(f"{run.url('metrics')}/metrics")
    assert status == 200
    return {family.name: family for family in text_string_to_metric_families(text)}


def sample(families: dict, family: str, sample_name: str, **labels: str) -> float:
    for s in families[family].samples:
        if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise AssertionError(f"no sample {sample_name} {labels}")


@pytest.mark.cluster
def test_leader_and_standby_metrics_and_probes(
    api: kubernetes.client.ApiClient, namespace: str, pair: tuple[ControllerRun, ControllerRun]
) -> None:
    leader, standby = pair
    for run in pair:
        probes = run.url("probes")
        eventually(lambda p=probes: get(f"{p}/readyz")[0] == 200, 30, f"{run.name} ready")
        status, _, body = get(f"{probes}/healthz")
        assert (status, body.splitlines()[-1]) == (200, "healthz check passed")
        assert "[+]leader-election ok" in body

    kubernetes.client.CustomObjectsApi(api).create_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("scraped", "scraped", 1)
    )
    wait_for(
        kubernetes.client.AppsV1Api(api).list_namespaced_deployment,
        lambda deployments: "scraped" in deployments,
        what="Deployment scraped",
        timeout=30,
        namespace=namespace,
    )
    lease = f"{namespace}/foo-controller"
    # The sync counts once it returns, a moment after its Deployment appears.
    eventually(
        lambda: sample(scrape(leader), "controller_syncs", "controller_syncs_total",
                       result="success") >= 1,
        10, "a successful sync in the leader's metrics",
    )  # fmt: skip
    ours = scrape(leader)
    assert {name: ours[name].type for name in WORKQUEUE_METRICS} == WORKQUEUE_METRICS
    assert sample(ours, "workqueue_adds", "workqueue_adds_total", name="Foos") >= 1
    leading = "leader_election_master_status"
    assert sample(ours, leading, leading, name=lease) == 1
    waits = "rest_client_rate_limiter_duration_seconds"
    foo_requests = sample(ours, waits, f"{waits}_count", group="samplecontroller.k8s.io")
    assert foo_requests >= 3  # the informer's list and watch, the status write
    theirs = scrape(standby)
    assert sample(theirs, leading, leading, name=lease) == 0
    # The standby's informers heard of the Foo too (warm caches), but it synced nothing.
    assert sample(theirs, "controller_syncs", "controller_syncs_total", result="success") == 0
    assert sample(theirs, "workqueue_depth", "workqueue_depth", name="Foos") >= 1
