"""The mutation drill itself, offline and fast: its mutations apply, its copy is not the checkout.

The drill (``tests/mutation_drill.py``) runs against the cluster and takes minutes;
these tests check what can go stale or wrong without it: every mutation's text is
still where it says (a chapter edit can move it), a bad mutation is refused by
name, the copy the drill edits is never the checkout, and the README's table lists
exactly the mutations the drill defines.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import mutation_drill
from tests.mutation_drill import MutationError, apply, locate, make_copy
from tests.mutations import MUTATIONS, UNIT_TESTS, Mutation

ROOT = Path(__file__).resolve().parents[1]


def _notebook(name: str) -> dict:
    return json.loads((ROOT / "notebooks" / name).read_text())


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_applies_to_its_export_cell(mutation: Mutation) -> None:
    notebook = _notebook(mutation.notebook)
    locate(mutation, notebook)  # raises if the old text is not there exactly once
    target = mutation_drill.export_target(mutation, notebook)
    assert UNIT_TESTS[target], f"no unit tests named for {target}"
    for test in UNIT_TESTS[target]:
        assert (ROOT / test).is_file(), test
    headings = {mutation_drill.heading_of(notebook, i) for i in range(len(notebook["cells"]))}
    assert mutation.lesson in headings, f"{mutation.name}: no section {mutation.lesson!r}"
    assert mutation_drill.namespace_of(notebook), f"{mutation.notebook}: no namespace found"


def test_there_are_at_least_twelve_with_unique_names() -> None:
    names = [m.name for m in MUTATIONS]
    assert len(names) >= 12 and len(set(names)) == len(names)
    assert all(" | " not in name for name in names)  # they are cells of a Markdown table


@pytest.mark.parametrize(
    ("old", "times"),
    [("this text is in no cell", 0), ("self._dirty", 2)],  # `add` reads and writes _dirty
)
def test_a_mutation_whose_old_text_is_not_there_once_is_refused_by_name(
    old: str, times: int
) -> None:
    queue_add = next(m for m in MUTATIONS if "no dedup" in m.name)
    notebook = _notebook(queue_add.notebook)
    cell = next(c for c in notebook["cells"] if c.get("id") == queue_add.cell)
    assert "".join(cell["source"]).count(old) == times  # the premise
    broken = Mutation("a broken mutation", queue_add.notebook, queue_add.cell, old, "x", "")
    with pytest.raises(MutationError, match=rf"^a broken mutation: .* occurs {times} times"):
        locate(broken, notebook)


def test_a_mutation_of_a_cell_that_is_not_exported_is_refused() -> None:
    notebook = _notebook("04_workqueue.ipynb")
    demo = next(
        c
        for c in notebook["cells"]
        if c["cell_type"] == "code" and "q = Queue()" in "".join(c["source"])
    )
    broken = Mutation("a demo edit", "04_workqueue.ipynb", demo["id"], "q = Queue()", "q = 1", "")
    with pytest.raises(MutationError, match=r"^a demo edit: .* not an `#\| export` cell"):
        locate(broken, notebook)


def test_the_copy_is_never_the_checkout(tmp_path: Path) -> None:
    copy = make_copy()
    try:
        assert copy.resolve() != ROOT.resolve()
        assert ROOT.resolve() not in copy.resolve().parents
        assert (copy / "notebooks" / "04_workqueue.ipynb").is_file()
        assert not (copy / ".git").exists()
        mutation = MUTATIONS[0]
        before = (ROOT / "notebooks" / mutation.notebook).read_bytes()
        apply(mutation, copy)
        assert (ROOT / "notebooks" / mutation.notebook).read_bytes() == before
        edited = json.loads((copy / "notebooks" / mutation.notebook).read_text())
        assert mutation.new in "".join(edited["cells"][locate_new(mutation, edited)]["source"])
    finally:
        shutil.rmtree(copy)
    with pytest.raises(MutationError, match="refusing to edit the checkout"):
        apply(MUTATIONS[0], ROOT)
    with pytest.raises(MutationError, match="would overlap the checkout"):
        make_copy(parent=ROOT / "build")


def locate_new(mutation: Mutation, notebook: dict) -> int:
    return next(i for i, c in enumerate(notebook["cells"]) if c.get("id") == mutation.cell)


def test_a_copy_holds_new_files_but_not_ignored_ones(tmp_path: Path) -> None:
    """The drill tests the working tree as git sees it: a new module is in, .venv is not."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    (checkout / ".gitignore").write_text(".venv/\n")
    (checkout / "new.py").write_text("NEW = 1\n")
    (checkout / ".venv").mkdir()
    (checkout / ".venv" / "big").write_text("x")
    copy = make_copy(checkout, parent=tmp_path)
    assert sorted(p.name for p in copy.iterdir()) == [".gitignore", "new.py"]


def test_the_readme_table_lists_exactly_the_mutations() -> None:
    """Regenerate it with `python -m tests.mutation_drill --write-readme` (it runs the drill)."""
    assert mutation_drill.readme_names() == [m.name for m in MUTATIONS]


def test_the_readme_table_is_rewritten_between_its_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    start, end = mutation_drill.TABLE_START, mutation_drill.TABLE_END
    readme.write_text(f"before\n{start}\n| old | table |\n{end}\nafter\n")
    first, second = MUTATIONS[:2]
    results = [
        mutation_drill.Result(first, f"17, {first.lesson}", None, 3.2),
        mutation_drill.Result(second, "9, Elsewhere", "tests/test_x.py::test_y", 4.7),
    ]
    mutation_drill.write_readme(mutation_drill.table(results), "2 mutations, 2 caught.", readme)
    text = readme.read_text()
    assert text.startswith(f"before\n{start}\n| mutation |") and text.endswith(f"{end}\nafter\n")
    assert f"| {first.name} | `04_workqueue` cell 17, *{first.lesson}* | none | 3 |" in text
    elsewhere = f"cell 9, *Elsewhere* (not in its lesson, *{second.lesson}*)"
    assert f"| {second.name} | `04_workqueue` {elsewhere} | `test_x.py::test_y` | 5 |" in text
    assert mutation_drill.readme_names(readme) == [first.name, second.name]


def test_chapters_take_turns() -> None:
    """As few runs of one chapter right after another as the counts allow (none, today)."""
    order = mutation_drill.interleaved(MUTATIONS)
    assert sorted(m.name for m in order) == sorted(m.name for m in MUTATIONS)
    chapters = [m.notebook for m in order]
    repeats = sum(a == b for a, b in itertools.pairwise(chapters))
    most = max(map(chapters.count, chapters))
    assert repeats == max(0, most - (len(chapters) - most) - 1)


def test_make_test_runs_the_drill_only_after_a_passing_pytest_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests import run_all

    ran: list[tuple[str, ...]] = []
    monkeypatch.setattr(run_all, "run", lambda *command, env=None: ran.append(command) or 7)
    assert run_all.then_mutations(1, {}) == 1 and not ran
    assert "did not run: the pytest run must pass first" in capsys.readouterr().out
    assert run_all.then_mutations(0, {}) == 7
    assert ran == [tuple(run_all.MUTATION_DRILL)]
