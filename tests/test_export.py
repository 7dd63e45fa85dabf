"""One source of truth: the chapters' ``#| export`` cells and ``helpers/`` agree.

The first test is the one CI relies on: re-export every chapter and compare
with the modules in the repository. The others show that the exporter does what
the chapters need, and that the drift check really catches drift.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from helpers import export
from helpers.export import ExportCell, ExportError, add_to_class, render_module, split_module

ROOT = Path(__file__).resolve().parents[1]


def test_every_exported_module_matches_its_chapter() -> None:
    modules = export.exported_modules()
    assert modules, "no chapter has `#| export` cells; the chapters must build helpers/"
    stale = export.drifted()
    assert not stale, f"{stale} differ from their chapters: run `python -m helpers.export`"


def test_exported_modules_say_where_they_come_from() -> None:
    for target in export.exported_modules():
        head = (ROOT / target).read_text().splitlines()[0]
        assert head.startswith("# Generated from notebooks/"), target


def _cells(*codes: str, target: str = "helpers/demo.py") -> list[ExportCell]:
    notebook = Path("/course/notebooks/09_demo.ipynb")
    return [ExportCell(notebook, index, target, code) for index, code in enumerate(codes)]


def test_methods_added_in_later_cells_land_in_the_class_body() -> None:
    text = render_module(
        _cells(
            '"""Demo."""\n\nimport threading\n',
            "class Box:\n    def __init__(self) -> None:\n        self.items = []\n",
            "# why put exists\n@add_to_class(Box)\ndef put(self, item):\n    self.items.append(item)\n",
            "LIMIT = 3\n",
        )
    )
    tree = ast.parse(text)
    box = next(node for node in tree.body if isinstance(node, ast.ClassDef))
    assert [f.name for f in box.body if isinstance(f, ast.FunctionDef)] == ["__init__", "put"]
    assert not box.body[1].decorator_list  # the add_to_class decorator is gone
    assert "    # why put exists\n    def put" in text
    assert text.index("LIMIT = 3") > text.index("def put")
    assert text.startswith("# Generated from notebooks/09_demo.ipynb")


def test_add_to_class_attaches_functions_properties_and_staticmethods() -> None:
    class Box:
        pass

    @add_to_class(Box)
    def size(self: Box) -> int:
        return 3

    @add_to_class(Box)
    @property
    def double(self: Box) -> int:
        return self.size() * 2

    @add_to_class(Box)
    @staticmethod
    def kind() -> str:
        return "box"

    assert Box().size() == 3 and Box().double == 6 and Box.kind() == "box"


@pytest.mark.parametrize(
    ("codes", "message"),
    [
        (("@add_to_class(Nope)\ndef f(self):\n    pass\n",), "no earlier export cell"),
        (
            (
                "class A(dict):\n    pass\n",
                "@add_to_class(A)\ndef keys(self):\n    return super().keys()\n",
            ),
            "super() without arguments",
        ),
        (("def broken(:\n",), "09_demo.ipynb cell 0"),
    ],
)
def test_cells_that_cannot_become_a_module_are_named(codes: tuple[str, ...], message: str) -> None:
    with pytest.raises(ExportError, match=message.replace("(", r"\(").replace(")", r"\)")):
        render_module(_cells(*codes))


def test_two_chapters_cannot_own_one_module(tmp_path: Path) -> None:
    for name in ("02_a.ipynb", "03_b.ipynb"):
        (tmp_path / name).write_text(_notebook(["#| export helpers/x.py\nX = 1\n"]))
    with pytest.raises(ExportError, match="already owns"):
        export.cells_by_target(sorted(tmp_path.glob("*.ipynb")))


def _notebook(sources: list[str]) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "source": s, "outputs": []} for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_drift_is_caught_both_ways(tmp_path: Path) -> None:
    """An edited module, and an edited chapter cell, each make the check fail."""
    modules = export.exported_modules()
    target = sorted(modules)[0]
    notebooks = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", notebooks, ignore=shutil.ignore_patterns("solutions"))
    for name, text in modules.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert export.drifted(tmp_path, notebooks) == []

    module = tmp_path / target
    module.write_text(module.read_text() + "\nHAND_EDIT = True\n")
    assert export.drifted(tmp_path, notebooks) == [target]
    module.write_text(modules[target])

    owner = export.cells_by_target(sorted(notebooks.glob("*.ipynb")))[target][0]
    chapter = json.loads(owner.notebook.read_text())
    cell = chapter["cells"][owner.index]
    cell["source"] = "".join(cell["source"]) + "\nCHAPTER_EDIT = True\n"
    owner.notebook.write_text(json.dumps(chapter))
    assert export.drifted(tmp_path, notebooks) == [target]


MODULES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "helpers").rglob("*.py"))


@pytest.mark.parametrize("module", MODULES)
def test_any_module_can_move_into_cells_and_back(module: str) -> None:
    """``--split`` (how a module moves into a chapter) loses nothing: same syntax tree."""
    source = (ROOT / module).read_text()
    cells = _cells(*(code + "\n" for code in split_module(source)), target=module)
    assert ast.dump(ast.parse(render_module(cells))) == ast.dump(ast.parse(source))
