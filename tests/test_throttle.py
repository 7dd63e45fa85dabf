"""The client-side throttle: client-go's QPS/Burst token bucket in front of every request."""

from __future__ import annotations

import threading

import kubernetes
import pytest

from helpers import kube
from helpers.clock import FakeClock
from helpers.throttle import Throttle, throttle

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
