"""The shared ApiClient's pool of keep-alive connections, on the real cluster.

Every cluster test shares one ``ApiClient`` (the session fixture ``api``) and
so one urllib3 pool, with retries off (``kube.connect``). Two ways a pooled
connection can go bad between two requests, and what each costs:

- the server (or something in between) closes it while it sits in the pool:
  urllib3 sees the end of stream before reusing it and opens a fresh one, so
  the next request works without any retry of ours;
- a caller hands it back with a response still unread (it stopped reading a
  watch early): the next request on it fails with
  ``ResponseNotReady('Request-sent')``. That one is on the caller, and
  ``test_exercises.py`` checks the caller that did it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest

from helpers.faults.tcp_proxy import TcpProxy, proxied_client

pytestmark = pytest.mark.cluster


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[TcpProxy, kubernetes.client.ApiClient]]:
    """An ApiClient, made as the ``api`` fixture makes it, whose connections we can cut."""
    with proxied_client(tmp_path) as proxied:
        yield proxied


def test_a_pooled_connection_closed_by_the_other_side_is_replaced_before_reuse(
    proxied: tuple[TcpProxy, kubernetes.client.ApiClient],
) -> None:
    proxy, api = proxied
    core = kubernetes.client.CoreV1Api(api)
    name = f"t-pooled-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name, "labels": {"course-test": "true"}}})
    opened = proxy.accepted
    assert proxy.cut() >= 1, "the create left no connection in the pool"
    core.delete_namespace(name)  # what the namespace fixture does at teardown, retries off
    assert proxy.accepted == opened + 1, "the DELETE went over a fresh connection"
