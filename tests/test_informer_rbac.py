"""A service account that may list but not watch: the informer backs off and says why.

client-go's reflector backs off exponentially (0.8 s doubling, with jitter, to
30 s) on every failed watch, so a missing permission costs the API server
about one request per second at first and far fewer later. The message must
name the permission to grant. benchmarks/forbidden_watch.py measures the
same situation for the official client's SharedInformer.

The requests and their 403s are real; only the backoff's clock is fake, so the
test counts attempts per backoff wait exactly instead of sampling a window of
real time.
"""

from __future__ import annotations

import logging
import random

import kubernetes
import pytest

from helpers.backoff import Backoff
from helpers.clock import FakeClock, RealClock
from helpers.informer import SharedInformer, wait_for_cache_sync
from helpers.listwatch import ListWatch
from helpers.rbac import service_account_client

pytestmark = pytest.mark.cluster

LIST_ONLY = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]
GUARD = 30.0
ROUNDS = 8


class RecordingBackoff(Backoff):
    """A Backoff that remembers every delay it handed out."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.delays: list[float] = []

    def next_delay(self) -> float:
        delay = super().next_delay()
        self.delays.append(delay)
        return delay


def test_forbidden_watch_backs_off_and_names_the_permission(
    api: kubernetes.client.ApiClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="helpers.reflector")
    client = service_account_client(api, namespace, "list-only", LIST_ONLY)
    clock = FakeClock()
    backoff = RecordingBackoff(clock=clock, rng=random.Random(4))
    informer = SharedInformer(
        ListWatch(client, f"/api/v1/namespaces/{namespace}/configmaps"),
        name="list-only",
        backoff=backoff,
        clock=RealClock(),  # only the backoff runs on the fake clock, nothing else parks on it
    )
    reflector = informer.reflector
    informer.start()
    attempts_per_wait = []
    try:
        # Listing is allowed, so the cache syncs; every watch is then refused.
        assert wait_for_cache_sync(informer, timeout=GUARD)
        for _ in range(ROUNDS):
            # Refused, the reflector parks on the (fake) clock: no request while time stands.
            assert clock.wait_for_waiters(1, timeout=GUARD), "the reflector did not back off"
            watches, waits = reflector.watches, reflector.backoff_waits
            clock.step(backoff.delays[-1])
            assert reflector.wait_for(lambda r, before=waits: r.backoff_waits > before, GUARD)
            attempts_per_wait.append(reflector.watches - watches)
    finally:
        informer.stop()
        assert informer.join(10)

    assert attempts_per_wait == [1] * ROUNDS, "one watch attempt per backoff wait, no more"
    bases = [min(0.8 * 2**n, 30.0) for n in range(ROUNDS)]
    for delay, base in zip(backoff.delays, bases, strict=False):
        assert base <= delay <= 2 * base, (backoff.delays, bases)
    rate = ROUNDS / sum(backoff.delays[:ROUNDS])
    assert rate <= 1.0, f"{ROUNDS} watch attempts in {sum(backoff.delays):.1f} s of backoff"
    message = reflector.last_error_message or ""
    assert "list-only" in message and "watch" in message and "configmaps" in message, message
    assert "watch" in caplog.text
