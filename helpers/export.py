"""One source of truth: the chapters write the modules in ``helpers/``.

A chapter builds a component in small cells. Each cell that belongs to the
library starts with a directive naming its module::

    #| export helpers/workqueue/queue.py

``python -m helpers.export`` gathers those cells, in chapter order, and writes
each module (formatted by ruff, under a "generated" header). Later chapters
import the module, so what a learner built and what the course runs on are the
same code; ``tests/test_export.py`` re-exports and fails on any difference.

Classes grow across cells the way d2l's ``add_to_class`` does it: a cell that
holds one method says ``@add_to_class(Queue)`` above its ``def``. In the
notebook the decorator attaches the function to the class; in the module the
exporter moves the method into the class body, so the library reads like a
normal module. A method that calls ``super()`` without arguments must stay in
its class's cell (outside a class body Python cannot tell which class it is).

Models: d2l's ``#@save`` and nbdev's ``#| export`` with its CI re-export step.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

DIRECTIVE = "#| export "
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
HEADER = (
    "# Generated from {notebook} by `python -m helpers.export`: edit the chapter's\n"
    "# `#| export` cells, not this file (tests/test_export.py fails when they disagree).\n"
)

T = TypeVar("T")


def add_to_class(cls: type) -> Callable[[T], T]:
    """Attach the decorated function (or property, staticmethod...) to ``cls``.

    Lets a chapter define a class in one cell and its methods in later cells,
    each next to the paragraph that explains it.
    """

    def attach(member: T) -> T:
        function = getattr(member, "fget", None) or getattr(member, "__func__", None) or member
        setattr(cls, function.__name__, member)
        return member

    return attach


class ExportError(Exception):
    """A chapter's export cells cannot be turned into a module; the message says where."""


@dataclass
class ExportCell:
    """One ``#| export`` cell: where it came from and its code without the directive."""

    notebook: Path
    index: int
    target: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.notebook.name} cell {self.index}"


@dataclass
class _Block:
    """A top-level piece of the module; a class block collects the methods added to it."""

    text: str
    class_name: str | None = None
    methods: list[str] = field(default_factory=list)


def export_cells(notebook: Path) -> list[ExportCell]:
    """The export cells of one notebook, in order."""
    cells = json.loads(notebook.read_text())["cells"]
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        first, _, rest = source.partition("\n")
        if first.startswith(DIRECTIVE):
            target = first[len(DIRECTIVE) :].strip()
            found.append(ExportCell(notebook, index, target, rest))
    return found


def cells_by_target(notebooks: list[Path]) -> dict[str, list[ExportCell]]:
    """Every export cell of the course, grouped by module; one chapter owns each module."""
    targets: dict[str, list[ExportCell]] = {}
    for notebook in sorted(notebooks):
        for cell in export_cells(notebook):
            owner = targets.setdefault(cell.target, [cell])[0].notebook
            if owner != notebook:
                raise ExportError(
                    f"{cell.where} exports to {cell.target}, which {owner.name} already owns; "
                    "one chapter builds each module, later chapters import it"
                )
            if targets[cell.target][-1] is not cell:
                targets[cell.target].append(cell)
    return targets


def _statement_spans(tree: ast.Module, lines: list[str]) -> list[tuple[ast.stmt, str, int]]:
    """Each top-level statement with its text (comments just above it included) and the
    line number that text starts on."""
    spans = []
    previous_end = 0
    for index, statement in enumerate(tree.body):
        end = statement.end_lineno or statement.lineno
        if index == len(tree.body) - 1:
            end = len(lines)
        start = previous_end
        while start < end and not lines[start].strip():
            start += 1
        spans.append((statement, "".join(lines[start:end]).rstrip("\n"), start + 1))
        previous_end = end
    return spans


def _added_to(statement: ast.stmt) -> str | None:
    """The class named by a function's ``@add_to_class(Name)``, if it has one."""
    if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    for decorator in statement.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and isinstance(decorator.func, ast.Name)
            and decorator.func.id == "add_to_class"
        ):
            if len(decorator.args) != 1 or not isinstance(decorator.args[0], ast.Name):
                raise ExportError("add_to_class takes exactly one class name")
            return decorator.args[0].id
    return None


def _calls_bare_super(function: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "super"
        and not node.args
        for node in ast.walk(function)
    )


def _as_method(statement: ast.FunctionDef | ast.AsyncFunctionDef, text: str, start: int) -> str:
    """The method's text for a class body: the add_to_class line dropped, indented once."""
    decorator = next(d for d in statement.decorator_list if isinstance(d, ast.Call))
    lines = text.split("\n")
    # ``start`` is the file line of text's first line; drop the decorator's lines.
    first = decorator.lineno - start
    last = (decorator.end_lineno or decorator.lineno) - start
    kept = lines[:first] + lines[last + 1 :]
    return "\n".join("    " + line if line.strip() else "" for line in kept)


