"""Every exercise check says "not attempted", "wrong" and "correct" when it should,
and every stored solution passes its check, against the real cluster."""

from __future__ import annotations

import kubernetes
import pytest

from helpers.exercises import ch00, ch01
from notebooks.solutions import ch00 as solutions00
from notebooks.solutions import ch01 as solutions01

pytestmark = pytest.mark.cluster


def test_ch00_exercise_1(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch00.check_1(None, api, namespace).state == "not attempted yet"
    verdict = ch00.check_1((True, True), api, namespace)
    assert verdict.state == "wrong" and "Hint" in verdict.detail
    assert ch00.check_1("no", api, namespace).state == "wrong"
    assert ch00.check_1(solutions00.answer_1, api, namespace).correct


def test_ch00_exercise_1_brings_a_deleted_namespace_back(api: kubernetes.client.ApiClient) -> None:
    """After Run All the chapter's last cell has deleted its namespace; the check still judges."""
    gone = "ch00-exercise-gone"
    core = kubernetes.client.CoreV1Api(api)
    try:
        assert ch00.check_1(solutions00.answer_1, api, gone).correct
    finally:
        core.delete_namespace(gone)


def test_ch00_exercise_2(api: kubernetes.client.ApiClient) -> None:
    assert ch00.check_2(None, api).state == "not attempted yet"
    verdict = ch00.check_2("/api/v1/namespaces/shop/deployments/web", api)
    assert verdict.state == "wrong" and "/apis/<group>/<version>" in verdict.detail
    verdict = ch00.check_2("/apis/apps/v1/deployments/web", api)
    assert verdict.state == "wrong" and "/namespaces/" in verdict.detail
    assert ch00.check_2(solutions00.answer_2, api).correct


def test_ch00_exercise_3(api: kubernetes.client.ApiClient) -> None:
    assert ch00.check_3(None, api).state == "not attempted yet"

    def always_apis(api_version, resource, namespace=None, name=None):  # type: ignore[no-untyped-def]
        return solutions00.path_for(api_version, resource, namespace, name).replace(
            "/api/v1", "/apis/v1"
        )

    verdict = ch00.check_3(always_apis, api)
    assert verdict.state == "wrong" and "/api/v1, not /apis" in verdict.detail
    verdict = ch00.check_3(lambda api_version, resource, namespace, name: 1 / 0, api)
    assert verdict.state == "wrong" and "ZeroDivisionError" in verdict.detail
    assert ch00.check_3(solutions00.path_for, api).correct


def test_ch01_exercise_1(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch01.check_1(None, api, namespace).state == "not attempted yet"

    def only_additions(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
        for kind, name in solutions01.watch_from(api, path, resource_version, timeout_seconds):
            if kind == "ADDED":
                yield kind, name

    verdict = ch01.check_1(only_additions, api, namespace)
    assert verdict.state == "wrong" and "exercise-w" in verdict.detail
    assert ch01.check_1(solutions01.watch_from, api, namespace).correct


def test_ch01_exercise_2(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch01.check_2(None, api, namespace).state == "not attempted yet"
    verdict = ch01.check_2((410, "Gone"), api, namespace)
    assert verdict.state == "wrong" and "reason" in verdict.detail
    assert ch01.check_2(solutions01.answer_2, api, namespace).correct
    assert ch01.check_2(410, api, namespace).state == "wrong"


def test_ch01_exercise_2_says_it_cannot_judge_without_etcd(
    api: kubernetes.client.ApiClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFS_WITHOUT_ETCD", "1")
    verdict = ch01.check_2(solutions01.answer_2, api, namespace)
    assert not verdict.correct and verdict.state != "wrong"
    assert "can't check this on a cluster without etcd access" in str(verdict)


def test_ch01_exercise_2_hands_the_pool_no_half_read_stream(
    api: kubernetes.client.ApiClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The expired watch stops reading at its ERROR event, before the stream's end.

    A connection handed back to the shared pool with the rest of its response
    unread breaks the next request that picks it before the server's last chunk
    arrives: ``ResponseNotReady('Request-sent')``, seen in CI at this file's
    namespace teardown. Which comes first is a race, so check what decides it:
    every stream the check opened is closed (read to its end, or cut) by the
    time it returns.
    """
    streams = []
    call_api = api.call_api

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        response = call_api(*args, **kwargs)
        if kwargs.get("_preload_content") is False:
            streams.append(response)
        return response

    monkeypatch.setattr(api, "call_api", recording)
    assert ch01.check_2(solutions01.answer_2, api, namespace).correct
    assert streams, "the check opened no stream"
    assert [response.closed for response in streams] == [True] * len(streams)


def test_ch01_exercise_3(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch01.check_3(None, api, namespace).state == "not attempted yet"
    assert ch01.check_3(3, api, namespace).state == "wrong"
    assert ch01.check_3(solutions01.answer_3, api, namespace).correct
