"""The README's map of helpers/ ("helpers/, module by module") is true.

Every module of ``helpers/`` is in exactly one row: its own, or the row of the
nearest folder above it that has one. A package's ``__init__.py`` is its face
(a docstring, names handed on) and needs no row. Each row sits in one of the
four kinds' tables. A row says "chapter NN" exactly when that chapter's
``#| export`` cells write the module (as ``helpers.export`` finds them), and a
folder's row covers no written module.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import export

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("Machinery", "Instruments", "Course infrastructure", "Repository tooling")
ROW = re.compile(r"^\| `(?P<path>helpers/[^`]*)` \| .+ \| (?P<by>chapter \w+|by hand) \|$")


def module_map(readme: str) -> dict[str, tuple[str, str]]:
    """Row path -> (kind, "chapter NN" or "by hand"), from the README's map section."""
    section = readme.split("\n### helpers/, module by module\n", 1)[1].split("\n### ", 1)[0]
    rows: dict[str, tuple[str, str]] = {}
    kind = None
    for line in section.splitlines():
        if line.startswith("**") and line.strip("*") in KINDS:
            kind = line.strip("*")
        elif line.startswith("| `helpers/"):
            found = ROW.match(line)
            assert found, f"a row of the map is not `| \\`helpers/...\\` | what | by |`: {line}"
            assert kind is not None, f"a row before the first kind's heading: {line}"
            assert found["path"] not in rows, f"{found['path']} is in the map twice"
            rows[found["path"]] = (kind, found["by"])
    return rows


def covering_row(module: str, rows: dict[str, tuple[str, str]]) -> str | None:
    """The row that covers ``module``: its own, or its nearest folder's."""
    path = Path(module)
    candidates = [module] if path.name != "__init__.py" else []
    candidates += [f"{parent.as_posix()}/" for parent in path.parents if parent != Path(".")]
    return next((c for c in candidates if c in rows), None)


@pytest.fixture(scope="module")
def rows() -> dict[str, tuple[str, str]]:
    return module_map((ROOT / "README.md").read_text())


@pytest.fixture(scope="module")
def written() -> dict[str, str]:
    """Each module a chapter writes -> "chapter NN"."""
    cells = export.cells_by_target(sorted(export.NOTEBOOKS.glob("*.ipynb")))
    return {
        target: "chapter " + owned[0].notebook.name.split("_")[0] for target, owned in cells.items()
    }


def modules() -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "helpers").rglob("*.py"))


def test_every_module_is_in_one_row_and_every_row_is_a_module(
    rows: dict[str, tuple[str, str]],
) -> None:
    faces = [m for m in modules() if m.endswith("/__init__.py")]
    loose = [m for m in modules() if covering_row(m, rows) is None and m not in faces]
    assert not loose, f"modules of helpers/ the README's map does not list: {loose}"
    for path in rows:
        assert (ROOT / path).exists(), f"the README's map lists {path}, which does not exist"
        if path.endswith("/"):
            assert (ROOT / path).is_dir(), path
    every_kind = {kind for kind, _ in rows.values()}
    assert every_kind == set(KINDS), f"the map's kinds: {sorted(every_kind)}"


def test_a_chapter_is_named_exactly_for_the_modules_it_writes(
    rows: dict[str, tuple[str, str]], written: dict[str, str]
) -> None:
    for module, chapter in written.items():
        assert rows.get(module, (None, None))[1] == chapter, (
            f"{module} is written by {chapter}: give it a row of its own saying so"
        )
    for path, (_, by) in rows.items():
        if by != "by hand":
            assert written.get(path) == by, f"{path} says {by}, but no chapter writes it"


def test_the_map_catches_a_module_it_does_not_list(rows: dict[str, tuple[str, str]]) -> None:
    """The check can fail: a new module without a row, and a written one under a folder row."""
    assert covering_row("helpers/new_thing.py", rows) is None
    assert covering_row("helpers/faults/new_fault.py", rows) == "helpers/faults/"
    readme = (ROOT / "README.md").read_text()
    twice = readme.replace("| `helpers/tidy.py` |", "| `helpers/export.py` |")
    with pytest.raises(AssertionError, match="twice"):
        module_map(twice)
