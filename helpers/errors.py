"""The one error type the course raises at a person.

A learner who runs `make course` on a laptop without Docker, or opens a
notebook with a broken kubeconfig, should read one sentence that says what is
wrong and one that says what to do next, not a forty-line traceback. Every
expected failure is turned into a :class:`CourseError` at the place where we
still know what it means; the command line prints it and exits, and notebooks
show it as two lines (see :func:`helpers.apierrors.explain`).
"""

from __future__ import annotations


class CourseError(Exception):
    """A failure a person can act on: what went wrong, and the next step."""

    def __init__(self, problem: str, next_step: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.next_step = next_step

    def __str__(self) -> str:
        return f"{self.problem}\nNext step: {self.next_step}"
