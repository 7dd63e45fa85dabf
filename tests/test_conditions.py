"""helpers.conditions against apimachinery's meta.SetStatusCondition, as its conditions_test.go
specifies it (k8s.io/apimachinery/pkg/api/meta, v0.36.3), on dicts; then the wait."""

from __future__ import annotations

import itertools

import pytest

from helpers.conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    condition,
    find_status_condition,
    is_status_condition_true,
    set_status_condition,
    wait_for_condition,
)


def ticking() -> object:
    ticks = itertools.count(1)
    return lambda: f"t{next(ticks)}"


def test_a_new_condition_is_appended_with_the_time_now() -> None:
    conditions: list[dict] = []
    assert set_status_condition(conditions, condition("Ready", FALSE, "Waiting", "m", 3), ticking())
    assert conditions == [{"type": "Ready", "status": FALSE, "reason": "Waiting", "message": "m",
                           "observedGeneration": 3, "lastTransitionTime": "t1"}]  # fmt: skip


def test_a_given_time_is_kept_when_appended_and_when_the_status_changes() -> None:
    conditions: list[dict] = []
    first = condition("Ready", FALSE, "Waiting") | {"lastTransitionTime": "given"}
    set_status_condition(conditions, first, ticking())
    assert conditions[0]["lastTransitionTime"] == "given"
    second = condition("Ready", TRUE, "Done") | {"lastTransitionTime": "later"}
    set_status_condition(conditions, second, ticking())
    assert conditions[0]["lastTransitionTime"] == "later"


@pytest.mark.parametrize(
    ("change", "moves"),
    [
        ({"status": TRUE}, True),
        ({"status": UNKNOWN}, True),
        ({"reason": "Other"}, False),
        ({"message": "other"}, False),
        ({"observedGeneration": 2}, False),
    ],
)
def test_only_a_new_status_moves_the_time_and_every_change_counts(
    change: dict, moves: bool
) -> None:
    now = ticking()
    conditions: list[dict] = []
    set_status_condition(conditions, condition("Ready", FALSE, "Waiting", "m", 1), now)
    assert set_status_condition(conditions, condition("Ready", FALSE, "Waiting", "m", 1) | change,
                                now)  # fmt: skip
    assert (conditions[0]["lastTransitionTime"] == "t2") is moves
    assert {key: conditions[0][key] for key in change} == change


def test_the_same_condition_again_changes_nothing() -> None:
    conditions: list[dict] = []
    set_status_condition(conditions, condition("Ready", TRUE, "Done", "m", 1), ticking())
    before = [dict(found) for found in conditions]
    assert not set_status_condition(conditions, condition("Ready", TRUE, "Done", "m", 1), ticking())
    assert conditions == before


def test_other_types_are_left_alone_and_found_by_type() -> None:
    conditions = [condition("Other", TRUE, "Mine") | {"lastTransitionTime": "x"}]
    set_status_condition(conditions, condition("Ready", FALSE, "Waiting"), ticking())
    assert [found["type"] for found in conditions] == ["Other", "Ready"]
    assert find_status_condition(conditions, "Ready")["reason"] == "Waiting"
    assert find_status_condition(conditions, "Missing") is None
    assert is_status_condition_true(conditions, "Other")
    assert not is_status_condition_true(conditions, "Ready")
    assert not is_status_condition_true(conditions, "Missing")


def test_waiting_returns_the_object_once_its_condition_answers_its_generation() -> None:
    """Listed as the answer already: no watch. (The cluster tests show it waiting on an older
    generation: tests/test_apply_controller.py.)"""
    ready = condition("Ready", TRUE, "Available", "", 2) | {"lastTransitionTime": "x"}
    web = {"metadata": {"name": "web", "generation": 2}, "status": {"conditions": [ready]}}

    def list_func(**_: object) -> dict:
        return {"metadata": {"resourceVersion": "7"}, "items": [web]}

    assert wait_for_condition(list_func, "web", "Ready", timeout=5) is web
