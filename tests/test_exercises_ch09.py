"""Chapter 09's exercise checks (09a and 09b): each planted bug, each check both ways.

A check must say "correct" to a test that passes on chapter 05's FooController
and fails on the planted bug (the stored solutions), and "wrong" to the cheats:
a test that always passes, one that always fails, the chapters' own tests,
copied from the notebooks as the chapters print them (they were written before
the exercises' bugs, and must not catch them), and tests that key on what
tells the classes apart besides their behaviour (a name, an ancestor, an
attribute). Check 5, a prediction, must say "wrong" to every other letter,
the answer a remembered chapter 03a table gives included, and the prediction
must be what the cluster does.
"""

from __future__ import annotations

import ast
import inspect
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers import namespaces
from helpers.controller import FooController
from helpers.exercises import ch09
from helpers.testing.on_cluster import ControllerUnderTest
from helpers.testing.pytest_file import HEADER
from helpers.testing.recording import cached_deployment, cached_foo, sync_once
from notebooks.solutions import ch09 as solutions

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = {
    "09a_testing_a_controller.ipynb": ("test_sync_handler", "test_converges"),
    "09b_faults_and_properties.ipynb": (
        "test_a_delete_missed_in_a_gap_is_repaired",
        "test_conflict_is_retried_with_a_fresh_read",
    ),
}
CLUSTER_EXERCISES = ["1", "4", "6"]
OFFLINE_EXERCISES = ["2", "3"]


def chapter_tests() -> dict[str, Callable[..., Any]]:
    """The chapters' test functions, from the notebooks' cells, under the header of the test
    file chapter 09a writes: what a learner who copied them would have."""
    found: dict[str, str] = {}
    for chapter, names in CHAPTERS.items():
        for cell in json.loads((NOTEBOOKS / chapter).read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] != "code" or source.startswith("#|"):
                continue
            for node in ast.parse(source).body:
                if isinstance(node, ast.FunctionDef) and node.name in names:
                    found[node.name] = ast.get_source_segment(source, node) or ""
    wanted = {name for names in CHAPTERS.values() for name in names}
    assert set(found) == wanted, f"the chapters' tests moved: found {sorted(found)}"
    namespace: dict[str, Any] = {}
    exec(HEADER + "\n\n".join(found.values()), namespace)  # the chapters' own code
    return {name: namespace[name] for name in wanted}


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


def cheats(exercise: str) -> dict[str, Callable[..., Any]]:
    """Tests that tell the planted bug by something other than what it does."""
    planted = ch09.PLANTED[exercise]
    methods = [name for name, value in vars(planted).items() if inspect.isfunction(value)]

    def by_name(controller_class: Any) -> None:  # the learner's cheat, found in review
        assert controller_class.__name__ != planted.__name__

    def by_ancestor(controller_class: Any) -> None:
        assert not issubclass(controller_class, planted)

    def by_identity(controller_class: Any) -> None:
        assert controller_class is FooController

    def by_attribute(controller_class: Any) -> None:
        assert not any(name in vars(controller_class) for name in methods)

    def by_function(controller_class: Any) -> None:
        assert all(getattr(controller_class, name) is not vars(planted)[name] for name in methods)

    return {
        "by name": by_name,
        "by ancestor": by_ancestor,
        "is FooController": by_identity,
        "by the methods it defines": by_attribute,
        "by the planted function": by_function,
    }


def printed_recipe(controller_class: Any) -> None:
    """What chapter 09a printed about rare answers, made into a test: a 409 on the status write
    must fail the sync. It is exercise 2's old answer; the new exercise needs more."""
    foo = cached_foo("test", 1)
    outcome = sync_once(
        controller_class,
        "default/test",
        foos=[foo],
        deployments=[cached_deployment(foo, available=1)],
        fail={"update_foo_status": ApiException(status=409, reason="Conflict")},
    )
    assert outcome.error is not None


CHECKS = {
    "1": ch09.check_1,
    "2": ch09.check_2,
    "3": ch09.check_3,
    "4": ch09.check_4,
    "6": ch09.check_6,
}


def check(exercise: str, test: Any, api: kubernetes.client.ApiClient, namespace: str) -> Any:
    return CHECKS[exercise](test, api, namespace)


def test_the_disguised_pair_hides_everything_but_behaviour() -> None:
    for exercise, planted in ch09.PLANTED.items():
        fixed, bugged = ch09.disguised_pair(exercise)
        assert fixed.__name__ != bugged.__name__
        assert planted.__name__ not in (fixed.__name__, bugged.__name__)
        assert fixed.__mro__[1:] == bugged.__mro__[1:] == (FooController, object)
        assert set(vars(fixed)) == set(vars(bugged))
        assert fixed.__doc__ == bugged.__doc__ and fixed.__module__ == bugged.__module__
        again, _ = ch09.disguised_pair(exercise)
        assert again.__name__ != fixed.__name__  # made afresh for every run


@pytest.mark.parametrize("exercise", OFFLINE_EXERCISES)
def test_the_offline_checks_judge_without_a_cluster(exercise: str) -> None:
    offline = CHECKS[exercise]
    assert offline(None).state == "not attempted yet"
    assert offline("a test").state == "wrong"
    verdict = offline(always_passes)
    assert verdict.state == "wrong" and "does not catch the bug" in verdict.detail
    verdict = offline(always_fails)
    assert verdict.state == "wrong" and "without the bug too" in verdict.detail
    verdict = offline(chapter_tests()["test_sync_handler"])
    assert verdict.state == "wrong" and "does not catch the bug" in verdict.detail
    for name, cheat in cheats(exercise).items():
        verdict = offline(cheat)
        assert verdict.state == "wrong", f"the cheat {name} got {verdict}"
    verdict = offline(getattr(solutions, f"test_{exercise}"))
    assert verdict.correct, verdict
    assert f"fails on {ch09.PLANTED[exercise].__name__}" in verdict.detail


