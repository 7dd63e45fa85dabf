"""Self-checks for the chapters' exercises.

Each check looks at the real cluster (or at the learner's answer) and returns
a :class:`Verdict`: "not attempted yet", "wrong because ...", or "correct".
The solutions live in ``notebooks/solutions/``, out of the learner's way, and
``tests/test_exercises.py`` runs every solution through its check in CI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

State = Literal["not attempted yet", "wrong", "correct"]


@dataclass(frozen=True)
class Verdict:
    exercise: str
    state: State
    detail: str = ""

    def __str__(self) -> str:
        mark = {"not attempted yet": "…", "wrong": "✗", "correct": "✓"}[self.state]
        text = "wrong because " + self.detail if self.state == "wrong" else self.state
        if self.state != "wrong" and self.detail:
            text += f": {self.detail}"
        return f"{mark} Exercise {self.exercise}: {text}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Show the sentence, not the dataclass, when a notebook cell ends with a check."""
        printer.text(str(self))

    @property
    def correct(self) -> bool:
        return self.state == "correct"


class CannotCheck(Verdict):
    """A check that cannot judge on this cluster: it says so, and why, instead of a verdict.

    Some checks need what only some clusters give (etcd access, to make a real
    ``410``); elsewhere "not attempted" or "wrong" would be untrue, so the check
    names what it lacks and where to compare instead.
    """

    def __str__(self) -> str:
        return f"? Exercise {self.exercise}: {self.detail}"


def not_attempted(exercise: str, hint: str = "") -> Verdict:
    return Verdict(exercise, "not attempted yet", hint)


def wrong(exercise: str, because: str) -> Verdict:
    return Verdict(exercise, "wrong", because)


def correct(exercise: str, detail: str = "") -> Verdict:
    return Verdict(exercise, "correct", detail)
