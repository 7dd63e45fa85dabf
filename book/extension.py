"""What the book adds to Sphinx: folded solutions, and pictures that open at full size.

```{solution} a solution to exercise 2
...
```

becomes ``<details class="cfs-solution"><summary>Show a solution to exercise 2</summary> ...
</details>``: folded without any script, opened by a click or the keyboard, and found by the
browser's search in page once opened.

A chapter's deep dives (its sections whose title starts with "Deep dive:") are folded the same
way, under one line that gives their minutes: ``<details class="cfs-deep-dive"><summary>Deep
dive: Paging a large list · about 6 minutes</summary><section id=...>...</section></details>``.
The section keeps its anchor inside, and a browser opens a ``<details>`` when a link or a search
in page leads into it.

A chapter's pictures are drawn for a notebook about 1,000 px wide; a page column is narrower
(on a phone, a third of that), so each picture links to its file, which a browser shows at its
own size. Its alt text is what the output says it shows (``book.stage.picture_texts``), not the
file's name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective
from sphinx.util.osutil import relative_uri
from sphinx.writers.html5 import HTML5Translator

from book.stage import DEEP_DIVES, PICTURE_TEXTS

DEEP_DIVE_PREFIX = "Deep dive: "


class folded(nodes.General, nodes.Element):  # docutils names its nodes in lower case
    """Content behind a summary line, closed at first."""


def visit_folded(translator: HTML5Translator, node: folded) -> None:
    classes = " ".join(node["classes"])
    summary = translator.encode(node["summary"])
    translator.body.append(f'<details class="{classes}">\n<summary>{summary}</summary>\n')


def depart_folded(translator: HTML5Translator, node: folded) -> None:
    translator.body.append("</details>\n")


class SolutionDirective(SphinxDirective):
    """``{solution} <what>``: its content folded under "Show <what>"."""

    required_arguments = 1
    final_argument_whitespace = True
    has_content = True

    def run(self) -> list[nodes.Node]:
        node = folded(summary=f"Show {self.arguments[0]}", classes=["cfs-solution"])
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


class FoldDeepDives(SphinxTransform):
    """Put each deep-dive section of a chapter behind a summary line with its minutes."""

    default_priority = 500

    def apply(self, **kwargs: Any) -> None:
        minutes = _json(self.app, DEEP_DIVES).get(self.env.docname, {})
        for section in list(self.document.findall(nodes.section)):
            title = section.next_node(nodes.title)
            text = title.astext() if title is not None else ""
            if not text.startswith(DEEP_DIVE_PREFIX):
                continue
            name = text.removeprefix(DEEP_DIVE_PREFIX)
            summary = f"{text} · about {minutes[name]} minutes" if name in minutes else text
            fold = folded(summary=summary, classes=["cfs-deep-dive"])
            section.replace_self(fold)
            fold.append(section)


class LinkPicturesToTheirFiles(SphinxPostTransform):
    """Wrap each picture in a link to its file in ``_images/``, where Sphinx copies it."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        here = self.app.builder.get_target_uri(self.env.docname)
        texts = _json(self.app, PICTURE_TEXTS)
        for image in list(self.document.findall(nodes.image)):
            known = self.env.images.get(image["uri"])
            if known is None or isinstance(image.parent, nodes.reference):
                continue
            stem = Path(image["uri"]).stem
            image["alt"] = texts.get(stem, "a picture the cell above drew")
            target = relative_uri(here, f"{self.app.builder.imagedir}/{known[1]}")
            link = nodes.reference("", "", refuri=target, internal=True)
            link["classes"] += ["image-reference", "cfs-full-size"]
            image.replace_self(link)
            link.append(image)


def _json(app: Sphinx, name: str) -> dict[str, Any]:
    """One of the files ``book.stage`` writes beside the sources, or {} if there is none."""
    path = Path(app.srcdir) / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(folded, html=(visit_folded, depart_folded))
    app.add_directive("solution", SolutionDirective)
    app.add_transform(FoldDeepDives)
    app.add_post_transform(LinkPicturesToTheirFiles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
