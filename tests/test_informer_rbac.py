"""A service account that may list but not watch: the informer backs off and says why.

client-go's reflector backs off exponentially (0.8 s doubling, with jitter, to
30 s) on every failed watch, so a missing permission costs the API server
about one request per second at first and far fewer later. The message must
name the permission to grant. benchmarks/forbidden_watch.py measures the
same situation for the official client's SharedInformer.
"""

from __future__ import annotations

import logging
import threading

import kubernetes
import pytest

from helpers.informer import SharedInformer, wait_for_cache_sync
from helpers.listwatch import ListWatch
from helpers.rbac import service_account_client

pytestmark = pytest.mark.cluster

LIST_ONLY = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]
WINDOW_SECONDS = 8.0


def test_forbidden_watch_backs_off_and_names_the_permission(
    api: kubernetes.client.ApiClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="helpers.reflector")
    client = service_account_client(api, namespace, "list-only", LIST_ONLY)
    informer = SharedInformer(
        ListWatch(client, f"/api/v1/namespaces/{namespace}/configmaps"), name="list-only"
    )
    informer.start()
    try:
        # Listing is allowed, so the cache syncs; every watch is then refused.
        assert wait_for_cache_sync(informer, timeout=30)
        assert informer.reflector.wait_for(lambda r: r.errors >= 1, 30)
        watches_before = informer.reflector.watches
        threading.Event().wait(WINDOW_SECONDS)  # a measurement window, not synchronisation
        attempts = informer.reflector.watches - watches_before
    finally:
        informer.stop()
        assert informer.join(10)

    rate = attempts / WINDOW_SECONDS
    assert rate <= 1.0, f"{attempts} watch attempts in {WINDOW_SECONDS:.0f} s: no backoff"
    message = informer.reflector.last_error_message or ""
    assert "list-only" in message and "watch" in message and "configmaps" in message, message
    assert "watch" in caplog.text
