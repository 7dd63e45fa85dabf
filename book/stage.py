"""Write the book's Sphinx sources: the chapters as the site shows them, and the pages around them.

The notebooks are never edited: each chapter is copied into a staging folder and prepared there
for a reader who cannot run it.

* Collapsed cells (``metadata.jupyter.source_hidden``, the course's plumbing) get myst-nb's
  ``hide-input`` tag: on the page they are folded the same way, with a line that opens them.
* A live widget's output is replaced by what it showed when the chapter ran: its controls and
  their values, as text. A live picture already leaves its last frame as a static PNG when it
  stops (``helpers.widgets``); without the notebook's kernel a widget would be an empty box.
* The first cell gets a box under the title: how long the chapter takes, what it needs, and how
  to run it.
* Each deep dive (a section whose heading starts with "Deep dive:") is folded on the page under
  one line with its minutes (``book/extension.py``, from ``deep-dives.json`` written here).
* Each exercise's check cell is followed by its solution (from ``notebooks/solutions/``),
  folded.

Links keep working because the staging folder has the repository's layout: ``notebooks/``,
``docs/``, ``benchmarks/`` and any other file a page links to (``solutions/ch04.py``,
``../manifests/foo-crd.yaml``), which the site then offers as a download.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from book.chapters import (
    CHAPTER_PATTERN,
    Chapter,
    Exercise,
    needs,
    read_chapters,
    solution_source,
)
from helpers.errors import CourseError

PAGES = ("docs/facilitator.md", "benchmarks/RESULTS.md")
"""The pages besides the chapters, in the order the navigation lists them."""
README_INTRO_END = "## Everyday commands"
"""The README's heading where the front page ends: after the introduction, the two commands and
what a learner needs (its local control plane, which the two commands mention)."""
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
BACKTICKS = re.compile(r"`{3,}")
DEEP_DIVES = "deep-dives.json"
"""Written beside the sources: each chapter's deep dives and their minutes, by the page's name,
for the line that folds each one (``book/extension.py``)."""
PICTURE_TEXTS = "picture-texts.json"
"""Written beside the sources: what each stored picture shows, by the SHA-256 of its bytes (the
name myst-nb gives its file), for its alt text (``book/extension.py``)."""


def stage(root: Path, into: Path) -> list[Chapter]:
    """Write the book's sources for the course in ``root`` into the empty folder ``into``."""
    chapters = read_chapters(root / "notebooks")
    (into / "notebooks").mkdir(parents=True)
    texts: dict[str, str] = {}
    dives = {f"notebooks/{chapter.name}": chapter.deep_dives for chapter in chapters}
    (into / DEEP_DIVES).write_text(json.dumps(dives, indent=1, ensure_ascii=False))
    for chapter in chapters:
        notebook = for_the_book(chapter, chapters, root / "notebooks" / "solutions")
        text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
        (into / "notebooks" / chapter.path.name).write_text(text, encoding="utf-8")
        texts.update(picture_texts(notebook))
    (into / PICTURE_TEXTS).write_text(json.dumps(texts, indent=1, ensure_ascii=False))
    for page in PAGES:
        (into / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / page, into / page)
    (into / "index.md").write_text(front_page(root), encoding="utf-8")
    copy_linked_files(root, into)
    return chapters


def picture_texts(notebook: dict[str, Any]) -> dict[str, str]:
    """What each PNG output says it shows (its ``text/plain``), by the SHA-256 of its bytes.
    A bare matplotlib repr (``<Figure size 700x300 with 1 Axes>``) says nothing, and is left
    out."""
    texts = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = "".join(data.get("text/plain", ""))
            if "image/png" in data and text and not text.startswith("<"):
                png = base64.b64decode("".join(data["image/png"]))
                texts[hashlib.sha256(png).hexdigest()] = text
    return texts


def front_page(root: Path) -> str:
    """The README's introduction, then the chapters and the other pages (found, not listed)."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    intro, found, _ = readme.partition(f"\n{README_INTRO_END}\n")
    if not found:
        raise CourseError(
            f"README.md has no heading '{README_INTRO_END}', where the book's front page ends.",
            f"keep that heading, or change README_INTRO_END in {Path(__file__).name}.",
        )
    pages = "\n".join(str(Path(page).with_suffix("")) for page in PAGES)
    chapters = f"notebooks/{CHAPTER_PATTERN.removesuffix('.ipynb')}"
    return f"""{intro.rstrip()}

