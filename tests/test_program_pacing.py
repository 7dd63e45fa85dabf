"""The program paces its client as client-go paces sample-controller's (QPS 5, burst 10)."""

from __future__ import annotations

import time

import kubernetes
import pytest

from helpers import kube
from helpers.program import connect_paced, parse_args
from helpers.throttle import DEFAULT_BURST, DEFAULT_QPS, DISCOVERY


def test_the_defaults_are_client_gos() -> None:
    options = parse_args([])
    assert (options.kube_api_qps, options.kube_api_burst) == (DEFAULT_QPS, DEFAULT_BURST) == (5, 10)


@pytest.mark.parametrize("flag", ["--kube-api-qps=0", "--kube-api-burst=0", "--kube-api-qps=x"])
def test_a_bad_pace_is_refused_in_one_sentence(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args([flag])
    assert exited.value.code == 2
    assert "kube-api" in capsys.readouterr().err


@pytest.mark.cluster
def test_requests_wait_for_their_token() -> None:
    """At 2 requests a second with a burst of 1, four requests to one group take at least 1.5 s.

    ``connect``'s probe asks ``/version``, a discovery request: it draws on the discovery
    bucket (as client-go's discovery client has its own), so the core group's bucket is
    full when the clock starts and the first read takes its one token at once.
    """
    options = parse_args(["--kubeconfig", str(kube.default_kubeconfig()),
                          "--kube-api-qps", "2", "--kube-api-burst", "1"])  # fmt: skip
    api, buckets = connect_paced(options)
    core = kubernetes.client.CoreV1Api(api)
    started = time.monotonic()
    for _ in range(4):
        core.read_namespace("default")
    elapsed = time.monotonic() - started
    assert elapsed >= 1.5 - 0.05, f"4 reads at 2/s with a burst of 1 took {elapsed:.2f} s"
    assert (buckets[""].requests, buckets[DISCOVERY].requests) == (4, 1)
