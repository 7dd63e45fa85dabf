"""Every exercise check says "not attempted", "wrong" and "correct" when it should,
and every stored solution passes its check, against the real cluster.

Each check is also tried with the cheats a learner could reach for: an answer
copied from what the chapter printed, a table of answers remembered from an
earlier run or read off a failure message. Each must be judged wrong, and no
wrong verdict may say what the right answer is.
"""

from __future__ import annotations

import json

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


def test_ch00_exercise_1_wrong_answers_learn_nothing_of_the_answer(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """With two booleans, a message naming the wrong half names the answer: every wrong pair
    gets the same sentence. (True, True) is what the chapter printed: a PATCH that changes
    something gets a new resourceVersion."""
    wrong_pairs = [(True, True), (True, False), (False, False)]
    verdicts = [ch00.check_1(pair, api, namespace) for pair in wrong_pairs]
    assert [verdict.state for verdict in verdicts] == ["wrong"] * 3
    assert len({verdict.detail for verdict in verdicts}) == 1
    assert "does not change" not in verdicts[0].detail


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
    assert ch00.check_2("/apis/apps/v1", api).state == "wrong"  # one path, not two
    scale, crd = solutions00.answer_2
    verdict = ch00.check_2((scale.replace("/apis/apps/v1", "/api/v1"), crd), api)
    assert verdict.state == "wrong" and verdict.detail.startswith("(a)")
    assert "/apis/<group>/<version>" in verdict.detail
    verdict = ch00.check_2(
        (
            scale,
            crd.replace("/customresourcedefinitions", "/namespaces/shop/customresourcedefinitions"),
        ),
        api,
    )
    assert verdict.state == "wrong" and verdict.detail.startswith("(b)")
    assert "cluster-scoped one" in verdict.detail
    assert ch00.check_2(solutions00.answer_2, api).correct


def test_ch00_exercise_2_the_paths_the_chapter_printed_are_wrong(
    api: kubernetes.client.ApiClient,
) -> None:
    """No path the chapter prints, nor the one step from it that the old exercise asked for,
    answers either half; no wrong verdict names the right path."""
    printed = [
        "/api/v1/namespaces/ch00-api-tour/configmaps",
        "/api/v1/namespaces/ch00-api-tour/configmaps/greeting",
        "/apis/apps/v1/namespaces/ch00-api-tour/deployments?limit=1",
        "/apis/apps/v1/namespaces/ch00-api-tour/deployments",
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ch00-api-tour/foos",
        "/apis/samplecontroller.k8s.io/v1alpha1",
        "/apis/apps/v1/namespaces/shop/deployments/web",  # the old exercise's answer
        "/apis/apiextensions.k8s.io/v1",
    ]
    for first in printed:
        for second in printed:
            verdict = ch00.check_2((first, second), api)
            assert verdict.state == "wrong", (first, second)
            assert all(path not in verdict.detail for path in solutions00.answer_2)
    verdict = ch00.check_2(("/apis/apps/v1/namespaces/shop/deployments/web", "x"), api)
    assert "one more segment" in verdict.detail


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


def test_ch00_exercise_3_a_table_of_paths_is_wrong(api: kubernetes.client.ApiClient) -> None:
    """A function that returns remembered paths (the exercise's own example, or paths a
    failure message once printed) fails: the check makes up new names on every run, and
    its wrong verdict does not print the path the client requested."""
    examples = [
        ("v1", "configmaps", "shop", "greeting"),
        ("apps/v1", "deployments", "shop", None),
        ("v1", "nodes", None, "worker"),
        ("samplecontroller.k8s.io/v1alpha1", "foos", "shop", "example-foo"),
        ("apps/v1", "deployments", None, None),
    ]
    remembered = {(*args[:2], args[2] is None): solutions00.path_for(*args) for args in examples}
    asked = []

    def table(api_version, resource, namespace=None, name=None):  # type: ignore[no-untyped-def]
        asked.append((api_version, resource, namespace, name))
        return remembered.get((api_version, resource, namespace is None), "")

    verdict = ch00.check_3(table, api)
    assert verdict.state == "wrong"
    assert solutions00.path_for(*asked[-1]) not in verdict.detail


def test_ch01_exercise_1(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch01.check_1(None, api, namespace).state == "not attempted yet"

    def only_additions(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
        changes, version = solutions01.watch_once(api, path, resource_version, timeout_seconds)
        return [change for change in changes if change[0] == "ADDED"], version

    verdict = ch01.check_1(only_additions, api, namespace)
    assert verdict.state == "wrong" and "exercise-w-" in verdict.detail
    assert ch01.check_1(solutions01.watch_once, api, namespace).correct


def _cell_6_watch(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
    """The chapter's `watch` generator of cell 6 (bookmarks allowed, every line one event)."""
    response = api.call_api(
        path,
        "GET",
        query_params=[
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
            ("allowWatchBookmarks", "true"),
        ],
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=(5, timeout_seconds + 5),
    )
    try:
        for line in iter(response.readline, b""):
            yield json.loads(line)
    finally:
        response.close()
        response.release_conn()


def test_ch01_exercise_1_the_chapters_watch_is_not_the_answer(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """Cell 6's generator, with its events as the changes and the last one's version, is wrong
    (a bookmark is no change); so is it with bookmarks left out but their versions ignored (the
    replay's last object is not its newest), and with bookmarks right but ERROR events passed
    on as events."""

    def cell_6(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
        events = list(_cell_6_watch(api, path, resource_version, timeout_seconds))
        changes = [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]
        version = events[-1]["object"]["metadata"].get("resourceVersion", "") if events else ""
        return changes, version or resource_version

    verdict = ch01.check_1(cell_6, api, namespace)
    assert verdict.state == "wrong" and "bookmark" in verdict.detail

    def no_bookmark_versions(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
        changes, version = [], resource_version
        for event in _cell_6_watch(api, path, resource_version, timeout_seconds):
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                changes.append((event["type"], event["object"]["metadata"]["name"]))
                version = event["object"]["metadata"]["resourceVersion"]
            elif event["type"] == "ERROR":
                raise solutions01.WatchFailed(event["object"]["code"])
        return changes, version

    verdict = ch01.check_1(no_bookmark_versions, api, namespace)
    assert verdict.state == "wrong" and "older than an object the watch replayed" in verdict.detail

    def errors_as_events(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
        changes, version = [], resource_version
        for event in _cell_6_watch(api, path, resource_version, timeout_seconds):
            version = event["object"]["metadata"].get("resourceVersion", version)
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                changes.append((event["type"], event["object"]["metadata"]["name"]))
        return changes, version

    verdict = ch01.check_1(errors_as_events, api, namespace)
    assert verdict.state == "wrong" and "instead of raising WatchFailed" in verdict.detail


def test_ch01_exercise_1_remembered_pairs_are_wrong(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """Pairs remembered from an earlier run, returned without watching anything, fail: the
    check's ConfigMap has a new name, and a new number of changes, on every run. Watching from
    "now" instead of the version given sees nothing."""

    def remembered(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
        pairs = [("ADDED", "exercise-w"), ("MODIFIED", "exercise-w"), ("DELETED", "exercise-w")]
        return pairs, resource_version

    assert ch01.check_1(remembered, api, namespace).state == "wrong"

    def from_now(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
        return solutions01.watch_once(api, path, "", timeout_seconds)

    assert ch01.check_1(from_now, api, namespace).state == "wrong"


def test_ch01_exercise_2(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch01.check_2(None, api, namespace).state == "not attempted yet"
    assert ch01.check_2(410, api, namespace).state == "wrong"
    assert ch01.check_2(("Gone", "Expired"), api, namespace).state == "wrong"
    # What the chapter printed: cell 16's watch and cell 18's exact LIST both got a 410.
    verdict = ch01.check_2((410, 410), api, namespace)
    assert verdict.state == "wrong" and verdict.detail.startswith("(a):")
    verdict = ch01.check_2((200, 200), api, namespace)
    assert verdict.state == "wrong" and verdict.detail.startswith("(b):")
    assert "200" not in verdict.detail and "410" not in verdict.detail
    assert ch01.check_2(solutions01.answer_2, api, namespace).correct


def test_ch01_exercise_2_says_it_cannot_judge_without_etcd(
    api: kubernetes.client.ApiClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFS_WITHOUT_ETCD", "1")
    verdict = ch01.check_2(solutions01.answer_2, api, namespace)
    assert not verdict.correct and verdict.state != "wrong"
    assert "can't check this on a cluster without etcd access" in str(verdict)


def test_ch01_exercise_3(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch01.check_3(None, api, namespace).state == "not attempted yet"
    assert ch01.check_3(3, api, namespace).state == "wrong"
    assert ch01.check_3(2, api, namespace).state == "wrong"  # cell 25 printed "2 requests"
    assert ch01.check_3(solutions01.answer_3, api, namespace).correct
