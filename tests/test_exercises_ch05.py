"""Chapter 05's exercise checks say "not attempted", "wrong" and "correct" when they should,
and every stored solution passes its check (1, 3 and 4 against the real cluster)."""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from helpers.controller import new_deployment
from helpers.exercises import ch05
from notebooks.solutions import ch05 as solutions


@pytest.mark.cluster
def test_exercise_1_deleted_while_down(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch05.check_1(None, api, namespace).state == "not attempted yet"
    assert ch05.check_1("e", api, namespace).state == "wrong"
    verdict = ch05.check_1("d", api, namespace)  # the resync: the check switched it off
    assert verdict.state == "wrong" and "resync off" in verdict.detail
    verdict = ch05.check_1(solutions.answer_1, api, namespace)
    assert verdict.correct and "no resync" in verdict.detail


def test_exercise_2_labels() -> None:
    assert ch05.check_2(None).state == "not attempted yet"

    def everywhere(foo: Any) -> dict[str, Any]:
        """Plausible and wrong: the labels in the selector and the Pod template too."""
        deployment = new_deployment(foo)
        labels = foo["metadata"].get("labels") or {}
        deployment["metadata"]["labels"] = dict(labels)
        deployment["spec"]["selector"]["matchLabels"].update(labels)
        deployment["spec"]["template"]["metadata"]["labels"].update(labels)
        return deployment

    verdict = ch05.check_2(everywhere)
    assert verdict.state == "wrong" and "selector" in verdict.detail

    def shares_the_foos_dict(foo: Any) -> dict[str, Any]:
        """Wrong in a quieter way: it writes into the Foo's own labels."""
        deployment = new_deployment(foo)
        labels = foo["metadata"].setdefault("labels", {})
        deployment["metadata"]["labels"] = labels
        return deployment

    verdict = ch05.check_2(shares_the_foos_dict)
    assert verdict.state == "wrong" and "changed the Foo" in verdict.detail

    assert ch05.check_2(new_deployment).state == "wrong"
    assert ch05.check_2(solutions.labelled_deployment).correct


def test_exercise_3_a_wrong_shape_is_judged_without_the_cluster() -> None:
    """Answers that are not three counts: the old exercise's letter, a table whose values equal
    anything, a dict that says it equals anything. None of them reaches the cluster."""

    class Anything:
        def __eq__(self, other: object) -> bool:
            return True

    class AgreesWithEverything(dict):
        def __eq__(self, other: object) -> bool:
            return True

    unused: Any = None  # the cluster is never asked
    assert ch05.check_3(None, unused, "unused").state == "not attempted yet"
    for cheat in [
        "c",
        {"a": Anything(), "b": Anything(), "available": Anything()},
        AgreesWithEverything(a=2, b=3, available=3),
        {"a": 2, "b": 3},
        {"a": True, "b": 3, "available": 3},
    ]:
        verdict = ch05.check_3(cheat, unused, "unused")
        assert verdict.state == "wrong" and "dict" in verdict.detail, (cheat, verdict)


@pytest.mark.cluster
def test_exercise_3_renamed_deployment(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """What the chapter printed (one Deployment that follows its Foo, as example-foo's did) and
    another plausible answer are wrong, with the same sentence, which gives neither count away;
    the solution is right, on the cluster."""
    printed = {"a": None, "b": 3, "available": 3}
    both_follow = {"a": 3, "b": 3, "available": 6}
    verdicts = [ch05.check_3(answer, api, namespace) for answer in (printed, both_follow)]
    assert [verdict.state for verdict in verdicts] == ["wrong", "wrong"], verdicts
    assert len({verdict.detail for verdict in verdicts}) == 1
    assert not any(char.isdigit() for char in verdicts[0].detail), verdicts[0].detail
    verdict = ch05.check_3(solutions.answer_3, api, namespace)
    assert verdict.correct, verdict
    assert "keeps its 2 replicas" in verdict.detail


def test_exercise_4_dry_mistakes() -> None:
    """Plausible mistakes are caught on cached objects, before the cluster is used."""
    assert ch05.check_4(None, None, "unused").state == "not attempted yet"  # type: ignore[arg-type]

    def writes_into_the_cache(foo: Any, deployment: Any, clients: Any) -> None:
        """The classic: the status set on the cached Foo itself."""
        namespace = foo["metadata"]["namespace"]
        if deployment is None:
            deployment = clients.create_deployment(namespace, new_deployment(foo))
        foo["status"] = {
            "availableReplicas": (deployment.get("status") or {}).get("availableReplicas", 0)
        }
        clients.update_foo_status(namespace, foo)

    verdict = ch05.check_4(writes_into_the_cache, None, "unused")  # type: ignore[arg-type]
    assert verdict.state == "wrong" and "deep copy" in verdict.detail

    def adopts(foo: Any, deployment: Any, clients: Any) -> None:
        """Right except that it takes over somebody else's Deployment."""
        namespace = foo["metadata"]["namespace"]
        if deployment is None or deployment["spec"].get("replicas") != foo["spec"]["replicas"]:
            verb = clients.create_deployment if deployment is None else clients.update_deployment
            deployment = verb(namespace, new_deployment(foo))
        status = {"availableReplicas": (deployment.get("status") or {}).get("availableReplicas", 0)}
        clients.update_foo_status(namespace, {**foo, "status": status})

    verdict = ch05.check_4(adopts, None, "unused")  # type: ignore[arg-type]
    assert verdict.state == "wrong" and "somebody else's" in verdict.detail


@pytest.mark.cluster
def test_exercise_4_reconcile_on_the_cluster(
    api: kubernetes.client.ApiClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def status_without_version(foo: Any, deployment: Any, clients: Any) -> None:
        """Right on recording clients; the API server refuses a Foo without its resourceVersion."""
        metadata = {k: v for k, v in foo["metadata"].items() if k != "resourceVersion"}
        bare = {**foo, "metadata": metadata}
        solutions.reconcile(bare, deployment, clients)

    monkeypatch.setattr(ch05, "TIMEOUT", 10.0)
    verdict = ch05.check_4(status_without_version, api, namespace)
    assert verdict.state == "wrong" and "on the cluster" in verdict.detail, verdict
    assert "resourceVersion" in verdict.detail, verdict
    monkeypatch.undo()

    verdict = ch05.check_4(solutions.reconcile, api, namespace)
    assert verdict.correct, verdict
    assert "untouched" in verdict.detail
