"""The rules every chapter keeps, checked on the notebooks' files.

nbval checks that each chapter's outputs are real; these check the promises
around that: few cells with ignored output, each of them asserting what
matters; exercises with checks; outputs stored from a run; an own namespace
that the chapter deletes again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from book import study_time

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
IGNORE_MARKERS = ("# NBVAL_IGNORE_OUTPUT", "# NBVAL_SKIP", "# NBVAL_RAISES_EXCEPTION")


def _code_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def _outputs(path: Path) -> list[list[dict]]:
    cells = json.loads(path.read_text())["cells"]
    return [cell.get("outputs", []) for cell in cells if cell["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_ignored_cells_are_few_and_assert(path: Path) -> None:
    code = _code_cells(path)
    ignored = [source for source in code if source.lstrip().startswith(IGNORE_MARKERS)]
    assert len(ignored) * 4 < len(code), f"{len(ignored)} of {len(code)} code cells ignored"
    for source in ignored:
        assert not source.lstrip().startswith("# NBVAL_SKIP"), "a skipped cell tests nothing"
        assert "assert " in source, f"an ignored cell must assert what matters:\n{source}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_are_stored_from_a_run(path: Path) -> None:
    """Every code cell was executed, in order, and no stored output is an error."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    counts = [cell["execution_count"] for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), "re-execute the chapter top to bottom"
    for outputs in _outputs(path):
        assert all(output["output_type"] != "error" for output in outputs)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_has_exercises_with_checks(path: Path) -> None:
    chapter = path.name[:2]
    checks = [s for s in _code_cells(path) if re.search(rf"\bch{chapter}\.check_\d", s)]
    assert 2 <= len(checks) <= 4, f"{len(checks)} exercise checks"
    assert (path.parent / "solutions" / f"ch{chapter}.py").exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_works_in_its_own_namespace_and_deletes_it(path: Path) -> None:
    code = _code_cells(path)
    assert any("fresh_namespace(" in source for source in code[:8]), "namespace near the top"
    assert any("delete_namespace(" in source for source in code[-2:]), "cleanup at the end"


MAIN_LINE_LIMIT = 40


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_main_line_code_cells_are_short(path: Path) -> None:
    """A reader meets no code cell longer than 40 lines; longer ones hold production details
    and are collapsed (``jupyter.source_hidden``), still exported, with a sentence before them
    saying what they do."""
    cells = json.loads(path.read_text())["cells"]
    long = [
        f"cell {index}: {len(''.join(cell['source']).splitlines())} lines"
        for index, cell in enumerate(cells)
        if cell["cell_type"] == "code"
        and not cell.get("metadata", {}).get("jupyter", {}).get("source_hidden")
        and len("".join(cell["source"]).splitlines()) > MAIN_LINE_LIMIT
    ]
    assert long == [], f"collapse these or split them: {long}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_stale_widget_state(path: Path) -> None:
    """Only the widget models an output still shows are stored (`python -m helpers.tidy`)."""
    from helpers.tidy import _state, needed_models

    notebook = json.loads(path.read_text())
    stale = set(_state(notebook)) - needed_models(notebook)
    assert not stale, f"{len(stale)} stale widget models: run `python -m helpers.tidy`"


def _label(path: Path) -> str:
    return path.name.split("_", 1)[0]


def test_the_estimate_counts_prose_code_collapsed_code_and_pictures() -> None:
    """350 words, 25 visible code lines (a blank line, a comment and a directive do not count),
    40 collapsed lines and one picture: 2 + 2.5 + 2 + 2 minutes."""
    picture = {"output_type": "display_data", "data": {"image/png": "", "text/plain": ""}}
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["word " * 350]},
        {"cell_type": "code", "metadata": {}, "source": ["#| export x\n", "a = 1\n\n"] * 25},
        {"cell_type": "code", "metadata": {"jupyter": {"source_hidden": True}},
         "source": ["b = 2\n"] * 40, "outputs": [picture]},
    ]  # fmt: skip
    assert study_time.study_time({"cells": cells}).main == 8.5


