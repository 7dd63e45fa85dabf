"""Links to upstream source stay true: pinned tag, existing file, the named identifier inside
the linked lines (tests/upstream_links.py says how). Offline: the pinned modules' sources come
from the Go module cache (``go mod download`` in tests/upstream, which ``make test`` runs).

Without Go or without those sources this test is skipped and says why; under ``make test``
(``CFS_REQUIRE_UPSTREAM_SOURCES=1``) it never is.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests import upstream_links
from tests.upstream_links import ROOT, Link

CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
SOURCES_OF_LINKS = [
    *CHAPTERS,
    *sorted((ROOT / "helpers").rglob("*.py")),
    ROOT / "README.md",
    ROOT / "docs" / "facilitator.md",
]


def _need_sources() -> None:
    missing = upstream_links.missing_sources()
    if not missing:
        return
    reason = "cannot check links to upstream source: " + "; ".join(missing)
    if os.environ.get("CFS_REQUIRE_UPSTREAM_SOURCES"):
        pytest.fail(reason)
    pytest.skip(reason)


def test_every_link_to_upstream_source_is_true() -> None:
    _need_sources()
    problems, checked = upstream_links.check(SOURCES_OF_LINKS)
    print(f"{checked} links to upstream source checked")
    assert problems == [], "\n".join(problems)
    assert checked > 0


def _link(text: str | None, url: str) -> Link:
    return Link("test", url, text)


CLIENT_GO = "https://github.com/kubernetes/client-go/blob"


@pytest.mark.parametrize(
    ("text", "url", "says"),
    [
        ("`Backoff.Step`", f"{CLIENT_GO}/v0.36.3/util/workqueue/queue.go#L1-L20", "not defined"),
        ("`Backoff.Step`", f"{CLIENT_GO}/v0.35.0/util/workqueue/queue.go#L1-L20", "pinned"),
        ("`Typed`", f"{CLIENT_GO}/v0.36.3/util/workqueue/no_such_file.go#L1-L2", "no file"),
        ("`Typed`", f"{CLIENT_GO}/v0.36.3/util/workqueue/queue.go#L99999-L100000", "inside"),
        ("`Typed`", f"{CLIENT_GO}/v0.36.3/util/workqueue/queue.go", "needs the lines"),
        ("the queue", f"{CLIENT_GO}/v0.36.3/util/workqueue/queue.go#L1-L9", "names no identifier"),
        ("x", "https://github.com/kubernetes/nope/blob/v1.0.0/a.go#L1-L2", "not pinned"),
    ],
)
def test_a_wrong_link_is_named(text: str, url: str, says: str) -> None:
    _need_sources()
    found = upstream_links.problem(_link(text, url))
    assert found is not None and says in found, found


def test_a_true_link_passes_and_finds_the_definition_in_its_lines() -> None:
    """`Typed` is client-go's basic queue; its definition is found by searching the file, so the
    test does not depend on a line number written here."""
    _need_sources()
    path = upstream_links.sources()["kubernetes/client-go"].directory / "util/workqueue/queue.go"
    lines = path.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if re.match(r"^type Typed\[", text))
    good = f"{CLIENT_GO}/v0.36.3/util/workqueue/queue.go#L{line}-L{line + 2}"
    assert upstream_links.problem(_link("`workqueue.Typed`", good)) is None
    off = f"{CLIENT_GO}/v0.36.3/util/workqueue/queue.go#L{line + 1}-L{line + 2}"
    assert "not defined" in (upstream_links.problem(_link("`Typed`", off)) or "")
    whole_file = f"{CLIENT_GO}/v0.36.3/util/workqueue/queue.go"
    assert upstream_links.problem(_link("`util/workqueue/queue.go`", whole_file)) is None


def test_a_staging_path_in_kubernetes_is_its_module() -> None:
    _need_sources()
    url = "https://github.com/kubernetes/kubernetes/blob/v1.36.3/staging/src/k8s.io/client-go/util/workqueue/queue.go"
    assert upstream_links.problem(_link("queue.go", url)) is None


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("`Reflector.ListAndWatchWithContext`", "ListAndWatchWithContext"),
        ("`recordToSink()`", "recordToSink"),
        ("`TypedRateLimitingInterface[T]`", "TypedRateLimitingInterface"),
        ("the reflector's `list`", "list"),
        ("`tools/cache/reflector.go`", None),
        ("reflector.go", None),
        ("the queue", ""),
    ],
)
def test_the_named_identifier_is_the_last_backticked_word(text: str, name: str | None) -> None:
    assert upstream_links.named_identifier(text) == name


@pytest.mark.parametrize(
    ("line", "name", "python"),
    [
        ("func (r *Reflector) ListAndWatchWithContext(ctx context.Context) error {",
         "ListAndWatchWithContext", False),
        ("func NewTyped[T comparable]() *Typed[T] {", "NewTyped", False),
        ("type Typed[t comparable] struct {", "Typed", False),
        ("\tmaxTriesPerEvent = 12", "maxTriesPerEvent", False),
        ("const maxQueuedEvents = 1000", "maxQueuedEvents", False),
        ("\tHasSynced() bool", "HasSynced", False),
        ("\tresyncPeriod time.Duration", "resyncPeriod", False),
        ("    def stream(self, func, *args, **kwargs):", "stream", True),
        ("class Watch(object):", "Watch", True),
    ],
)  # fmt: skip
def test_definitions_are_recognised(line: str, name: str, python: bool) -> None:
    assert upstream_links.defines([line], name, python)
    assert not upstream_links.defines([f"// calls {name}(x)"], name, python)


def test_links_are_found_in_markdown_and_bare() -> None:
    text = (
        "See [`Typed`](https://github.com/kubernetes/client-go/blob/v0.36.3/util/workqueue/queue.go#L1-L2)"
        " and https://github.com/kubernetes-sigs/controller-runtime/blob/v0.24.1/go.mod, not "
        "https://github.com/kubernetes/sample-controller (a repository, not a file)."
    )
    found = list(upstream_links.links_in_text(text, "here"))
    assert [(link.text, link.url.rsplit("/", 1)[-1]) for link in found] == [
        ("`Typed`", "queue.go#L1-L2"),
        (None, "go.mod"),
    ]


def _how_client_go_does_it_bullets(path: Path) -> list[tuple[int, str]]:
    """The top-level bullets of the chapter's "How client-go does it" section."""
    bullets, inside = [], False
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        current: list[str] | None = None
        for line in "".join(cell["source"]).splitlines():
            if line.startswith("#"):
                inside = line.lstrip("#").strip().startswith("How client-go")
                current = None
            elif inside and re.match(r"^[-*] ", line):
                current = [line]
                bullets.append((index, current))
            elif inside and current is not None and line.startswith("  "):
                current.append(line)
            else:
                current = None
    return [(index, "\n".join(lines)) for index, lines in bullets]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_bullet_of_how_client_go_does_it_links_to_the_source(path: Path) -> None:
    bullets = _how_client_go_does_it_bullets(path)
    assert bullets, "no bullets under 'How client-go does it'"
    unlinked = [
        f"cell {index}: {text[:70]}..."
        for index, text in bullets
        if not list(upstream_links.links_in_text(text, "bullet"))
    ]
    assert unlinked == [], "link each bullet to the source it describes:\n" + "\n".join(unlinked)
