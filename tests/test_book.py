"""The course as a book (``make book``): it builds with warnings as errors, every link on it
resolves, every chapter heading is on its page, no page asks for anything from another site,
and in a real browser, at a phone's width and a wide screen's, its pictures show while its
collapsed cells and its solutions stay folded until opened.

The book is built once for this module, into a temporary folder (never into the checkout), by
the same command as ``make book``. The browser is the operating system's Chromium, driven by
Playwright as in tests/test_browser.py (``CFS_CHROMIUM`` names another binary): without it the
browser tests are skipped with a reason, and under ``CI=true`` they fail.
``CFS_BOOK_SCREENSHOTS=<folder>`` keeps a screenshot of each page the browser tests open.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from markdown_it import MarkdownIt

from book.build import BOOK_MARKER, DEFAULT_OUT, _check_replaceable
from book.chapters import CHAPTER_PATTERN, Chapter, Exercise, needs, solution_source
from book.stage import copy_linked_files, describe_widget, for_the_book
from helpers.errors import CourseError
from tests.chromium import launched

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob(CHAPTER_PATTERN))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# Attributes by which a page loads something (an <a href> is only a link a reader may follow).
LOADS = {
    "script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src",
    "audio": "src", "embed": "src", "object": "data", "link": "href",
}  # fmt: skip
# What Sphinx's smart quotes make of quotes and dashes.
TYPOGRAPHY = {"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2014": "---",
              "\u2013": "--"}  # fmt: skip
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)|@import\s+['"]([^'"]+)""")


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the build


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The book, built as `make book` builds it, into a temporary folder."""
    out = tmp_path_factory.mktemp("book") / "site"
    started = time.monotonic()
    built = subprocess.run(
        [sys.executable, "-m", "book.build", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,  # a hang, not a slow machine: the build takes about a minute here
        check=False,
    )
    seconds = time.monotonic() - started
    print(f"the book built in {seconds:.0f} s")
    assert built.returncode == 0, f"make book failed:\n{built.stdout}\n{built.stderr}"
    return out


class Page(HTMLParser):
    """What a test needs of one HTML page: what it loads, links to, names, and its headings."""

    def __init__(self, path: Path) -> None:
        super().__init__(convert_charrefs=True)
        self.path = path
        self.loads: list[str] = []
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.headings: list[str] = []
        self.classes: list[str] = []  # each element's class attribute
        self._text: list[str] = []
        self._code = 0  # depth inside a script or a style
        self._heading: list[str] | None = None
        self._skip = 0  # depth inside a heading's permalink
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self._code += tag in ("script", "style")
        if "id" in values:
            self.ids.add(values["id"])
        if tag == "a" and "name" in values:
            self.ids.add(values["name"])
        self.classes.append(values.get("class", ""))
        navigation = tag == "link" and values.get("rel") in ("canonical", "next", "prev")
        if tag in LOADS and values.get(LOADS[tag]) and not navigation:
            self.loads.append(values[LOADS[tag]])
        if tag == "a" and values.get("href"):
            self.links.append(values["href"])
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = []
        if self._heading is not None and tag == "a" and "headerlink" in values.get("class", ""):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        self._code -= tag in ("script", "style")
        if tag == "a" and self._skip:
            self._skip -= 1
        if re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            self.headings.append(_plain("".join(self._heading)))
            self._heading = None

    def handle_data(self, data: str) -> None:
        if not self._code:
            self._text.append(data)
        if self._heading is not None and not self._skip:
            self._heading.append(data)

    @property
    def text(self) -> str:
        """What a reader sees of the page, on one line."""
        return " ".join("".join(self._text).split())

    def count(self, css_class: str) -> int:
        return sum(1 for classes in self.classes if css_class in classes.split())


@functools.cache
def _page(path: Path) -> Page:
    """Each page parsed once for the whole module (a chapter's page is a few hundred kB)."""
    return Page(path)


def _plain(text: str) -> str:
    """Text as a heading shows it, whatever typography Sphinx applied (smart quotes, dashes)."""
    for fancy, plain in TYPOGRAPHY.items():
        text = text.replace(fancy, plain)
    return " ".join(text.split())


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def _is_external(url: str) -> bool:
    return bool(re.match(r"^([a-z][a-z0-9+.-]*:)?//", url, re.IGNORECASE))


def _chapter_page(site: Path, chapter: Path) -> Path:
    return site / "notebooks" / f"{chapter.stem}.html"


def test_the_book_has_a_page_per_chapter_and_lists_them(site: Path) -> None:
    index = _page(site / "index.html")
    for chapter in CHAPTERS:
        assert _chapter_page(site, chapter).exists(), f"no page for {chapter.name}"
        assert f"notebooks/{chapter.stem}.html" in index.links, f"the index omits {chapter.name}"
    for page in ("docs/facilitator.html", "benchmarks/RESULTS.html"):
        assert page in index.links
    intro = (ROOT / "README.md").read_text().split("\n\n")[1].split()[:8]
    assert " ".join(intro) in index.text


def test_every_chapter_heading_is_on_its_page(site: Path) -> None:
    markdown = MarkdownIt("commonmark")
    for chapter in CHAPTERS:
        page = _page(_chapter_page(site, chapter))
        for cell in _load(chapter)["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            tokens = markdown.parse("".join(cell["source"]))
            for opening, inline in itertools.pairwise(tokens):
                if opening.type == "heading_open":
                    text = _plain("".join(c.content for c in inline.children or []))
                    assert text in page.headings, f"{chapter.name}: heading {text!r} missing"


def test_every_internal_link_and_anchor_resolves(site: Path) -> None:
    pages = {path: _page(path) for path in _pages(site)}
    broken = []
    for path, page in pages.items():
        for url in page.links + page.loads:
            if _is_external(url) or url.startswith(("mailto:", "data:", "javascript:")):
                continue
            parts = urlsplit(url)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{path.relative_to(site)}: {url} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                known = pages[target].ids if target in pages else _page(target).ids
                if unquote(parts.fragment) not in known:
                    broken.append(f"{path.relative_to(site)}: {url} (no such anchor)")
    assert not broken, "\n".join(broken)


def test_links_between_chapters_lead_to_their_pages(site: Path) -> None:
    """A chapter's Markdown that names another chapter's .ipynb links to that chapter's page."""
    linked = 0
    for chapter in CHAPTERS:
        page = _page(_chapter_page(site, chapter))
        for other in CHAPTERS:
            mentions = re.findall(rf"\]\({re.escape(other.name)}(#[^)]*)?\)", chapter.read_text())
            if mentions and other != chapter:
                assert any(link.startswith(f"{other.stem}.html") for link in page.links)
                linked += 1
        assert not any(".ipynb" in urlsplit(link).path for link in page.links), chapter.name
    assert linked, "no chapter links to another: the check checked nothing"


def test_no_page_loads_anything_from_another_site(site: Path) -> None:
    external = [
        f"{path.relative_to(site)}: {url}"
        for path in _pages(site)
        for url in _page(path).loads
        if _is_external(url)
    ]
    for css in site.rglob("*.css"):
        for match in CSS_URL.finditer(css.read_text(encoding="utf-8")):
            url = match.group(1) or match.group(2)
            if _is_external(url):
                external.append(f"{css.relative_to(site)}: {url}")
    assert not external, "\n".join(external)


def test_chapter_pages_say_time_needs_and_how_to_run(site: Path) -> None:
    for path in CHAPTERS:
        chapter = Chapter(path, _load(path))
        text = _page(_chapter_page(site, path)).text
        assert f"Time: {chapter.reading_time}" in text, path.name
        assert "Needs: a running cluster" in text, path.name
        assert "Run this chapter yourself" in text and "make course" in text, path.name
        assert f"Then open {path.name} in JupyterLab" in text, path.name


def test_collapsed_cells_solutions_and_widgets_are_folded_or_pictured(site: Path) -> None:
    """Each collapsed cell is a folded block, each exercise has a folded solution, and each live
    widget shows its stored values: never an empty widget placeholder."""
    for path in CHAPTERS:
        notebook = _load(path)
        code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
        collapsed = sum(1 for c in code if c["metadata"].get("jupyter", {}).get("source_hidden"))
        shown = [[WIDGET_VIEW in o.get("data", {}) for o in c["outputs"]] for c in code]
        widgets = sum(
            now and not before for c in shown for before, now in itertools.pairwise([0, *c])
        )
        state = notebook["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
        labels = [m["state"]["description"] for m in state.values() if "description" in m["state"]]
        labels = [label for label in labels if label]
        html_path = _chapter_page(site, path)
        page = _page(html_path)
        assert page.count("above-input") == collapsed, path.name
        exercises = Chapter(path, notebook).exercises
        assert page.count("cfs-solution") == len(exercises), path.name
        for exercise in exercises:
            assert f"Show a solution to exercise {exercise.number}" in page.text, path.name
            # the number the chapter's own check prints for it, where the reader sees it
            outputs = notebook["cells"][exercise.cell]["outputs"]
            said = " ".join(
                str(o.get("data", {}).get("text/plain", o.get("text"))) for o in outputs
            )
            assert f"Exercise {exercise.number}:" in said, f"{path.name}: {exercise}"
        assert page.count("cfs-widget-snapshot") == widgets, path.name
        text = html_path.read_text()
        assert WIDGET_VIEW not in text and "jupyter-widgets" not in text, path.name
        assert all(label in page.text for label in labels), f"{path.name}: {labels}"


def test_every_deep_dive_is_folded_with_its_minutes(site: Path) -> None:
    for path in CHAPTERS:
        chapter = Chapter(path, _load(path))
        page = _page(_chapter_page(site, path))
        assert page.count("cfs-deep-dive") == len(chapter.deep_dives), path.name
        for title, minutes in chapter.deep_dives.items():
            assert _plain(f"Deep dive: {title} · about {minutes} minutes") in page.text, title


def test_search_index_covers_every_chapter(site: Path) -> None:
    assert (site / "search.html").exists()
    index = (site / "searchindex.js").read_text(encoding="utf-8")
    for path in CHAPTERS:
        assert f'"notebooks/{path.stem}"' in index, path.name


def test_a_broken_link_in_a_chapter_fails_the_build(tmp_path: Path) -> None:
    """Warnings are errors: a link to a chapter that does not exist stops `make book`."""
    course = _small_course(tmp_path / "course", link="02_no_such_chapter.ipynb")
    built = subprocess.run(
        [sys.executable, "-m", "book.build", "--root", str(course), "--out", str(tmp_path / "o")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 2, built.stdout + built.stderr
    assert "02_no_such_chapter" in built.stderr and "next step:" in built.stderr
    assert not (tmp_path / "o").exists()


def test_a_deep_dive_is_folded_under_its_title_and_minutes(tmp_path: Path) -> None:
    """A chapter's deep dive becomes one folded block whose line gives its minutes (here 350
    words and a short section: 2 minutes), holding its section and subsections; the sections
    around it stay as they were."""
    course = _small_course(tmp_path / "course", link="01_second.ipynb")
    out = tmp_path / "o"
    built = subprocess.run(
        [sys.executable, "-m", "book.build", "--root", str(course), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    html = (out / "notebooks" / "01_second.html").read_text(encoding="utf-8")
    folded = re.search(r'<details class="cfs-deep-dive">\s*<summary>(.*?)</summary>(.*?)</details>',
                       html, re.S)  # fmt: skip
    assert folded, "no folded deep dive on the page"
    assert folded.group(1) == "Deep dive: Paging · about 2 minutes"
    assert "Why 500" in folded.group(2) and "What it does" not in folded.group(2)
    assert "Clean up" not in folded.group(2) and "Clean up" in html
    assert 'id="deep-dive-paging"' in folded.group(2), "the section keeps its anchor"


def _small_course(root: Path, link: str) -> Path:
    """A course of two chapters, with the pages the book expects around them."""
    (root / "notebooks" / "solutions").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "benchmarks").mkdir()
    (root / "README.md").write_text("# Small\n\nA small course.\n\n## Everyday commands\n\nNone.\n")
    (root / "docs" / "facilitator.md").write_text("# Facilitating\n\nText.\n")
    (root / "benchmarks" / "RESULTS.md").write_text("# Results\n\nNumbers.\n")
    (root / "notebooks" / "solutions" / "ch00.py").write_text(
        '"""Solutions."""\n\n# the answer, explained\nanswer_1 = 42\n'
    )
    for name, cells in {
        "00_first": [
            _markdown(f"# 00 · First\n\n*{STUDY_TIME}*\n\nOn to [the next]({link}).\n"),
            _code("from helpers.exercises import ch00\n\nanswer_1 = None\nch00.check_1(answer_1)"),
        ],
        "01_second": [
            _markdown(f"# 01 · Second\n\n*{STUDY_TIME}*\n\nDeep dives: *Paging*.\n"),
            _markdown("## What it does\n\nIt pages."),
            _deep_dive_markdown("## Deep dive: Paging\n\n" + "word " * 350),
            _deep_dive_markdown("### Why 500\n\nA page of 500."),
            _markdown("## Clean up\n\nNothing to clean."),
        ],
    }.items():
        metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3"},
                    "language_info": {"name": "python"}}  # fmt: skip
        notebook = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
        (root / "notebooks" / f"{name}.ipynb").write_text(json.dumps(notebook))
    return root


STUDY_TIME = "Study time: main line about 5 minutes, no deep dives, exercises about 5 minutes."


def _markdown(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": _id(source), "metadata": {}, "source": source}


def _deep_dive_markdown(source: str) -> dict[str, Any]:
    return {**_markdown(source), "metadata": {"tags": ["deep-dive"]}}


def _code(source: str) -> dict[str, Any]:
    cell = {"cell_type": "code", "id": _id(source), "metadata": {}, "source": source}
    return {**cell, "execution_count": 1, "outputs": []}


def _id(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()[:12]


def test_make_book_writes_where_git_ignores_and_the_workflow_publishes() -> None:
    out = DEFAULT_OUT.relative_to(ROOT).as_posix()
    ignored = subprocess.run(
        ["git", "check-ignore", "--quiet", f"{out}/index.html"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0, f"{out}/ is not in .gitignore"
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    steps = workflow["jobs"]["publish"]["steps"]
    assert {"run": "make book"} in steps
    assert any(step.get("with", {}).get("path") == out for step in steps), steps


# ---------------------------------------------------------------- the staging, without Sphinx


def _chapter(name: str, *sources: str, first: str = "") -> Chapter:
    cells = [_markdown(first or f"# {name}\n\n*{STUDY_TIME}*")]
    cells += [_code(source) for source in sources]
    return Chapter(Path(f"{name}.ipynb"), {"cells": cells, "metadata": {}})


def test_a_chapter_needs_the_earlier_chapters_whose_modules_it_imports() -> None:
    store = _chapter("02_store", "#| export helpers/store.py\nclass Indexer: ...")
    queue = _chapter("04_queue", "#| export helpers/workqueue/queue.py\nclass Queue: ...")
    later = _chapter("05_controller", "#| export helpers/controller.py\nFOO = 1")
    user = _chapter(
        "04b_user",
        "from helpers.store import Indexer\nfrom helpers import workqueue\n%time x = 1",
        "from helpers.controller import FOO  # a later chapter's: not a need",
    )
    chapters = [store, queue, user, later]
    found = [(need.chapter.name, need.modules) for need in needs(user, chapters)]
    assert found == [("02_store", ["helpers.store"]), ("04_queue", ["helpers.workqueue"])]


def test_the_reading_time_is_the_first_cells_statement() -> None:
    chapter = _chapter(
        "x",
        first="# X\n\n*Study time: main line about 41 minutes, deep dives about\n37 minutes, "
        "exercises about 45 minutes. Run All takes about 9 s.*",
    )
    assert chapter.reading_time == (
        "Study time: main line about 41 minutes, deep dives about 37 minutes, "
        "exercises about 45 minutes"
    )
    with pytest.raises(CourseError, match="how long it takes"):
        _ = _chapter("y", first="# Y\n\nNo time given.").reading_time


def test_a_solution_is_its_definition_with_the_comments_above_it(tmp_path: Path) -> None:
    solutions = tmp_path / "ch04.py"
    solutions.write_text(
        "import os\n\nanswer_1 = 1  # not this one\n\n# Why: the larger of two.\n"
        "# Second line.\n@staticmethod\ndef limiter_2(x):\n    return x\n\nafter = 3\n"
    )
    chapter = _chapter("04_q")
    source = solution_source(
        solutions, Exercise(3, 2, "ch04.check_2", "ch04", "limiter_2"), chapter
    )
    assert source == (
        "# Why: the larger of two.\n# Second line.\n@staticmethod\ndef limiter_2(x):\n    return x"
    )
    with pytest.raises(CourseError, match="does not define"):
        solution_source(solutions, Exercise(3, 3, "ch04.check_3", "ch04", "missing"), chapter)
    with pytest.raises(CourseError, match="does not exist"):
        solution_source(
            tmp_path / "ch09.py", Exercise(3, 1, "ch09.check_1", "ch09", "answer_1"), chapter
        )


def test_exercises_are_found_by_their_check_calls() -> None:
    chapter = _chapter(
        "02a_q",
        "from helpers.exercises import ch02",
        "print(ch02.SCHEDULE)\nanswer_store = None\nch02.check_5(answer_store)",
        "other.check_1(answer)  # not an exercise module",
        "schedule = None\nch02.check_3(schedule)",
    )
    assert chapter.exercises == [  # numbered as the chapter numbers them, not by their checks
        Exercise(2, 1, "ch02.check_5", "ch02", "answer_store"),
        Exercise(4, 2, "ch02.check_3", "ch02", "schedule"),
    ]


def test_a_solution_shows_every_answer_its_check_is_given(tmp_path: Path) -> None:
    """``ch02.check_1(next_action, relist_resource_version, api)``: both functions are the
    learner's; ``api`` is not in the solutions, so it is not looked for."""
    solutions = tmp_path / "ch02.py"
    solutions.write_text(
        "def relist_resource_version(last, unavailable):\n    return last\n\n\n"
        "other = 1\n\n\n# Which way next.\ndef next_action(ending):\n    return 'watch'\n"
    )
    chapter = _chapter("02b_r", "ch02.check_1(next_action, relist_resource_version, api)")
    exercise = Exercise(1, 1, "ch02.check_1", "ch02", "next_action",
                        ("relist_resource_version", "api"))  # fmt: skip
    source = solution_source(solutions, exercise, chapter)
    assert source.startswith("def relist_resource_version") and "# Which way next." in source
    assert "other = 1" not in source


def test_widgets_become_their_stored_values() -> None:
    state = {
        "box": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_a", "IPY_MODEL_b"]}},
        "a": {
            "model_name": "FloatSliderModel",
            "state": {"description": "work (s)", "value": 0.2, "min": 0.01, "max": 0.5}
            | {"readout_format": ".2f"},
        },
        "b": {"model_name": "ButtonModel", "state": {"description": "burst"}},
    }
    assert describe_widget("box", state) == [
        "work (s): 0.20 (a slider from 0.01 to 0.5)",
        "a button “burst”",
    ]
    assert describe_widget("gone", state) == []


def test_the_staged_chapter_folds_collapsed_cells_and_drops_widget_state(tmp_path: Path) -> None:
    view = {"model_id": "gone", "version_major": 2, "version_minor": 0}
    chapter = _chapter("00_a", "x = 1", "plumbing = 2")
    chapter.notebook["cells"][2]["metadata"]["jupyter"] = {"source_hidden": True}
    chapter.notebook["cells"][1]["outputs"] = [
        {"output_type": "display_data", "metadata": {},
         "data": {WIDGET_VIEW: view, "text/plain": "IntSlider(value=3)"}},
    ]  # fmt: skip
    chapter.notebook["metadata"]["widgets"] = {"state": {}}
    staged = for_the_book(chapter, [chapter], tmp_path)
    assert "widgets" not in staged["metadata"]
    assert staged["cells"][2]["metadata"]["tags"] == ["hide-input"]
    output = staged["cells"][1]["outputs"][0]["data"]
    assert WIDGET_VIEW not in output and "IntSlider(value=3)" in output["text/html"]
    assert "Run this chapter yourself" in staged["cells"][0]["source"]
    assert chapter.notebook["cells"][2]["metadata"].get("tags") is None  # the original is kept


def test_files_pages_link_to_are_staged_and_their_links_followed(tmp_path: Path) -> None:
    root, into = tmp_path / "course", tmp_path / "staged"
    links = (
        "See [the CRD](../manifests/crd.yaml), [notes](../docs/n.md), [gone](missing.py) "
        "and [the web](https://example.org/x.py)."
    )
    for path, text in {
        "notebooks/00_a.ipynb": json.dumps({"cells": [_markdown(links)]}),
        "manifests/crd.yaml": "kind: CustomResourceDefinition\n",
        "docs/n.md": "# Notes\n\nThe [Containerfile](../Containerfile#L3).\n",
        "Containerfile": "FROM python:3.11\n",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (into / "notebooks").mkdir(parents=True)
    shutil.copyfile(root / "notebooks/00_a.ipynb", into / "notebooks/00_a.ipynb")
    copy_linked_files(root, into)
    staged = sorted(str(p.relative_to(into)) for p in into.rglob("*") if p.is_file())
    assert staged == ["Containerfile", "docs/n.md", "manifests/crd.yaml", "notebooks/00_a.ipynb"]
    assert (into / "docs/n.md").read_text().startswith("---\norphan: true\n---\n")


def test_the_build_replaces_only_an_earlier_book(tmp_path: Path) -> None:
    _check_replaceable(tmp_path / "missing")
    _check_replaceable(tmp_path)  # empty
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(CourseError, match="left alone"):
        _check_replaceable(tmp_path)
    # Another project's Sphinx build: Sphinx writes .buildinfo into every HTML build.
    (tmp_path / ".buildinfo").write_text("# Sphinx build info")
    (tmp_path / "index.html").write_text("<p>their documentation</p>")
    with pytest.raises(CourseError, match="left alone"):
        _check_replaceable(tmp_path)
    (tmp_path / BOOK_MARKER).write_text("the book")
    _check_replaceable(tmp_path)


def test_the_build_marks_the_book_it_writes(site: Path) -> None:
    assert "make book" in (site / BOOK_MARKER).read_text()
    _check_replaceable(site)  # the next build may replace it


# ---------------------------------------------------------------- in a browser

WIDTHS = (375, 1920)
WIDE, WIDE_COLUMN = 1600, 1024  # from this window width on, pictures up to 1,024 px keep their size
PHONE = 800  # below this width the chapter list hides behind a menu button


def _pictured_chapters(count: int = 3) -> list[Path]:
    """The chapters with the most stored pictures among those with collapsed cells: the pages a
    browser has most to check on (pictures, and cells that must stay collapsed)."""

    def pictures(path: Path) -> int:
        cells = _load(path)["cells"]
        return sum("image/png" in o.get("data", {}) for c in cells for o in c.get("outputs", []))

    def collapsed(path: Path) -> bool:
        cells = _load(path)["cells"]
        return any(c["metadata"].get("jupyter", {}).get("source_hidden") for c in cells)

    candidates = [path for path in CHAPTERS if collapsed(path)]
    return sorted(candidates, key=lambda path: (-pictures(path), path.name))[:count]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched("the browser tests of the book") as chromium_browser:
        yield chromium_browser


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on 127.0.0.1, as a web host would serve it; yields its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site))
    )
    thread = threading.Thread(target=server.serve_forever, name="book-server")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()


class Visit:
    """A page open in Chromium, with every request it made that left the book's server."""

    def __init__(self, browser: Any, base: str, width: int) -> None:
        self.base = base
        self.elsewhere: list[str] = []
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.page.route("**/*", self._only_the_book)

    def _only_the_book(self, route: Any) -> None:
        if route.request.url.startswith(self.base):
            route.continue_()
        else:
            self.elsewhere.append(route.request.url)
            route.abort()

    def open(self, path: str) -> Any:
        self.page.goto(f"{self.base}/{path}", wait_until="load")
        return self.page


# Every picture in the article: loaded, of some size, and not a single colour (a sample of
# pixels, drawn on a canvas, differs). Pictures load lazily at most when scrolled to.
PICTURES = """
async () => {
  const found = [];
  for (const img of document.querySelectorAll('article img')) {
    img.scrollIntoView();
    if (!img.complete) await new Promise((done) => { img.onload = img.onerror = done; });
    const canvas = document.createElement('canvas');
    canvas.width = Math.min(img.naturalWidth, 400);
    canvas.height = Math.min(img.naturalHeight, 400);
    let colours = 0;
    if (canvas.width && canvas.height) {
      const context = canvas.getContext('2d');
      context.drawImage(img, 0, 0, canvas.width, canvas.height);
      const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
      const seen = new Set();
      for (let i = 0; i < pixels.length && seen.size < 2; i += 4 * 7) {
        seen.add(pixels.slice(i, i + 4).join(','));
      }
      colours = seen.size;
    }
    const link = img.closest('a');
    found.push({src: img.getAttribute('src'), width: img.naturalWidth, colours: colours,
                shown: img.getBoundingClientRect().width,
                linked: link !== null && link.getAttribute('href') === img.getAttribute('src')});
  }
  return found;
}
"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", _pictured_chapters(), ids=lambda path: path.stem)
def test_a_chapter_in_chromium(browser: Any, served: str, chapter: Path, width: int) -> None:
    phone = width < PHONE
    visit = Visit(browser, served, width)
    try:
        page = visit.open(f"notebooks/{chapter.stem}.html")
        pictures = page.evaluate(PICTURES)
        assert pictures, f"{chapter.name}: no picture on the page"
        for picture in pictures:
            assert picture["width"] > 0, f"{picture['src']} did not load"
            assert picture["colours"] > 1, f"{picture['src']} is a single colour"
            assert 0 < picture["shown"] <= width, f"{picture['src']} is {picture['shown']} px"
            assert picture["linked"], f"{picture['src']} does not open at full size"
            if width >= WIDE:  # as large as drawn, so its text is as large as drawn
                natural = min(picture["width"], WIDE_COLUMN)
                assert picture["shown"] >= natural, f"{picture['src']} shrunk to {picture['shown']}"
        page.evaluate("window.scrollTo(0, 0)")

        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is {overflow} px wider than a {width} px window"
        size = page.evaluate(
            "parseFloat(getComputedStyle(document.querySelector('article section > p')).fontSize)"
        )
        assert size >= 15, f"body text of {size} px"
        line = page.evaluate(
            "document.querySelector('article section > p').getBoundingClientRect().width"
        )
        assert line / size <= 50, f"lines of {line / size:.0f} em are too long to read"
        if not phone:
            assert page.locator(".sidebar-tree a.reference").first.is_visible()
        else:
            drawer = page.locator(".sidebar-drawer").first.bounding_box()
            assert drawer is None or drawer["x"] + drawer["width"] <= 0, "the menu covers the page"
            assert page.locator("label.nav-overlay-icon").first.is_visible()

        # A collapsed cell inside a deep dive is seen only once the deep dive is open (a test
        # below opens and closes deep dives): open them all, to see every folded cell.
        page.evaluate(
            "document.querySelectorAll('details.cfs-deep-dive').forEach(d => d.open = true)"
        )
        for folded, what in (("details.hide.above-input", "collapsed cell"),
                             ("details.cfs-solution", "solution")):  # fmt: skip
            blocks = page.locator(folded)
            assert blocks.count() > 0, f"{chapter.name}: no {what} on the page"
            for index in range(blocks.count()):
                block = blocks.nth(index)
                assert block.get_attribute("open") is None, f"{what} {index} is open"
                assert not block.locator("pre").first.is_visible(), f"{what} {index} shows code"
            first = blocks.first
            first.locator(":scope > summary").click()
            assert first.locator("pre").first.is_visible(), f"a {what} does not open"

        shots = os.environ.get("CFS_BOOK_SCREENSHOTS")
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(Path(shots) / f"{chapter.stem}-{width}.png"))
        if phone:  # the chapters are a tap away: the menu slides in
            page.locator("label.nav-overlay-icon").first.click()
            page.wait_for_function(
                "document.querySelector('.sidebar-drawer').getBoundingClientRect().left >= 0"
            )
            assert page.locator(".sidebar-tree a.reference").first.is_visible()
        assert not visit.elsewhere, f"requests to other sites: {visit.elsewhere}"
    finally:
        visit.page.close()


def _chapters_with_deep_dives() -> list[Path]:
    return [path for path in CHAPTERS if Chapter(path, _load(path)).deep_dives]


@pytest.mark.parametrize("chapter", _chapters_with_deep_dives(), ids=lambda path: path.stem)
def test_deep_dives_are_folded_in_chromium(browser: Any, served: str, chapter: Path) -> None:
    """On a laptop's screen every deep dive is closed, shows none of its text, opens with a
    click on its line, and opens by itself when a link leads to a section inside it."""
    visit = Visit(browser, served, 1366)
    try:
        page = visit.open(f"notebooks/{chapter.stem}.html")
        dives = page.locator("details.cfs-deep-dive")
        expected = len(Chapter(chapter, _load(chapter)).deep_dives)
        assert dives.count() == expected, f"{dives.count()} folded deep dives, not {expected}"
        for index in range(dives.count()):
            dive = dives.nth(index)
            assert dive.get_attribute("open") is None, f"deep dive {index} is open"
            assert not dive.locator("section p").first.is_visible(), f"deep dive {index} shows"
        first = dives.first
        first.locator(":scope > summary").click()
        assert first.locator("section p").first.is_visible(), "a deep dive does not open"
        anchor = dives.last.locator("section").first.get_attribute("id")
        page.goto(f"{served}/notebooks/{chapter.stem}.html#{anchor}", wait_until="load")
        page.wait_for_function(f"document.getElementById('{anchor}').closest('details').open")
        assert not visit.elsewhere, f"requests to other sites: {visit.elsewhere}"
    finally:
        visit.page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_search_and_navigation_work_offline(browser: Any, served: str, width: int) -> None:
    visit = Visit(browser, served, width)
    try:
        page = visit.open("search.html?q=workqueue")
        results = page.locator("#search-results ul.search li a")
        results.first.wait_for(timeout=30_000)
        hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
        assert any("04_workqueue" in (href or "") for href in hrefs), hrefs

        page = visit.open("index.html")
        first, second = CHAPTERS[0].stem, CHAPTERS[1].stem
        page.locator(f"article a[href='notebooks/{first}.html']").first.click()
        page.wait_for_url(f"**/notebooks/{first}.html")
        page.locator(f".related-pages a.next-page[href='{second}.html']").click()
        page.wait_for_url(f"**/notebooks/{second}.html")
        assert not visit.elsewhere, f"requests to other sites: {visit.elsewhere}"
    finally:
        visit.page.close()