def test_a_deep_dive_runs_to_the_next_heading_of_its_level() -> None:
    def markdown(text: str, *tags: str) -> dict:
        return {"cell_type": "markdown", "metadata": {"tags": list(tags)}, "source": text}

    cells = [
        markdown("# T"),
        markdown("## Deep dive: paging\n\n" + "word " * 175, "deep-dive"),
        markdown("### A part of it\n\n" + "word " * 175, "deep-dive"),
        markdown("## Summary\n\n" + "word " * 350),
    ]
    time = study_time.study_time({"cells": cells})
    assert [(d.title, d.first, d.end) for d in time.deep_dives] == [("paging", 1, 3)]
    assert round(time.deep) == 2 and round(time.main) == 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_deep_dives_are_tagged_and_listed(path: Path) -> None:
    """Every cell of a deep dive carries the ``deep-dive`` tag and no other cell does; each deep
    dive's heading opens its cell (so a learner skipping it skips whole cells); the first cell
    names each deep dive, so a learner knows what a first pass may skip."""
    cells = json.loads(path.read_text())["cells"]
    dives = study_time.deep_dive_sections(cells)
    inside = {index for dive in dives for index in range(dive.first, dive.end)}
    tagged = {index for index, cell in enumerate(cells) if study_time.is_deep_dive(cell)}
    assert sorted(inside - tagged) == [], "cells of a deep dive without the deep-dive tag"
    assert sorted(tagged - inside) == [], "cells tagged deep-dive outside any deep dive"
    first = " ".join(study_time.source(cells[0]).split())
    for dive in dives:
        opening = study_time.source(cells[dive.first]).lstrip()
        assert opening.startswith("#" * dive.level + " Deep dive:"), (
            f"cell {dive.first}: a deep dive's heading must be its cell's first line"
        )
        assert dive.title in first, f"the first cell does not list 'Deep dive: {dive.title}'"


