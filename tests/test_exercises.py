"""Every exercise check says "not attempted", "wrong" and "correct" when it should,
and every stored solution passes its check, against the real cluster.

Each check is also tried with the cheats a learner could reach for: an answer
copied from what the chapter printed, a table of answers remembered from an
earlier run or read off a failure message. Each must be judged wrong, and no
wrong verdict may say what the right answer is.
"""

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
        for kind, name in solutions01.watch_from(api, path, resource_version, timeout_seconds):
            if kind == "ADDED":
                yield kind, name

    verdict = ch01.check_1(only_additions, api, namespace)
    assert verdict.state == "wrong" and "exercise-w-" in verdict.detail
    assert ch01.check_1(solutions01.watch_from, api, namespace).correct


def test_ch01_exercise_1_a_generator_of_remembered_pairs_is_wrong(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """The three pairs the exercise used to expect, yielded without watching anything, fail:
    the check's ConfigMap has a new name, and a new number of changes, on every run."""

    def remembered(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
        yield from [("ADDED", "exercise-w"), ("MODIFIED", "exercise-w"), ("DELETED", "exercise-w")]

    assert ch01.check_1(remembered, api, namespace).state == "wrong"

    def from_now(api, path, resource_version, timeout_seconds):  # type: ignore[no-untyped-def]
        # Watches, but from "now" instead of the version it is given: sees nothing.
        yield from solutions01.watch_from(api, path, "", timeout_seconds)

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
