"""The program paces its client as client-go paces sample-controller's (QPS 5, burst 10)."""

from __future__ import annotations

import time

import kubernetes
import pytest

from helpers import kube
from helpers.program import connect, parse_args
from helpers.throttle import DEFAULT_BURST, DEFAULT_QPS


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
    """At 2 requests a second with a burst of 1, four requests cannot take less than 1.5 s.

    The clock starts before ``connect``, whose probe takes the first token: timed from
    after it, a slow probe would eat into the 1.5 s and the bound would not hold.
    """
    options = parse_args(["--kubeconfig", str(kube.default_kubeconfig()),
                          "--kube-api-qps", "2", "--kube-api-burst", "1"])  # fmt: skip
    started = time.monotonic()
    api = connect(options)  # its probe takes the first token
    core = kubernetes.client.CoreV1Api(api)
    for _ in range(3):
        core.read_namespace("default")
    assert time.monotonic() - started >= 1.5 - 0.05