def render_module(cells: list[ExportCell]) -> str:
    """The module text for one target (before formatting)."""
    blocks: list[_Block] = []
    classes: dict[str, _Block] = {}
    for cell in cells:
        try:
            tree = ast.parse(cell.code)
        except SyntaxError as error:
            raise ExportError(f"{cell.where}: {error.msg} (line {error.lineno})") from None
        lines = cell.code.splitlines(keepends=True)
        plain: list[str] = []  # statements kept together, as the cell spaced them
        plain_from = 0
        for statement, text, start in _statement_spans(tree, lines):
            owner = _added_to(statement)
            if owner is None and not isinstance(statement, ast.ClassDef):
                if not plain:
                    plain_from = start
                plain = ["".join(lines[plain_from - 1 : statement.end_lineno or statement.lineno])]
                continue
            if plain:
                blocks.append(_Block(plain[0].rstrip("\n")))
                plain = []
            if owner is None:
                assert isinstance(statement, ast.ClassDef)
                block = _Block(text, class_name=statement.name)
                classes[statement.name] = block
                blocks.append(block)
                continue
            if owner not in classes:
                raise ExportError(
                    f"{cell.where}: add_to_class({owner}) but no earlier export cell of "
                    f"{cell.target} defines class {owner}"
                )
            if _calls_bare_super(statement):
                raise ExportError(
                    f"{cell.where}: {statement.name} calls super() without arguments; keep "
                    f"it in {owner}'s class cell or write super({owner}, self)"
                )
            assert isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
            classes[owner].methods.append(_as_method(statement, text, start))
        if plain:
            trailing = "".join(lines[plain_from - 1 :])
            blocks.append(_Block(trailing.rstrip("\n")))
    parts = ["\n\n".join([block.text, *block.methods]) for block in blocks]
    notebook = cells[0].notebook.relative_to(cells[0].notebook.parents[1])
    return HEADER.format(notebook=notebook.as_posix()) + "\n" + "\n\n".join(parts) + "\n"


def format_python(text: str, filename: str) -> str:
    """``ruff format`` the text, as the repository's lint step would."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", filename, "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if result.returncode != 0:
        raise ExportError(f"ruff could not format {filename}: {result.stderr.strip()}")
    return result.stdout


def exported_modules(notebooks_dir: Path = NOTEBOOKS, only: Path | None = None) -> dict[str, str]:
    """Every module the chapters export (or only those of notebook ``only``): path -> text."""
    targets = cells_by_target(list(notebooks_dir.glob("*.ipynb")))
    return {
        target: format_python(render_module(cells), target)
        for target, cells in targets.items()
        if only is None or cells[0].notebook.resolve() == only.resolve()
    }


def drifted(root: Path = ROOT, notebooks_dir: Path = NOTEBOOKS) -> list[str]:
    """Targets whose file differs from what the chapters export."""
    return [
        target
        for target, text in exported_modules(notebooks_dir).items()
        if not (root / target).exists() or (root / target).read_text() != text
    ]


def write_all(
    root: Path = ROOT, notebooks_dir: Path = NOTEBOOKS, only: Path | None = None
) -> list[str]:
    """Write every exported module (or only notebook ``only``'s); returns those that changed."""
    changed = []
    for target, text in exported_modules(notebooks_dir, only).items():
        path = root / target
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(target)
    return changed


def split_module(source: str) -> list[str]:
    """Cut an existing module into export-cell bodies (for moving a module into a chapter).

    The leading docstring and imports form one cell, each top-level function or
    class one cell, and each method after ``__init__`` its own ``add_to_class``
    cell (unless it calls a bare ``super()``, or the class body has statements
    after its methods). ``render_module`` of the result has the same AST.
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cells: list[str] = []
    preamble_from = 0  # first line of the statements gathered for the next plain cell
    preamble_to = 0
    for statement, text, start in _statement_spans(tree, lines):
        if not isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            preamble_from = preamble_from or start
            preamble_to = statement.end_lineno or statement.lineno
            continue
        if preamble_from:
            cells.append("".join(lines[preamble_from - 1 : preamble_to]).rstrip("\n"))
            preamble_from = 0
        if isinstance(statement, ast.ClassDef):
            cells.extend(_split_class(statement, lines, start))
        else:
            cells.append(text)
    if preamble_from:
        cells.append("".join(lines[preamble_from - 1 :]).rstrip("\n"))
    return cells


def _split_class(node: ast.ClassDef, lines: list[str], start: int) -> list[str]:
    body = node.body
    functions = [isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) for s in body]
    cut = 0
    for index, statement in enumerate(body):
        if not functions[index] or getattr(statement, "name", "") in {"__init__", "__post_init__"}:
            cut = index + 1
    if not all(functions[cut:]):
        cut = len(body)
    while cut < len(body) and _calls_bare_super(body[cut]):
        cut += 1
    previous_end = body[cut - 1].end_lineno if cut else node.lineno
    cells = ["".join(lines[start - 1 : previous_end]).strip("\n")]
    methods = body[cut:]
    for method in methods:
        end = method.end_lineno or method.lineno
        chunk = lines[previous_end:end]
        first = (method.decorator_list[0].lineno if method.decorator_list else method.lineno) - 1
        if _calls_bare_super(method):
            raise ExportError(
                f"{node.name}.{method.name} calls super() without arguments after other "
                "methods; move it up next to __init__ first"
            )
        dedented = [line[4:] if line.startswith("    ") else line for line in chunk]
        decorator_at = first - previous_end
        dedented.insert(decorator_at, f"@add_to_class({node.name})\n")
        cells.append("".join(dedented).strip("\n"))
        previous_end = end
    return cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.export", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report modules that drifted")
    parser.add_argument("--split", metavar="MODULE", help="print MODULE cut into export cells")
    parser.add_argument("notebook", nargs="?", type=Path, help="export only this chapter")
    args = parser.parse_args(argv)
    try:
        if args.split:
            print(json.dumps(split_module(Path(args.split).read_text()), indent=1))
            return 0
        if args.check:
            stale = drifted()
            for target in stale:
                print(f"{target} differs from its chapter's export cells")
            if stale:
                print(
                    "next step: run `python -m helpers.export` (or edit the chapter, not the file)"
                )
            return 1 if stale else 0
        for target in write_all(only=args.notebook):
            print(f"wrote {target}")
        return 0
    except ExportError as error:
        print(f"error: {error}\nnext step: fix that cell, then run `python -m helpers.export`.")
        return 2


if __name__ == "__main__":
    sys.exit(main())