def test_exercise_2_needs_more_than_the_recipe_the_chapter_printed() -> None:
    verdict = ch09.check_2(printed_recipe)
    assert verdict.state == "wrong" and "does not catch the bug" in verdict.detail
    assert "create_deployment" not in verdict.detail and "409" not in verdict.detail


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


def test_the_prediction_of_09b_is_judged_letter_by_letter() -> None:
    assert ch09.check_5(None).state == "not attempted yet"
    assert ch09.check_5("e").state == "wrong"
    assert ch09.check_5(3).state == "wrong"
    wrongs = {letter: ch09.check_5(letter) for letter in "abd"}
    assert all(verdict.state == "wrong" for verdict in wrongs.values())
    assert all(verdict.exercise == "1" for verdict in wrongs.values())  # as 09b numbers it
    for verdict in wrongs.values():  # no wrong verdict gives the right letter away
        assert "not synced" not in verdict.detail and "(c)" not in verdict.detail
    # chapter 03a's table (deleted -> tombstone, created -> add) remembered: (a)
    assert wrongs["a"].state == "wrong"
    assert ch09.check_5(solutions.answer_5).correct
    assert ch09.check_5(" C ").correct


def test_a_cluster_check_says_what_it_waits_for(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exercise 4's check takes seconds on the cluster: it says so before it starts, and again
    while a test runs long (never a silent minute)."""
    monkeypatch.setattr(ch09, "PROGRESS_EVERY", 0.05)
    monkeypatch.setattr(ch09.namespaces, "ensure_namespace", lambda api, name: name)

    def slow(controller_class: Any, api: Any, namespace: str) -> None:
        import time

        time.sleep(0.2)

    verdict = ch09.check_4(slow, object(), "somewhere")  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert verdict.state == "wrong"
    assert "running your test on the cluster" in out and "Pods" in out
    assert "still running on the controller without the bug" in out
    assert "still running on the controller with the bug" in out


@pytest.mark.cluster
@pytest.mark.parametrize("exercise", CLUSTER_EXERCISES)
def test_each_cluster_check_both_ways(
    exercise: str, api: kubernetes.client.ApiClient, course_namespace: str
) -> None:
    namespace = course_namespace
    assert check(exercise, None, api, namespace).state == "not attempted yet"
    assert check(exercise, always_passes, api, namespace).state == "wrong"
    assert check(exercise, always_fails, api, namespace).state == "wrong"
    for name, cheat in cheats(exercise).items():
        verdict = check(exercise, cheat, api, namespace)
        assert verdict.state == "wrong", f"the cheat {name} got {verdict}"
    for name, copied in chapter_tests().items():
        verdict = check(exercise, copied, api, namespace)
        assert verdict.state == "wrong", f"the chapter's {name} caught bug {exercise}: {verdict}"
    verdict = check(exercise, getattr(solutions, f"test_{exercise}"), api, namespace)
    assert verdict.correct, verdict


@pytest.mark.cluster
@pytest.mark.parametrize("exercise", ["2", "3"])
def test_the_chapters_drills_do_not_catch_the_offline_bugs(
    exercise: str, api: kubernetes.client.ApiClient, course_namespace: str
) -> None:
    """The chapters' cluster tests, given the cluster, still pass on the offline bugs."""
    for name, copied in chapter_tests().items():
        verdict = check(exercise, copied, api, course_namespace)
        assert verdict.state == "wrong", f"the chapter's {name} caught bug {exercise}: {verdict}"


@pytest.mark.cluster
@pytest.mark.parametrize("exercise", ["1", "2", "3", "4", "6"])
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


@pytest.mark.cluster
def test_the_prediction_is_what_the_cluster_does(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """09b's exercise 1 on the cluster: our Deployment deleted and one of somebody else's made
    under its name while the watch was held; after the expired watch's re-list the handlers get
    an update (no tombstone, no add), and the Foo is not synced."""
    apps = kubernetes.client.AppsV1Api(api)
    with ControllerUnderTest(api, namespace, run="ex5") as run:
        run.create_foo("web")
        run.wait_converged("web")
        run.hold_watches("web")  # nothing but the gap may sync web
        ours = run.deployment("web-deployment")
        apps.delete_namespaced_deployment("web-deployment", namespace)
        run.wait_until(lambda: run.deployment("web-deployment") is None, "the delete")
        theirs = {
            "metadata": {"name": "web-deployment"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "theirs"}},
                "template": {
                    "metadata": {"labels": {"app": "theirs"}},
                    "spec": {"containers": [{"name": "app", "image": "busybox"}]},
                },
            },
        }
        apps.create_namespaced_deployment(namespace, theirs)
        run.wait_until(lambda: run.deployment("web-deployment") is not None, "theirs")
        heard = len(run.delivered)
        syncs = len(run.log.syncs(run.key("web")))
        run.deployment_watch.release(expired=True)
        new = ("Deployment", "update", "web-deployment")
        run.wait_until(lambda: new in run.delivered[heard:], "the update after the re-list")
        assert run.wait_handled() == 0
        about_it = [d for d in run.delivered[heard:] if d[2] == "web-deployment"]
        assert about_it[0] == new and ("Deployment", "tombstone", "web-deployment") not in about_it
        assert len(run.log.syncs(run.key("web"))) == syncs, "web was synced"
        assert run.deployment("web-deployment")["metadata"]["uid"] != ours["metadata"]["uid"]
        apps.delete_namespaced_deployment("web-deployment", namespace)