def test_exercises_are_found_past_code_in_them() -> None:
    cells = [
        {"cell_type": "markdown", "source": "## Exercises\n\n**1.** *(about 5 minutes)* Run:\n"
         "```python\n# not a heading\nq.add('a')\n```\n**2.** *(about 15 minutes)* Build."},
        {"cell_type": "markdown", "source": "## How client-go does it\n\n**3.** not one"},
    ]  # fmt: skip
    found = study_time.exercises(cells)
    assert [(e.number, e.minutes) for e in found] == [(1, 5), (2, 15)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_exercise_states_its_minutes(path: Path) -> None:
    found = study_time.exercises(json.loads(path.read_text())["cells"])
    assert found, "no numbered exercises (**1.** ...) under the heading 'Exercises'"
    assert [e.number for e in found] == list(range(1, len(found) + 1)), "exercises 1, 2, 3..."
    unstated = [e.number for e in found if e.minutes is None]
    assert unstated == [], f"exercises {unstated}: say '**N.** *(about M minutes)*'"


def _close(stated: int | None, computed: float) -> bool:
    return stated is not None and abs(stated - computed) <= max(2, computed / 10)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_states_its_study_time(path: Path) -> None:
    """The first cell states the main line, the deep dives and the exercises as
    ``book.study_time`` computes them today (within 2 minutes or a tenth): a chapter that grows
    must say so. The main line fits one sitting (45 minutes), the chapter 90."""
    notebook = json.loads(path.read_text())
    time = study_time.study_time(notebook)
    stated = study_time.stated(study_time.source(notebook["cells"][0]))
    expected = f"state: '{time.sentence()}'"
    assert _close(stated["main"], time.main), expected
    assert _close(stated["deep"], time.deep), expected
    assert stated["exercises"] == time.exercise_minutes, expected
    assert time.main <= study_time.MAIN_LINE_LIMIT, f"main line {time.main:.0f} minutes"
    assert time.whole <= study_time.CHAPTER_LIMIT, f"whole chapter {time.whole:.0f} minutes"


SANITIZER = Path(__file__).resolve().parent / "nbval-sanitize.cfg"


def _output_texts(cell: dict) -> list[str]:
    texts = []
    for output in cell.get("outputs", []):
        text = output.get("text") or output.get("data", {}).get("text/plain", "")
        texts.append("".join(text) if isinstance(text, list) else text)
    return texts


def masked_cells_without_assert(notebook: dict, patterns: list[tuple[str, str]]) -> set[int]:
    """Indexes of the code cells whose stored output a sanitizer pattern changes (so nbval no
    longer compares what it masked) and whose source asserts nothing."""
    found = set()
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code" or re.search(r"\bassert\b", "".join(cell["source"])):
            continue
        for text in _output_texts(cell):
            if any(re.sub(regex, replace, text) != text for regex, replace in patterns):
                found.add(index)
    return found


def test_a_masked_output_without_an_assert_is_found() -> None:
    cell = {"cell_type": "code", "source": "print(n)", "outputs": [{"text": "7 syncs"}]}
    asserted = {**cell, "source": "print(n)\nassert n < 30"}
    patterns = [(r"\d+ syncs", "N syncs")]
    assert masked_cells_without_assert({"cells": [cell, asserted]}, patterns) == {0}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_masked_output_has_an_assert(path: Path) -> None:
    """nbval compares a masked value with nothing: the cell must assert what it must satisfy
    (``syncs < 30``, the cache's version older than the written one), or a wrong lesson passes
    CI. Every sanitizer rule counts, a port or a UID too (assert it is the one the cell made)."""
    from nbval.plugin import get_sanitize_patterns

    patterns = get_sanitize_patterns(SANITIZER.read_text())
    found = masked_cells_without_assert(json.loads(path.read_text()), patterns)
    assert sorted(found) == [], "masked output, no assert: assert what the value must be"


PICTURE_TYPES = ("image/png", "image/svg+xml", "application/vnd.jupyter.widget-view+json")
FIRST_PICTURE_WITHIN = 8
PHENOMENON_FIRST = ("06", "07", "08", "09", "10")  # the second half opens with what happens


@pytest.mark.parametrize(
    "path", [p for p in NOTEBOOKS if p.name[:2] in PHENOMENON_FIRST], ids=lambda p: p.name
)
def test_the_phenomenon_comes_before_the_instruments(path: Path) -> None:
    """A chapter of the second half shows its phenomenon on the cluster, as a picture, within
    its first 8 code cells; how the instrument works waits for an aside (STYLE.md)."""
    for outputs in _outputs(path)[:FIRST_PICTURE_WITHIN]:
        if any(kind in output.get("data", {}) for output in outputs for kind in PICTURE_TYPES):
            return
    pytest.fail(f"no picture in the first {FIRST_PICTURE_WITHIN} code cells")


ROOT_DIR = Path(__file__).resolve().parents[1]
TABLES = (ROOT_DIR / "README.md", ROOT_DIR / "docs" / "facilitator.md")


def _study_table(text: str) -> dict[str, dict[str, str]]:
    """The table whose header names a "main line" column: chapter label -> column -> cell."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        cells = [c.strip().lower() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and "main line" in cells:
            rows = {}
            for row in lines[start + 2 :]:
                if not row.startswith("|"):
                    break
                values = [c.strip() for c in row.strip().strip("|").split("|")]
                rows[values[0].split()[0]] = dict(zip(cells, values, strict=True))
            return rows
    return {}


def _minutes(cell: str) -> int:
    """ "about 44 min" -> 44; "none" -> 0."""
    if cell.strip().lower() == "none":
        return 0
    found = re.search(r"(\d+) min", cell)
    assert found, f"no minutes in {cell!r}"
    return int(found.group(1))


@pytest.mark.parametrize("page", TABLES, ids=lambda p: p.name)
def test_the_readme_and_the_facilitator_guide_state_each_chapters_times(page: Path) -> None:
    """Their tables give each chapter's main line, deep dives and exercises as the chapter's
    first cell does (book.study_time computes all three), and the README the two paths' totals:
    every main line, and everything."""
    table = _study_table(page.read_text())
    assert table, f"{page.name} has no table with a 'main line' column"
    totals = {"main": 0, "all": 0}
    for path in NOTEBOOKS:
        time = study_time.read(path)
        row = table.get(_label(path))
        assert row is not None, f"{page.name} has no row for {path.name}"
        assert _close(_minutes(row["main line"]), time.main), f"{path.name}: {row}"
        assert _close(_minutes(row["deep dives"]), time.deep), f"{path.name}: {row}"
        assert _minutes(row["exercises"]) == time.exercise_minutes, f"{path.name}: {row}"
        totals["main"] += round(time.main)
        totals["all"] += round(time.main) + round(time.deep) + time.exercise_minutes
    if page.name == "README.md":
        stated = re.search(r"every chapter's main line: about (\d+) hours?(?: (\d+) minutes)?",
                           page.read_text())  # fmt: skip
        everything = re.search(r"everything[^:]*: about (\d+) hours?(?: (\d+) minutes)?",
                               page.read_text())  # fmt: skip
        for name, found in (("main", stated), ("all", everything)):
            assert found, f"the README does not state the {name} path's total"
            minutes = int(found.group(1)) * 60 + int(found.group(2) or 0)
            assert abs(minutes - totals[name]) <= 15, f"{name}: {minutes} against {totals[name]}"