## About this site

Every output on these pages is the one stored in the notebooks, which `make test` checks
against a real run with [nbval](https://github.com/computationalmodelling/nbval); nothing was
run to build the site. To run a chapter yourself, see the box at its top. Each chapter's deep
dives (what a first pass may skip) are folded with their minutes, collapsed cells hold plumbing
("Show the collapsed code" opens one), and each exercise's solution is folded under it.

```{{toctree}}
:caption: Chapters
:maxdepth: 1
:glob:

{chapters}
```

```{{toctree}}
:caption: For facilitators and maintainers
:maxdepth: 1

{pages}
```
"""


def for_the_book(chapter: Chapter, chapters: list[Chapter], solutions: Path) -> dict[str, Any]:
    """A copy of ``chapter``'s notebook, prepared for a reader who cannot run it."""
    notebook = copy.deepcopy(chapter.notebook)
    widgets = notebook["metadata"].pop("widgets", {})
    state = widgets.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        if cell["metadata"].get("jupyter", {}).get("source_hidden"):
            tags = cell["metadata"].setdefault("tags", [])
            if "hide-input" not in tags:
                tags.append("hide-input")
        cell["outputs"] = with_widget_snapshots(cell["outputs"], state)
    for exercise in reversed(chapter.exercises):  # from the end: the indexes stay right
        source = solution_source(solutions / f"{exercise.solutions}.py", exercise, chapter)
        cell = markdown_cell(f"book-solution-{exercise.cell}", solution(exercise, source))
        notebook["cells"].insert(exercise.cell + 1, cell)
    first = notebook["cells"][0]
    title, _, rest = "".join(first["source"]).partition("\n")
    first["source"] = f"{title}\n\n{chapter_box(chapter, chapters)}\n{rest}"
    return notebook


def chapter_box(chapter: Chapter, chapters: list[Chapter]) -> str:
    """The two boxes under a chapter's title: what it takes, and how to run it."""
    earlier = [
        f"[{need.chapter.title}]({need.chapter.path.name}) "
        f"({', '.join(f'`{module}`' for module in need.modules)})"
        for need in needs(chapter, chapters)
    ]
    needed = []
    if "helpers.kube" in chapter.imports:
        needed.append("a running cluster (`make course` starts one)")
    needed.append(
        f"the modules it imports from earlier chapters: {'; '.join(earlier)}"
        if earlier
        else "nothing from earlier chapters"
    )
    return f"""```{{admonition}} This chapter
:class: cfs-chapter-box

**Time:** {chapter.reading_time} (how it is measured: just below). Each deep dive is folded,
with its minutes: a first pass may skip them.

**Needs:** {"; ".join(needed)}.
```

````{{admonition}} Run this chapter yourself
:class: tip cfs-run-box

In a copy of the course, set up Python, start a cluster and open JupyterLab on `notebooks/`:

```sh
make course
```

Then open **{chapter.path.name}** in JupyterLab's file browser and run its cells from the top
(Shift+Enter, or Run > Run All Cells).
````
"""


def solution(exercise: Exercise, source: str) -> str:
    """A folded solution: the ``solution`` directive of ``book/extension.py``."""
    fence = "`" * max([3, *(len(run) + 1 for run in BACKTICKS.findall(source))])
    outer = fence + "`"
    module = f"solutions/{exercise.solutions}.py"
    return f"""{outer}{{solution}} a solution to exercise {exercise.number}
{fence}python
{source}
{fence}

The whole file: [{module}]({module}).
{outer}
"""


def markdown_cell(cell_id: str, source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source}


def with_widget_snapshots(outputs: list[dict[str, Any]], state: dict[str, Any]) -> list[Any]:
    """``outputs`` with each run of live widgets replaced by one snapshot of their values: a
    static page has no kernel to draw them, and an empty widget box would be all it showed."""
    result: list[dict[str, Any]] = []
    widgets: list[dict[str, Any]] = []
    for output in [*outputs, None]:
        if output is not None and WIDGET_VIEW in output.get("data", {}):
            widgets.append(output)
            continue
        if widgets:
            result.append(widget_snapshot(widgets, state))
            widgets = []
        if output is not None:
            result.append(output)
    return result


def widget_snapshot(outputs: list[dict[str, Any]], state: dict[str, Any]) -> dict[str, Any]:
    """One output that lists the controls of the widget ``outputs`` and their stored values."""
    items = []
    for output in outputs:
        described = describe_widget(output["data"][WIDGET_VIEW]["model_id"], state)
        # A widget whose state was not stored: say what the kernel said it was.
        items += described or ["".join(output["data"].get("text/plain", "a widget"))]
    listed = "".join(f"<li>{html.escape(item)}</li>" for item in items)
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {
            "text/html": (
                '<div class="cfs-widget-snapshot"><p>In JupyterLab, live controls stand here. '
                f"The values this run used:</p><ul>{listed}</ul></div>"
            ),
            "text/plain": ", ".join(items),
        },
    }


