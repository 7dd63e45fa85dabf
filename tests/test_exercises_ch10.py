"""Chapter 10's exercise checks say "not attempted", "wrong" and "correct" when they should, say
"wrong" to answers copied from what the chapter printed and to other cheats, never say what the
right answer is, and every stored solution passes its check (check_2 and check_4 against the
real cluster), also after Run All has deleted the chapter's namespace."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from helpers import namespaces
from helpers.exercises import ch10
from notebooks.solutions import ch10 as solutions


@pytest.fixture
def chapter_namespace(api: kubernetes.client.ApiClient) -> Iterator[str]:
    """A namespace the course made, as a chapter's (a check may bring such a one back)."""
    name = namespaces.fresh_namespace(api, f"t-ch10-{uuid.uuid4().hex[:6]}")
    yield name
    namespaces.delete_namespace(api, name)


# --- exercise 1 --------------------------------------------------------------------------------


def test_exercise_1_solution_and_shapes() -> None:
    assert ch10.check_1(None).state == "not attempted yet"
    assert ch10.check_1(solutions.answer_1).correct
    assert ch10.check_1(({1, 3, 6},)).state == "wrong"
    assert ch10.check_1(({"one"}, {1})).state == "wrong"


@pytest.mark.parametrize(
    "cheat",
    [
        ({1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}),  # every sync, every call
        ({3, 6}, {1, 2, 3, 4, 6}),  # forgot that the first call sets the time
        ({1, 3}, {1, 2, 3, 4, 6}),  # Unknown taken for no status at all
        ({1, 3, 6}, {1, 3, 6}),  # True only when the time moves
        ({1, 3, 6}, {1, 2, 3, 4, 5, 6}),  # True even when nothing changed
        ({1, 2, 3, 4, 6}, {1, 3, 6}),  # the two sets swapped
    ],
)
def test_exercise_1_cheats_are_wrong_and_learn_nothing(cheat: tuple[set[int], set[int]]) -> None:
    verdict = ch10.check_1(cheat)
    assert verdict.state == "wrong"
    for secret in ("{1, 3, 6}", "[1, 3, 6]", "{1, 2, 3, 4, 6}", "[1, 2, 3, 4, 6]"):
        assert secret not in verdict.detail


# --- exercise 2 --------------------------------------------------------------------------------


def test_exercise_2_offline_shapes(api: kubernetes.client.ApiClient) -> None:
    assert ch10.check_2(None, api, "unused").state == "not attempted yet"
    assert ch10.check_2({"refused": {"b"}}, api, "unused").state == "wrong"
    assert ch10.check_2({"refused": 5, "data": {}, "owners": {}}, api, "unused").state == "wrong"


