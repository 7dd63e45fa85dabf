"""Chapter 09's exercise checks: each planted bug, each check both ways.

A check must say "correct" to a test that passes on chapter 05's FooController
and fails on the planted bug (the stored solutions), and "wrong" to a test that
always passes, to one that always fails, and to the chapter's own tests, copied
from the notebook as the chapter prints them (they were written before the
exercises' bugs, and must not catch them).
"""

from __future__ import annotations

import ast
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from helpers import namespaces
from helpers.exercises import ch09
from helpers.testing.pytest_file import HEADER
from notebooks.solutions import ch09 as solutions

CHAPTER = Path(__file__).resolve().parents[1] / "notebooks" / "09_testing_a_controller.ipynb"
CHAPTER_TESTS = (
    "test_sync_handler",
    "test_converges",
    "test_conflict_is_retried_with_a_fresh_read",
)


def chapter_tests() -> dict[str, Callable[..., Any]]:
    """The chapter's test functions, from the notebook's cells, under the header of the test file
    the chapter writes: what a learner who copied them would have."""
    found: dict[str, str] = {}
    for cell in json.loads(CHAPTER.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or source.startswith("#|"):
            continue
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name in CHAPTER_TESTS:
                found[node.name] = ast.get_source_segment(source, node) or ""
    assert set(found) == set(CHAPTER_TESTS), f"the chapter's tests moved: found {sorted(found)}"
    namespace: dict[str, Any] = {}
    exec(HEADER + "\n\n".join(found.values()), namespace)  # the chapter's own code
    return {name: namespace[name] for name in CHAPTER_TESTS}


@pytest.fixture
def course_namespace(api: kubernetes.client.ApiClient) -> Iterator[str]:
    """A namespace the course made (the checks bring the chapter's back, and refuse one that is
    not the course's, as conftest's ``namespace`` is not), deleted afterwards."""
    name = namespaces.fresh_namespace(api, f"t-ch09-exercises-{uuid.uuid4().hex[:6]}")
    yield name
    namespaces.delete_namespace(api, name)


def always_passes(controller_class: Any) -> None:
    pass


def always_fails(controller_class: Any) -> None:
    raise AssertionError("never happy")


CHECKS = {"1": ch09.check_1, "2": ch09.check_2, "3": ch09.check_3, "4": ch09.check_4}


def check(exercise: str, test: Any, api: kubernetes.client.ApiClient, namespace: str) -> Any:
    return CHECKS[exercise](test, api, namespace)


@pytest.mark.parametrize("exercise", ["2", "3"])
def test_the_offline_checks_judge_without_a_cluster(exercise: str) -> None:
    offline = CHECKS[exercise]
    assert offline(None).state == "not attempted yet"
    assert offline("a test").state == "wrong"
    verdict = offline(always_passes)
    assert verdict.state == "wrong" and "does not catch the bug" in verdict.detail
    verdict = offline(always_fails)
    assert verdict.state == "wrong" and "FooController too" in verdict.detail
    verdict = offline(chapter_tests()["test_sync_handler"])
    assert verdict.state == "wrong" and "does not catch the bug" in verdict.detail
    verdict = offline(getattr(solutions, f"test_{exercise}"))
    assert verdict.correct, verdict
    assert f"fails on {ch09.PLANTED[exercise].__name__}" in verdict.detail


def test_a_test_that_needs_the_cluster_is_told_to_pass_api() -> None:
    def needs_cluster(controller_class: Any, api: Any, namespace: str) -> None:
        pass

    verdict = ch09.check_2(needs_cluster)
    assert verdict.state == "wrong" and "pass api" in verdict.detail


def test_a_test_with_other_parameters_is_refused_with_the_reason() -> None:
    def odd(foo: Any) -> None:
        pass

    verdict = ch09.check_3(odd)
    assert verdict.state == "wrong" and "controller_class" in verdict.detail


@pytest.mark.cluster
@pytest.mark.parametrize("exercise", ["1", "2", "3", "4"])
def test_each_check_both_ways_on_the_cluster(
    exercise: str, api: kubernetes.client.ApiClient, course_namespace: str
) -> None:
    namespace = course_namespace
    assert check(exercise, None, api, namespace).state == "not attempted yet"
    assert check(exercise, always_passes, api, namespace).state == "wrong"
    assert check(exercise, always_fails, api, namespace).state == "wrong"
    for name, copied in chapter_tests().items():
        verdict = check(exercise, copied, api, namespace)
        assert verdict.state == "wrong", f"the chapter's {name} caught bug {exercise}: {verdict}"
    verdict = check(exercise, getattr(solutions, f"test_{exercise}"), api, namespace)
    assert verdict.correct, verdict


@pytest.mark.cluster
@pytest.mark.parametrize("exercise", ["1", "2", "3", "4"])
def test_each_solution_fails_on_its_planted_bug_and_passes_on_foo_controller(
    exercise: str, api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """The solutions are tests too: run them directly, as pytest would, both ways."""
    solution = getattr(solutions, f"test_{exercise}")
    arguments = {"api": api, "namespace": namespace}
    wanted = {key: value for key, value in arguments.items()
              if key in solution.__code__.co_varnames}  # fmt: skip
    solution(controller_class=ch09.FooController, **wanted)
    with pytest.raises(AssertionError):
        solution(controller_class=ch09.PLANTED[exercise], **wanted)
