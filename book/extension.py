"""What the book adds to Sphinx: folded solutions, and pictures that open at full size.

```{solution} a solution to exercise 2
...
```

becomes ``<details class="cfs-solution"><summary>Show a solution to exercise 2</summary> ...
</details>``: folded without any script, opened by a click or the keyboard, and found by the
browser's search in page once opened.

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
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective
from sphinx.util.osutil import relative_uri
from sphinx.writers.html5 import HTML5Translator

from book.stage import PICTURE_TEXTS


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


class LinkPicturesToTheirFiles(SphinxPostTransform):
    """Wrap each picture in a link to its file in ``_images/``, where Sphinx copies it."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        here = self.app.builder.get_target_uri(self.env.docname)
        texts = _picture_texts(self.app)
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


def _picture_texts(app: Sphinx) -> dict[str, str]:
    path = Path(app.srcdir) / PICTURE_TEXTS
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(folded, html=(visit_folded, depart_folded))
    app.add_directive("solution", SolutionDirective)
    app.add_post_transform(LinkPicturesToTheirFiles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
