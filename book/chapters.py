"""What the book tells about each chapter, read from the notebook itself.

Chapters are found by their file name (``notebooks/[0-9]*.ipynb``), never listed by hand, so a
new chapter or a renamed one is in the book at the next build. A chapter page says how long
the chapter takes (the "Study time: ..." statement of its first cell, and each deep dive's
minutes), what it needs (a
cluster, and the earlier chapters whose modules it imports), and where each exercise's
solution is (the ``notebooks/solutions/chNN.py`` definition the exercise's check is given).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from book import study_time
from helpers.errors import CourseError

CHAPTER_PATTERN = "[0-9]*.ipynb"
READING_TIME = re.compile(r"Study time: [^.]*")
EXPORT = re.compile(r"^#\| export (helpers/\S+\.py)\s*$", re.MULTILINE)
EXERCISES_PACKAGE = "helpers.exercises"


@dataclass(frozen=True)
class Exercise:
    """One exercise's check cell: ``ch04.check_2(limiter_2)`` asks for ``limiter_2``."""

    cell: int  # index of the check's code cell in the notebook
    number: int  # its place among the chapter's exercises, as the chapter numbers them
    check: str  # "ch04.check_2": chapters that share a module (02a, 02b) number checks apart
    solutions: str  # "ch04": the module in notebooks/solutions/
    answer: str  # the name the learner defines, and the solution module defines
    also: tuple[str, ...] = ()  # further names the check is given (some are answers too)


@dataclass(frozen=True)
class Chapter:
    path: Path
    notebook: dict[str, Any] = field(repr=False)

    @property
    def name(self) -> str:
        """The file's stem, which is also the page's name: ``04_workqueue``."""
        return self.path.stem

    @property
    def label(self) -> str:
        """The chapter's number as the course writes it: ``04``, ``02a``."""
        return self.name.split("_", 1)[0]

    @cached_property
    def title(self) -> str:
        """The first cell's heading: ``04 · The workqueue``."""
        for line in self.first_cell.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
        raise CourseError(
            f"{self.path.name} does not start with a title (a '# ' heading in its first cell).",
            "give the chapter's first cell a heading such as '# 04 · The workqueue'.",
        )

    @cached_property
    def reading_time(self) -> str:
        """The first cell's statement, to its first full stop: ``Study time: main line about 41
        minutes, deep dives about 37 minutes, exercises about 45 minutes``."""
        found = READING_TIME.search(" ".join(self.first_cell.split()))
        if found is None:
            raise CourseError(
                f"{self.path.name} does not say in its first cell how long it takes.",
                "state it there as book/study_time.py words it: 'Study time: main line about N "
                "minutes, ...'.",
            )
        return found.group(0).strip(" ,*")

    @cached_property
    def deep_dives(self) -> dict[str, int]:
        """Each deep dive's title (after "Deep dive: ", as its heading reads on the page, without
        the backticks of inline code) and its minutes, in order."""
        return {
            dive.title.replace("`", ""): round(dive.minutes)  # as the page's heading reads
            for dive in study_time.deep_dive_sections(self.notebook["cells"])
        }

    @property
    def first_cell(self) -> str:
        return "".join(self.notebook["cells"][0]["source"])

    @cached_property
    def exports(self) -> set[str]:
        """The modules this chapter writes, dotted: ``helpers.workqueue.queue``."""
        return {
            _dotted(path)
            for cell in self.notebook["cells"]
            if cell["cell_type"] == "code"
            for path in EXPORT.findall("".join(cell["source"]))
        }

    @cached_property
    def imports(self) -> set[str]:
        """The ``helpers`` modules its cells import, dotted (``from helpers import kube`` counts
        as ``helpers.kube``: it may name a module or a name in the package; either way it is
        matched against the modules chapters export)."""
        found: set[str] = set()
        for _, tree in self._trees():
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    found.update(a.name for a in node.names if a.name.startswith("helpers."))
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if node.module == "helpers":
                        found.update(f"helpers.{a.name}" for a in node.names)
                    elif node.module.startswith("helpers."):
                        found.add(node.module)
        return found

    @cached_property
    def exercises(self) -> list[Exercise]:
        """The exercise checks, in order: calls ``chNN.check_K(answer, ...)`` on a module
        imported from ``helpers.exercises``."""
        modules: set[str] = set()
        found = []
        for index, tree in self._trees():
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module == EXERCISES_PACKAGE:
                    modules.update(a.asname or a.name for a in node.names)
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in modules
                    and node.func.attr.startswith("check_")
                    and node.args
                    and isinstance(node.args[0], ast.Name)
                ):
                    module, answer = node.func.value.id, node.args[0].id
                    check = f"{module}.{node.func.attr}"
                    also = tuple(a.id for a in node.args[1:] if isinstance(a, ast.Name))
                    exercise = Exercise(index, len(found) + 1, check, module, answer, also)
                    found.append(exercise)
        return found

    def _trees(self) -> list[tuple[int, ast.Module]]:
        """Each code cell's index and syntax tree."""
        return [
            (index, _parse(self.path.name, index, "".join(cell["source"])))
            for index, cell in enumerate(self.notebook["cells"])
            if cell["cell_type"] == "code"
        ]