def describe_widget(model_id: str, state: dict[str, Any]) -> list[str]:
    """One line per control in the widget ``model_id`` (a box: its children's)."""
    model = state.get(model_id)
    if model is None:
        return []
    kind = model["model_name"].removesuffix("Model")
    values = model["state"]
    label = values.get("description") or ""
    if "children" in values:
        return [
            line
            for child in values["children"]
            for line in describe_widget(child.removeprefix("IPY_MODEL_"), state)
        ]
    if kind.endswith("Slider"):
        shown = format(values["value"], values.get("readout_format", ""))
        return [f"{label}: {shown} (a slider from {values['min']} to {values['max']})"]
    if kind == "Button":
        return [f"a button “{label}”"]
    if kind in ("Label", "HTML", "HTMLMath"):
        return [f"a note: “{re.sub(r'<[^>]+>', '', str(values.get('value', '')))}”"]
    if "_options_labels" in values and values.get("index") is not None:
        return [f"{label}: {values['_options_labels'][values['index']]}"]
    if "value" in values:
        return [f"{label or kind}: {values['value']}"]
    return []


def copy_linked_files(root: Path, into: Path) -> None:
    """Copy into the staging folder each repository file a page links to by a relative path.

    The site offers a file as a download; a Markdown page (``../docs/other.md``) becomes a page
    of its own, outside the navigation, and its links are followed in turn. A link to nothing
    is left for Sphinx to report.
    """
    todo = [page for page in sorted(into.rglob("*")) if page.suffix in (".md", ".ipynb")]
    while todo:
        page = todo.pop(0)
        for target in sorted(relative_links(page)):
            staged = (page.parent / target).resolve()
            if not staged.is_relative_to(into.resolve()) or staged.exists():
                continue
            source = root / staged.relative_to(into.resolve())
            if not source.is_file():
                continue
            staged.parent.mkdir(parents=True, exist_ok=True)
            if source.suffix == ".md":  # a page no chapter list names: Sphinx must not warn
                text = source.read_text(encoding="utf-8")
                staged.write_text(f"---\norphan: true\n---\n\n{text}", encoding="utf-8")
                todo.append(staged)
            else:
                shutil.copyfile(source, staged)


def relative_links(page: Path) -> set[str]:
    """The relative link and image targets of a Markdown page or a notebook's Markdown cells,
    without their ``#fragment``."""
    text = page.read_text(encoding="utf-8")
    if page.suffix == ".ipynb":
        cells = json.loads(text)["cells"]
        text = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return _links_in(text)


def _links_in(markdown: str) -> set[str]:
    targets = set()
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "fence" and token.info.startswith("{"):  # a directive: MyST content
            targets |= _links_in(token.content)
        for child in token.children or []:
            target = str(child.attrs.get("href") or child.attrs.get("src") or "")
            path = target.split("#", 1)[0]
            if path and not re.match(r"^[a-z][a-z0-9+.-]*:|^/", path, re.IGNORECASE):
                targets.add(path)
    return targets