@pytest.mark.cluster
def test_exercise_2_solution_is_correct_on_the_cluster(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    assert ch10.check_2(solutions.answer_2, api, chapter_namespace).correct


@pytest.mark.cluster
@pytest.mark.parametrize(
    ("cheat", "part"),
    [
        # The chapter printed one conflict: "the applier that did not force is refused".
        ({"refused": {"b"}, "data": {"a": "9", "b": "3"}, "owners": {"a": "carol", "b": "bob"}},
         "refused"),
        # An update as if it left ownership where it was.
        ({"refused": {"b", "e"}, "data": {"a": "9", "b": "3"},
          "owners": {"a": "alice", "b": "bob"}}, "owners"),
        # The last apply taken to win, as an update would.
        ({"refused": {"b"}, "data": {"a": "1", "b": "2"}, "owners": {"a": "alice", "b": "alice"}},
         "refused"),
        # Nothing refused: a merge for everyone.
        ({"refused": set(), "data": {"a": "1", "b": "2"}, "owners": {"a": "alice", "b": "alice"}},
         "refused"),
    ],
)  # fmt: skip
def test_exercise_2_cheats_are_wrong_and_say_which_part(
    api: kubernetes.client.ApiClient, chapter_namespace: str, cheat: dict[str, Any], part: str
) -> None:
    verdict = ch10.check_2(cheat, api, chapter_namespace)
    assert verdict.state == "wrong" and part in verdict.detail
    assert "carol" not in verdict.detail and "'9'" not in verdict.detail


@pytest.mark.cluster
def test_exercise_2_brings_back_the_namespace_run_all_deleted(
    api: kubernetes.client.ApiClient,
) -> None:
    gone = f"t-ch10-gone-{uuid.uuid4().hex[:6]}"
    try:
        assert ch10.check_2(solutions.answer_2, api, gone).correct
    finally:
        namespaces.delete_namespace(api, gone)


# --- exercise 3 --------------------------------------------------------------------------------


def test_exercise_3_solution_and_shapes() -> None:
    assert ch10.check_3(None).state == "not attempted yet"
    assert ch10.check_3("not a function").state == "wrong"
    assert ch10.check_3(solutions.summary_ready).correct


def _ignores_polarity(conditions: list[dict], normal: dict[str, str]) -> tuple[str, str, str]:
    """Every True is good: what a reader of positive conditions alone would write."""
    for found in conditions:
        if found["type"] in normal and found["status"] == "False":
            return "False", found["reason"], found["message"]
    return "True", "AllNormal", ""


def _missing_is_false(conditions: list[dict], normal: dict[str, str]) -> tuple[str, str, str]:
    by_type = {found["type"]: found for found in conditions}
    for type_, good in normal.items():
        found = by_type.get(type_)
        if found is None:
            return "False", "Missing", f"{type_} missing"
        if found["status"] in ("True", "False") and found["status"] != good:
            return "False", found["reason"], found["message"]
    return "True", "AllNormal", ""


def _list_order(conditions: list[dict], normal: dict[str, str]) -> tuple[str, str, str]:
    """Right, except that it walks the conditions in their own order, not normal's."""
    unknown = None
    for found in conditions:
        good = normal.get(found["type"])
        if good is not None and found["status"] in ("True", "False") and found["status"] != good:
            return "False", found["reason"], found["message"]
    for type_ in normal:
        if not any(f["type"] == type_ and f["status"] in ("True", "False") for f in conditions):
            unknown = unknown or type_
    return ("Unknown", "Unknown", f"{unknown} unknown") if unknown else ("True", "AllNormal", "")


def _mutates(conditions: list[dict], normal: dict[str, str]) -> tuple[str, str, str]:
    conditions.reverse()  # changes what it was given: the cache is everyone's
    return solutions.summary_ready(conditions, normal)


@pytest.mark.parametrize("cheat", [_ignores_polarity, _missing_is_false, _list_order, _mutates])
def test_exercise_3_cheats_are_wrong(cheat: Any) -> None:
    assert ch10.check_3(cheat).state == "wrong"


def test_exercise_3_says_what_it_raised() -> None:
    def broken(conditions: list[dict], normal: dict[str, str]) -> tuple[str, str, str]:
        return conditions[99]

    verdict = ch10.check_3(broken)
    assert verdict.state == "wrong" and "IndexError" in verdict.detail


# --- exercise 4 --------------------------------------------------------------------------------


def test_exercise_4_offline_shapes(api: kubernetes.client.ApiClient) -> None:
    assert ch10.check_4(None, api, "unused").state == "not attempted yet"
    assert ch10.check_4("self == oldSelf", api, "unused").state == "wrong"
    assert ch10.check_4({"rule": "true", "message": ""}, api, "unused").state == "wrong"


@pytest.mark.cluster
def test_exercise_4_solution_is_correct_on_the_cluster(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    assert ch10.check_4(solutions.rule_4, api, chapter_namespace).correct


@pytest.mark.cluster
@pytest.mark.parametrize(
    ("cheat", "says"),
    [
        # The chapter's own rule, on spec: it says nothing of deploymentName.
        ({"rule": "true", "message": "fine"}, "changing deploymentName was accepted"),
        ({"rule": "self == oldSelf", "message": "frozen"}, "scaling a Foo was refused"),
        ({"rule": "self.deploymentName == oldSelf.deploymentName", "message": "no rename"},
         "could not get one"),
        ({"rule": "!has(oldSelf.deploymentName) || !has(self.deploymentName) || "
                  "self.deploymentName == oldSelf.deploymentName", "message": "no rename"},
         "taking deploymentName away was accepted"),
        ({"rule": "self.nope(", "message": "x"}, "did not take the rule"),
    ],
)  # fmt: skip
def test_exercise_4_cheats_are_wrong(
    api: kubernetes.client.ApiClient, chapter_namespace: str, cheat: dict[str, str], says: str
) -> None:
    verdict = ch10.check_4(cheat, api, chapter_namespace)
    assert verdict.state == "wrong" and says in verdict.detail, verdict
    assert "has(oldSelf" not in verdict.detail  # the answer's shape is never given away


@pytest.mark.cluster
def test_exercise_4_leaves_the_crd_as_it_found_it(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    extensions = kubernetes.client.ApiextensionsV1Api(api)

    def spec_schema() -> dict[str, Any]:
        crd = api.sanitize_for_serialization(
            extensions.read_custom_resource_definition("foos.samplecontroller.k8s.io")
        )
        return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]

    before = spec_schema()
    ch10.check_4(solutions.rule_4, api, chapter_namespace)
    assert spec_schema() == before
