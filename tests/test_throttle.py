"""The client-side throttle: client-go's QPS/Burst token bucket in front of every request."""

from __future__ import annotations

import threading

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers import kube
from helpers.clock import FakeClock
from helpers.throttle import (
    DISCOVERY,
    DISCOVERY_BURST,
    Throttle,
    api_group,
    retry_after,
    throttle,
    throttle_per_group,
)

GUARD = 10.0


def test_a_burst_goes_at_once_then_one_request_per_token() -> None:
    clock = FakeClock()
    limit = Throttle(qps=5, burst=10, clock=clock)
    assert [limit.wait() for _ in range(10)] == [0.0] * 10  # the bucket starts full
    done = threading.Event()
    waited: list[float] = []

    def eleventh() -> None:
        waited.append(limit.wait())
        done.set()

    thread = threading.Thread(target=eleventh, name="eleventh")
    thread.start()
    assert clock.wait_for_waiters(1, GUARD), "the eleventh request did not wait"
    clock.step(0.1)
    assert not done.wait(0.05), "it went before its token was there"
    clock.step(0.1)  # 0.2 s: one token at 5 per second
    assert done.wait(GUARD)
    thread.join(GUARD)
    assert waited == [pytest.approx(0.2)]
    assert (limit.requests, limit.waited) == (11, 1)


def test_waiting_requests_each_wait_for_their_own_token_not_for_each_other() -> None:
    clock = FakeClock()
    limit = Throttle(qps=10, burst=1, clock=clock)
    limit.wait()
    finished: list[float] = []
    threads = [
        threading.Thread(target=lambda: finished.append(limit.wait() and clock.now()))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    assert clock.wait_for_waiters(3, GUARD)
    clock.step(0.3)  # tokens at 0.1, 0.2, 0.3: all three are due
    for thread in threads:
        thread.join(GUARD)
    assert sorted(finished) == [pytest.approx(0.3)] * 3
    assert limit.seconds_waited == pytest.approx(0.1 + 0.2 + 0.3)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="qps > 0"):
        Throttle(qps=0)


@pytest.mark.cluster
def test_every_api_call_takes_a_token() -> None:
    api = kube.connect()  # a client of its own: the throttle stays on it
    limit = throttle(api, qps=1000, burst=1000)
    core = kubernetes.client.CoreV1Api(api)
    core.list_namespace(limit=1)
    core.read_namespace("default")
    assert limit.requests == 2


def answer(status: int, retry_after: str | None) -> ApiException:
    err = ApiException(status=status, reason="scripted")
    err.headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return err


@pytest.mark.parametrize(
    ("status", "header", "seconds"),
    [(503, "1", 1), (429, "5", 5), (500, "0", 0), (503, None, None), (409, "1", None),
     (503, "soon", None), (503, "-1", None)],
)  # fmt: skip
def test_which_answers_ask_for_a_retry(
    status: int, header: str | None, seconds: int | None
) -> None:
    assert retry_after(answer(status, header)) == seconds


def scripted_client(answers: list[ApiException | str]) -> tuple[kubernetes.client.ApiClient, list]:
    """A client whose transport plays ``answers`` in order (an exception is raised)."""
    api = kubernetes.client.ApiClient(kubernetes.client.Configuration(host="http://127.0.0.1:9"))
    sent: list[str] = []

    def request(method: str, url: str, *args: object, **kwargs: object) -> str:
        sent.append(method)
        reply = answers.pop(0)
        if isinstance(reply, ApiException):
            raise reply
        return reply

    api.rest_client.request = request
    return api, sent


def test_retry_after_answers_are_retried_after_the_wait_they_ask_for() -> None:
    clock = FakeClock()
    api, sent = scripted_client([answer(503, "1"), answer(429, "2"), "ok"])
    limit = throttle(api, qps=100, burst=100, clock=clock)
    result: list[str] = []
    caller = threading.Thread(target=lambda: result.append(api.rest_client.request("GET", "/x")))
    caller.start()
    assert clock.wait_for_waiters(1, GUARD)
    clock.step(1)  # the first Retry-After
    assert clock.wait_for_waiters(1, GUARD)
    clock.step(2)  # the second
    caller.join(GUARD)
    assert result == ["ok"] and sent == ["GET"] * 3
    assert limit.retried == 2 and limit.requests == 3


