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


READING_WORDS_PER_MINUTE = 200
STATED_TIME = re.compile(r"\bAbout (\d+) minutes", re.IGNORECASE)
CORE_CHAPTERS = ("00", "01", "02", "03", "04", "05")  # the path to a working controller


def estimated_minutes(path: Path) -> float:
    """The course's estimate: prose at 200 words a minute, a minute per main-line code cell."""
    words, main_line = 0, 0
    for cell in json.loads(path.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            words += len(re.findall(r"\w+", source))
        elif not cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            main_line += 1
    return words / READING_WORDS_PER_MINUTE + main_line


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_states_its_time_honestly(path: Path) -> None:
    """The first cell says how long the chapter takes ("About N minutes"), and N is what the
    course's estimate gives today: a chapter that grows must say so. The core chapters, up to
    the working controller, keep to an hour each (issue 9); chapters 06-08 go further and say
    in which sittings to read them."""
    first = "".join(json.loads(path.read_text())["cells"][0]["source"])
    stated = STATED_TIME.search(first)
    assert stated, 'the first cell must say "About N minutes to read and run"'
    estimate = estimated_minutes(path)
    assert abs(int(stated.group(1)) - estimate) <= max(5, estimate / 10), (
        f"states {stated.group(1)} minutes; the estimate is {estimate:.0f}"
    )
    if path.name[:2] in CORE_CHAPTERS:
        assert estimate <= 60, f"{estimate:.0f} minutes: split the chapter or tighten it"
