"""How long a chapter takes to study: its main line, its deep dives and its exercises.

Every chapter is estimated the same way, at the pace two expert readers measured (December
2026): prose at 175 words a minute, visible code at 10 lines a minute, collapsed code (which a
reader skims) at 20, and 2 minutes for each picture. Code lines are those that are neither blank
nor comments. Markdown and code cells count alike wherever they stand; a picture is an
``image/png`` output.

A chapter has a **main line** (the question, the small working version, the failure the reader
sees, the fix, the summary, the exercises' text) and **deep dives**: sections whose heading starts
with "Deep dive:", all of whose cells carry the ``deep-dive`` tag, which a first pass may skip.
Each exercise states its own minutes (``**2.** *(about 15 minutes)*``), since doing an exercise
is not reading it. The first cell states the three numbers, and lists the deep dives::

    *Study time: main line about 41 minutes, deep dives about 37 minutes, exercises about
    45 minutes. Run All takes about 9 s.*

``python -m book.study_time NOTEBOOK...`` prints each chapter's numbers, its deep dives and the
sentence to state; tests/test_chapter_rules.py holds the chapters to it, the README and
docs/facilitator.md to the same numbers, and each main line to 45 minutes, each chapter to 90.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORDS_PER_MINUTE = 175
VISIBLE_CODE_LINES_PER_MINUTE = 10
COLLAPSED_CODE_LINES_PER_MINUTE = 20
MINUTES_PER_PICTURE = 2
MAIN_LINE_LIMIT = 45
CHAPTER_LIMIT = 90

DEEP_DIVE_TAG = "deep-dive"
DEEP_DIVE_HEADING = re.compile(r"^(#{2,4}) Deep dive: (.+?)\s*$")
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$")
EXERCISE = re.compile(r"^\*\*(\d+)\.\*\*(?:\s*\*\(about (\d+) minutes\)\*)?", re.M)
STATED = {
    "main": re.compile(r"main line about (\d+) minutes"),
    "deep": re.compile(r"deep dives about (\d+) minutes|(no deep dives)"),
    "exercises": re.compile(r"exercises about (\d+) minutes"),
}


def source(cell: dict[str, Any]) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def code_lines(text: str) -> int:
    """Lines a reader reads: not blank, not a comment (an ``#| export`` directive is one)."""
    stripped = (line.strip() for line in text.splitlines())
    return sum(1 for line in stripped if line and not line.startswith("#"))


def is_collapsed(cell: dict[str, Any]) -> bool:
    return bool(cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"))


def is_deep_dive(cell: dict[str, Any]) -> bool:
    return DEEP_DIVE_TAG in cell.get("metadata", {}).get("tags", [])


def pictures(cell: dict[str, Any]) -> int:
    return sum(1 for output in cell.get("outputs", []) if "image/png" in output.get("data", {}))


def cell_minutes(cell: dict[str, Any]) -> float:
    """One cell's share of the estimate."""
    if cell["cell_type"] == "markdown":
        return len(re.findall(r"\w+", source(cell))) / WORDS_PER_MINUTE
    if cell["cell_type"] != "code":
        return 0.0
    pace = COLLAPSED_CODE_LINES_PER_MINUTE if is_collapsed(cell) else VISIBLE_CODE_LINES_PER_MINUTE
    return code_lines(source(cell)) / pace + MINUTES_PER_PICTURE * pictures(cell)


@dataclass(frozen=True)
class DeepDive:
    """One deep dive: its title (after "Deep dive: "), its heading's level, and its cells."""

    title: str
    level: int
    first: int  # index of the cell whose first line is its heading
    end: int  # index one past its last cell
    minutes: float


@dataclass(frozen=True)
class Exercise:
    number: int
    minutes: int | None  # as the exercise states it; None if it does not


@dataclass
class StudyTime:
    main: float
    deep_dives: list[DeepDive] = field(default_factory=list)
    exercises: list[Exercise] = field(default_factory=list)

    @property
    def deep(self) -> float:
        return sum(dive.minutes for dive in self.deep_dives)

    @property
    def exercise_minutes(self) -> int:
        return sum(exercise.minutes or 0 for exercise in self.exercises)

    @property
    def whole(self) -> float:
        return self.main + self.deep

    def sentence(self) -> str:
        """What the first cell states."""
        deep = f"deep dives about {self.deep:.0f} minutes" if self.deep_dives else "no deep dives"
        return (
            f"Study time: main line about {self.main:.0f} minutes, {deep}, "
            f"exercises about {self.exercise_minutes} minutes."
        )


def headings(cell: dict[str, Any]) -> list[tuple[int, str, int]]:
    """A Markdown cell's headings: (level, text, line number), outside fenced code."""
    found, fenced = [], False
    for number, line in enumerate(source(cell).splitlines()):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            found.append((len(match.group(1)), match.group(2), number))
    return found


def deep_dive_sections(cells: list[dict[str, Any]]) -> list[DeepDive]:
    """The deep dives, as their headings mark them: each runs from its heading's cell to the
    cell before the next heading of the same or a higher level."""
    dives = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        for level, text, _ in headings(cell):
            match = DEEP_DIVE_HEADING.match(f"{'#' * level} {text}")
            if not match:
                continue
            end = len(cells)
            for later in range(index + 1, len(cells)):
                if cells[later]["cell_type"] == "markdown" and any(
                    other <= level for other, _, _ in headings(cells[later])
                ):
                    end = later
                    break
            minutes = sum(cell_minutes(c) for c in cells[index:end])
            dives.append(DeepDive(match.group(2), level, index, end, minutes))
    return dives


def exercises(cells: list[dict[str, Any]]) -> list[Exercise]:
    """The numbered exercises (``**1.**`` at the start of a line) of the "Exercises" section; a
    ``# comment`` inside an exercise's fenced code is not a heading."""
    found: list[Exercise] = []
    inside = False
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        fenced = False
        for line in source(cell).splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif fenced:
                continue
            elif match := HEADING.match(line):
                inside = match.group(2).strip() == "Exercises"
            elif inside and (match := EXERCISE.match(line)):
                minutes = int(match.group(2)) if match.group(2) else None
                found.append(Exercise(int(match.group(1)), minutes))
    return found


def study_time(notebook: dict[str, Any]) -> StudyTime:
    """The chapter's main line (every cell not tagged ``deep-dive``), deep dives and exercises."""
    cells = notebook["cells"]
    main = sum(cell_minutes(cell) for cell in cells if not is_deep_dive(cell))
    return StudyTime(main, deep_dive_sections(cells), exercises(cells))


def stated(first_cell: str) -> dict[str, int | None]:
    """The numbers a first cell states (None for one it does not state; 0 for "no deep dives")."""
    text = " ".join(first_cell.split())
    result: dict[str, int | None] = {}
    for key, pattern in STATED.items():
        match = pattern.search(text)
        if match is None:
            result[key] = None
        else:
            result[key] = int(match.group(1)) if match.group(1) else 0
    return result


def read(path: Path) -> StudyTime:
    return study_time(json.loads(path.read_text(encoding="utf-8")))


def main(arguments: list[str]) -> int:
    for argument in arguments:
        time = read(Path(argument))
        print(
            f"{Path(argument).name}: main line {time.main:.1f}, deep dives {time.deep:.1f}, "
            f"whole {time.whole:.1f} minutes; exercises {time.exercise_minutes} minutes"
        )
        for dive in time.deep_dives:
            print(
                f"  Deep dive: {dive.title} (cells {dive.first}-{dive.end - 1}), "
                f"about {dive.minutes:.0f} minutes"
            )
        for exercise in time.exercises:
            if exercise.minutes is None:
                print(f"  exercise {exercise.number} states no minutes")
        print(f"  state: *{time.sentence()}*")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
