"""Chapter 03's exercise checks say "not attempted", "wrong" and "correct" when they should,
and every stored solution passes its check."""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from helpers.exercises import ch03
from helpers.lister import Lister
from notebooks.solutions import ch03 as solutions


def test_ch03_exercise_1() -> None:
    assert ch03.check_1(None).state == "not attempted yet"

    def as_a_string(obj: Any) -> Any:  # a str is iterated as its characters
        return (obj["metadata"].get("labels") or {}).get("app", "")

    verdict = ch03.check_1(as_a_string)
    assert verdict.state == "wrong" and "values" in verdict.detail

    def no_default(obj: Any) -> list[str]:
        return [obj["metadata"]["labels"]["app"]]

    verdict = ch03.check_1(no_default)
    assert verdict.state == "wrong" and "KeyError" in verdict.detail
    assert ch03.check_1(solutions.app_index).correct


def test_ch03_exercise_2() -> None:
    assert ch03.check_2(None, Lister).state == "not attempted yet"

    def every_namespace(lister: Any, namespace: str, name: str) -> list[str] | None:
        colour = lister.namespace(namespace).get(name)["metadata"]["labels"]["colour"]
        return sorted(o["metadata"]["name"] for o in lister.list({"colour": colour})
                      if o["metadata"]["name"] != name)  # fmt: skip

    verdict = ch03.check_2(every_namespace, Lister)
    assert verdict.state == "wrong" and "a/apple" in verdict.detail
    assert ch03.check_2(solutions.same_colour, Lister).correct


@pytest.mark.cluster
def test_ch03_exercise_3(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch03.check_3(None, api, namespace).state == "not attempted yet"

    class OnlyObjects:
        def __init__(self) -> None:
            self.deletes = 0
            self.tombstones = 0

        def on_delete(self, obj: Any) -> None:
            obj["metadata"]["name"]  # a tombstone is not a dict: this raises for it
            self.deletes += 1

    verdict = ch03.check_3(OnlyObjects, api, namespace)
    assert verdict.state == "wrong" and "tombstone" in verdict.detail
    assert ch03.check_3(solutions.DeleteCounter, api, namespace).correct


@pytest.mark.cluster
def test_ch03_exercise_4(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch03.check_4(None, api, namespace).state == "not attempted yet"
    assert ch03.check_4(5, api, namespace).state == "wrong"
    assert ch03.check_4(solutions.answer_4, api, namespace).correct