def test_an_error_without_retry_after_and_the_last_retry_are_raised() -> None:
    api, sent = scripted_client([answer(409, None)])
    throttle(api)
    with pytest.raises(ApiException) as conflict:
        api.rest_client.request("PUT", "/x")
    assert conflict.value.status == 409 and sent == ["PUT"]

    api, sent = scripted_client([answer(503, "0")] * 3)
    limit = throttle(api, max_retries=2)
    with pytest.raises(ApiException):
        api.rest_client.request("GET", "/x")
    assert len(sent) == 3 and limit.retried == 2


@pytest.mark.parametrize(
    ("url", "group"),
    [("https://h:6443/api/v1/namespaces/a/events", ""),
     ("https://h:6443/apis/apps/v1/namespaces/a/deployments/web", "apps"),
     ("https://h/apis/samplecontroller.k8s.io/v1alpha1/foos?watch=true", "samplecontroller.k8s.io"),
     ("https://h:6443/api/v1/namespaces", ""),
     ("https://h/version", DISCOVERY), ("https://h/apis", DISCOVERY), ("https://h/api", DISCOVERY),
     ("https://h/api/v1", DISCOVERY), ("https://h/apis/apps", DISCOVERY),
     ("https://h/apis/samplecontroller.k8s.io/v1alpha1", DISCOVERY),
     ("https://h/apis/samplecontroller.k8s.io/v1alpha1/", DISCOVERY)],
)  # fmt: skip
def test_the_api_group_of_a_request(url: str, group: str) -> None:
    assert api_group(url) == group


def test_discovery_spends_none_of_a_groups_tokens() -> None:
    """client-go asks discovery through a client of its own (burst 300): the program's check of
    the Foo API, then 10 status writes, go at once; the eleventh write waits."""
    clock = FakeClock()
    api, sent = scripted_client(["ok"] * 12)
    buckets = throttle_per_group(api, qps=5, burst=10, clock=clock)
    api.rest_client.request("GET", "https://h/version")
    api.rest_client.request("GET", "https://h/apis/x.io/v1")
    for _ in range(10):
        api.rest_client.request("PUT", "https://h/apis/x.io/v1/namespaces/a/foos/f/status")
    assert len(sent) == 12 and sorted(buckets) == [DISCOVERY, "x.io"]
    assert (buckets[DISCOVERY].burst, buckets[DISCOVERY].requests) == (DISCOVERY_BURST, 2)
    assert (buckets["x.io"].requests, buckets["x.io"].waited) == (10, 0)


def test_each_api_group_has_a_bucket_of_its_own() -> None:
    """sample-controller's pacing: Events, Deployments and Foos each spend their own 5/10."""
    clock = FakeClock()
    api, sent = scripted_client(["ok"] * 31)
    buckets = throttle_per_group(api, qps=5, burst=10, clock=clock)
    for path in ("/api/v1/events", "/apis/apps/v1/deployments", "/apis/x.io/v1/foos"):
        for _ in range(10):
            api.rest_client.request("POST", f"https://h{path}")  # a burst each: no wait
    assert len(sent) == 30 and sorted(buckets) == ["", "apps", "x.io"]
    assert [buckets[g].waited for g in sorted(buckets)] == [0, 0, 0]
    eleventh = threading.Thread(
        target=lambda: api.rest_client.request("POST", "https://h/apis/apps/v1/deployments")
    )
    eleventh.start()
    assert clock.wait_for_waiters(1, GUARD), "the eleventh Deployment write did not wait"
    clock.step(0.2)
    eleventh.join(GUARD)
    assert (buckets["apps"].requests, buckets["apps"].waited, buckets[""].requests) == (11, 1, 10)