def _parse(notebook: str, index: int, source: str) -> ast.Module:
    """A cell as Python; one with IPython's ``%`` or ``!`` lines after IPython turns them into
    calls (imported only then: it takes a second)."""
    try:
        return ast.parse(source)
    except SyntaxError:
        from IPython.core.inputtransformer2 import TransformerManager

        try:
            return ast.parse(TransformerManager().transform_cell(source))
        except SyntaxError as exc:
            raise CourseError(
                f"{notebook}, cell {index}: not Python ({exc.msg}, line {exc.lineno}).",
                "fix the cell; the chapter must run top to bottom.",
            ) from None


def _dotted(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def read_chapters(notebooks: Path) -> list[Chapter]:
    """Every chapter in ``notebooks``, in the order of their names (the course's order)."""
    chapters = [
        Chapter(path, json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(notebooks.glob(CHAPTER_PATTERN))
    ]
    if not chapters:
        raise CourseError(
            f"no chapters ({CHAPTER_PATTERN}) in {notebooks}.",
            "run the build from the course's folder, or pass --root.",
        )
    return chapters


@dataclass(frozen=True)
class Need:
    """An earlier chapter, and the modules it built that a later chapter imports."""

    chapter: Chapter
    modules: list[str]


def needs(chapter: Chapter, chapters: list[Chapter]) -> list[Need]:
    """The earlier chapters whose modules ``chapter`` imports, in the course's order, each with
    the imports it serves (``helpers.workqueue``, not the five modules chapter 04 writes).

    A module imported from a *later* chapter (chapter 03b borrows chapter 05's Foo constants)
    is already in ``helpers/``, and reading that chapter first is not needed, so it is not
    listed.
    """
    earlier = chapters[: chapters.index(chapter)]
    result = []
    for other in earlier:
        used = sorted(
            imported
            for imported in chapter.imports
            if any(m == imported or m.startswith(f"{imported}.") for m in other.exports)
        )
        if used:
            result.append(Need(other, used))
    return result


def solution_source(solutions: Path, exercise: Exercise, chapter: Chapter) -> str:
    """The lines of ``solutions`` that define ``exercise.answer``, and any further name the check
    is given that ``solutions`` defines too (a check of two functions), in the file's order: each
    with its comments just above it, its decorators and its body."""
    if not solutions.exists():
        raise CourseError(
            f"{chapter.path.name}: exercise {exercise.number} is checked by "
            f"{exercise.check}, but {solutions} does not exist.",
            f"add the solutions to {solutions}, as the other chapters do.",
        )
    text = solutions.read_text(encoding="utf-8")
    lines = text.splitlines()
    wanted = {exercise.answer, *exercise.also}
    found, pieces = set(), []
    for node in ast.parse(text).body:
        names = _bound_names(node) & wanted
        if not names:
            continue
        found |= names
        first = min([node.lineno, *(d.lineno for d in _decorators(node))])
        while first > 1 and lines[first - 2].lstrip().startswith("#"):
            first -= 1
        assert node.end_lineno is not None
        pieces.append("\n".join(lines[first - 1 : node.end_lineno]))
    if exercise.answer not in found:
        raise CourseError(
            f"{chapter.path.name}: exercise {exercise.number} ({exercise.check}) asks for "
            f"`{exercise.answer}`, "
            f"which {solutions} does not define.",
            f"define `{exercise.answer}` in {solutions} (tests/test_exercises*.py check it).",
        )
    return "\n\n\n".join(pieces)


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def _decorators(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.decorator_list
    return []
