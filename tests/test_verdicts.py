"""helpers.exercises' verdicts: a check that cannot judge says why.

``CannotCheck`` is a ``Verdict`` (exercise, state, detail), and its sentence is the detail. Eight
checks in chapters 07, 08 and 10 called it with two arguments, so their reason went into
``state`` and the learner read "? Exercise 1: " and nothing more (mypy found it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers.exercises import CannotCheck

EXERCISES = Path(__file__).resolve().parents[1] / "helpers" / "exercises"


def test_a_check_that_cannot_judge_says_why() -> None:
    verdict = CannotCheck("1", "not attempted yet", "this needs etcd access")
    assert str(verdict) == "? Exercise 1: this needs etcd access"
    assert not verdict.correct


def cannot_check_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for path in sorted(EXERCISES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "CannotCheck"
            ):
                calls.append((f"{path.name}:{node.lineno}", node))
    return calls


CALLS = cannot_check_calls()


@pytest.mark.parametrize("where, call", CALLS, ids=[where for where, _ in CALLS])
def test_every_cannot_check_gives_its_reason_as_the_detail(where: str, call: ast.Call) -> None:
    state = call.args[1] if len(call.args) > 1 else None
    assert len(call.args) == 3 or any(k.arg == "detail" for k in call.keywords), where
    assert isinstance(state, ast.Constant) and state.value == "not attempted yet", where


def test_the_scan_sees_the_checks() -> None:
    assert len(CALLS) >= 14
