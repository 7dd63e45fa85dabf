"""The one directive the book adds to Sphinx: a solution, folded until the reader opens it.

```{solution} a solution to exercise 2
...
```

becomes ``<details class="cfs-solution"><summary>Show a solution to exercise 2</summary> ...
</details>``: folded without any script, opened by a click or the keyboard, and found by the
browser's search in page once opened.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.writers.html5 import HTML5Translator


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


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(folded, html=(visit_folded, depart_folded))
    app.add_directive("solution", SolutionDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
