"""helpers.waiting.wait_for follows a watch until a condition holds, for typed and custom lists.

It also keeps its deadline when a connection goes silent: the tests at the end
send wait_for's requests through a proxy that stalls them (open, but nothing
crosses), the failure only a client-side read timeout notices.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from helpers import waiting
from helpers.errors import CourseError
from helpers.faults.tcp_proxy import TcpProxy, proxied_client
from helpers.waiting import last_seen, wait_for

pytestmark = pytest.mark.cluster

FOO = {"group": "samplecontroller.k8s.io", "version": "v1alpha1", "plural": "foos"}


def foo(name: str) -> dict[str, object]:
    return {
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": name},
        "spec": {"deploymentName": name, "replicas": 1},
    }


def test_custom_objects_already_there(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """A raw (dict) list answer: objects by name, as plain dicts."""
    custom = kubernetes.client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(namespace=namespace, body=foo("there"), **FOO)

    objects = wait_for(
        custom.list_namespaced_custom_object,
        lambda foos: "there" in foos,
        what="Foo there",
        timeout=10,
        namespace=namespace,
        **FOO,
    )

    assert objects["there"]["spec"] == {"deploymentName": "there", "replicas": 1}


def test_custom_objects_followed_by_watch(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """The condition turns true only through a change made after the list: seen on the watch."""
    custom = kubernetes.client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(namespace=namespace, body=foo("later"), **FOO)
    listed = threading.Event()

    def list_then_signal(**kwargs: object) -> object:
        result = custom.list_namespaced_custom_object(**kwargs)
        if not kwargs.get("watch"):
            listed.set()
        return result

    def write_status() -> None:
        listed.wait(10)
        current = custom.get_namespaced_custom_object(namespace=namespace, name="later", **FOO)
        current["status"] = {"availableReplicas": 1}
        custom.replace_namespaced_custom_object_status(
            namespace=namespace, name="later", body=current, **FOO
        )

    writer = threading.Thread(target=write_status, name="status-writer")
    writer.start()
    try:
        objects = wait_for(
            list_then_signal,
            lambda foos: (foos["later"].get("status") or {}).get("availableReplicas") == 1,
            what="Foo later to report 1 available replica",
            timeout=10,
            namespace=namespace,
            **FOO,
        )
    finally:
        writer.join(10)

    assert objects["later"]["status"] == {"availableReplicas": 1}


def test_typed_lists_still_work_and_time_out_with_a_sentence(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)

    core.create_namespaced_config_map(namespace, {"metadata": {"name": "present"}})
    with pytest.raises(CourseError, match="Timed out after 1s waiting for a ConfigMap never"):
        try:
            wait_for(
                core.list_namespaced_config_map,
                lambda configmaps: "never" in configmaps,
                what="a ConfigMap never",
                timeout=1,
                namespace=namespace,
            )
        except CourseError as exc:
            # What it saw: the new namespace's kube-root-ca.crt may or may not be there yet.
            assert "; it last saw " in exc.problem and "present" in exc.problem, exc.problem
            raise


def test_a_timeout_says_what_was_last_seen() -> None:
    pending = {
        "metadata": {"name": "web-2"},
        "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"},
                                                      {"type": "PodScheduled", "status": "False"}]},
    }  # fmt: skip
    running = {
        "metadata": {"name": "web-1", "deletionTimestamp": "2026-12-03T20:00:00Z"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert last_seen({"web-2": pending, "web-1": running}) == (
        "it last saw 2: web-1 (Running, Ready=True, being deleted); web-2 (Pending, Ready=False)"
    )
    many = {f"cm-{i}": {"metadata": {"name": f"cm-{i}"}} for i in range(7)}
    assert last_seen(many) == "it last saw 7: cm-0; cm-1; cm-2; cm-3; cm-4 and 2 more"
    assert last_seen({}) == "it last saw none"
    assert last_seen(None) == "the list itself never answered"


# -- a connection that goes silent --------------------------------------------------


@pytest.fixture
def proxied(api: kubernetes.client.ApiClient, tmp_path: Path) -> Iterator[tuple]:
    """A TcpProxy to the API server, and an ApiClient whose connections go through it."""
    with proxied_client(tmp_path) as proxied:
        yield proxied


def finishes_within(limit: float, proxy: TcpProxy, call: Callable[[], Any]) -> Any:
    """``call()``'s result (or exception), failing the test if it is still blocked after ``limit``.

    A wait_for without a read timeout would block for ever; cutting the proxy's
    connections then frees the thread, so the test reports instead of hanging.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="wait-for-under-test")
    started = time.monotonic()
    thread.start()
    thread.join(limit)
    hung = thread.is_alive()
    while thread.is_alive():
        proxy.cut()
        thread.join(1)
    assert not hung, f"wait_for was still blocked after {limit:.0f}s on a silent connection"
    outcome["seconds"] = time.monotonic() - started
    return outcome


def test_a_silent_connection_does_not_outlive_the_deadline(proxied: tuple, namespace: str) -> None:
    proxy, client = proxied
    core = kubernetes.client.CoreV1Api(client)

    def list_then_stall(**kwargs: Any) -> Any:
        listed = core.list_namespaced_config_map(**kwargs)
        if not kwargs.get("watch"):
            proxy.stall()  # the pooled connection the watch will use goes quiet
        return listed

    outcome = finishes_within(
        20,
        proxy,
        lambda: wait_for(
            list_then_stall,
            lambda configmaps: "never" in configmaps,
            what="a ConfigMap never",
            timeout=4,
            namespace=namespace,
        ),
    )

    assert isinstance(outcome.get("error"), CourseError), outcome
    assert "Timed out after 4s" in outcome["error"].problem
    assert outcome["seconds"] < 4 + waiting.PAST_DEADLINE_SECONDS + 1


def test_after_a_silent_watch_it_lists_again_and_sees_the_change(
    api: kubernetes.client.ApiClient,
    proxied: tuple,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(waiting, "WATCH_SECONDS", 2)  # short windows, so the test is short
    proxy, client = proxied
    core = kubernetes.client.CoreV1Api(client)
    direct = kubernetes.client.CoreV1Api(api)
    stalled = threading.Event()

    def list_then_stall_once(**kwargs: Any) -> Any:
        listed = core.list_namespaced_config_map(**kwargs)
        if not kwargs.get("watch") and not stalled.is_set():
            stalled.set()
            proxy.stall()
            # Made after the list, on a connection of its own: only a watch or a new list sees it.
            direct.create_namespaced_config_map(namespace, {"metadata": {"name": "later"}})
        return listed

    outcome = finishes_within(
        25,
        proxy,
        lambda: wait_for(
            list_then_stall_once,
            lambda configmaps: "later" in configmaps,
            what="ConfigMap later",
            timeout=20,
            namespace=namespace,
        ),
    )

    assert "later" in outcome.get("result", {}), outcome
    assert outcome["seconds"] < 2 + waiting.READ_GRACE_SECONDS + 5
