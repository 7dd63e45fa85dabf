"""Links to upstream source, checked offline against the pinned versions.

Every claim a chapter makes about client-go, Kubernetes, sample-controller or controller-runtime
links to the source at the tag the course pins, with the function or type it names as the link
text::

    [`Reflector.ListAndWatchWithContext`](https://github.com/kubernetes/client-go/blob/v0.36.3/tools/cache/reflector.go#L470-L509)

A learner reads the real code in one click, and this module keeps those links true without a
network: ``tests/upstream/go.mod`` pins each module, ``go mod download`` there brings its source
into the Go module cache, and each link is checked there:

* the tag is the version pinned for that repository;
* the file exists at that version, and the line range lies inside it;
* the identifier named by the link text (the last backticked word, ``Type.Method`` naming
  ``Method``) is defined inside the linked lines (a ``func``, a ``type``, a constant, a variable,
  a struct field or an interface method; for Python, a ``def``, a ``class`` or an assignment).

A link whose text is a file path (``reflector.go``, ``features/known_features.go``) needs no
range: it is checked for its tag and file only. The Python client's links
(``kubernetes-client/python``) are checked against the installed ``kubernetes`` package, whose
version ``requirements.txt`` pins.

``python -m tests.upstream_links FILE...`` checks the links of notebooks, Markdown or Python
files and prints one line per problem (exit 1), then how many links it checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINS = ROOT / "tests" / "upstream" / "go.mod"
REQUIREMENTS = ROOT / "requirements.txt"

UPSTREAM_OWNERS = ("kubernetes", "kubernetes-sigs", "kubernetes-client", "etcd-io")
DOCUMENTATION_REPOSITORIES = frozenset({"kubernetes/enhancements", "kubernetes/community"})
"""Design documents (KEPs, the API conventions), not source: cited at a branch, not checked."""

URL = re.compile(
    r"https://github\.com/(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)/(?P<kind>blob|tree)/"
    r"(?P<tag>[^/\s)\"'>]+)/(?P<path>[^\s#)\"'>]+)(?:#L(?P<start>\d+)(?:-L(?P<end>\d+))?)?"
)
MARKDOWN_LINK = re.compile(
    r"\[(?P<text>(?:[^\[\]]|\[[^\]]*\])+)\]\((?P<url>https://github\.com/[^)\s]+)\)"
)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Link:
    """One link to upstream source, and where it was found."""

    where: str
    url: str
    text: str | None  # the Markdown link text; None for a bare URL (a docstring, a comment)

    @property
    def parts(self) -> re.Match[str]:
        match = URL.fullmatch(self.url)
        assert match, self.url
        return match

    @property
    def repository(self) -> str:
        return f"{self.parts.group('owner')}/{self.parts.group('repo')}"


@dataclass(frozen=True)
class Source:
    """Where a repository's files are on this machine, at which version."""

    version: str
    directory: Path
    python: bool = False


def links_in_text(text: str, where: str) -> Iterator[Link]:
    """Every link to an upstream repository's files in ``text``: Markdown links with their text,
    then bare URLs that are not inside one."""
    covered = []
    for match in MARKDOWN_LINK.finditer(text):
        url = match.group("url")
        if URL.fullmatch(url) and URL.fullmatch(url).group("owner") in UPSTREAM_OWNERS:
            covered.append(match.span())
            yield Link(where, url, match.group("text"))
    for match in URL.finditer(text):
        if match.group("owner") not in UPSTREAM_OWNERS:
            continue
        if any(start <= match.start() < end for start, end in covered):
            continue
        url = match.group(0).rstrip(".,;:")  # a bare URL ends a sentence or a clause
        yield Link(where, url, None)


def links_in_file(path: Path) -> Iterator[Link]:
    """The links of a notebook (by cell), a Markdown page or a Python module."""
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    if path.suffix == ".ipynb":
        for index, cell in enumerate(json.loads(path.read_text())["cells"]):
            yield from links_in_text("".join(cell["source"]), f"{name} cell {index}")
    else:
        yield from links_in_text(path.read_text(), str(name))


def pinned_modules(go_mod: Path = PINS) -> dict[str, str]:
    """Module path -> version, from the pins' ``require`` block."""
    text = go_mod.read_text()
    block = re.search(r"^require \((.*?)^\)", text, re.S | re.M)
    assert block, f"{go_mod} has no require block"
    return dict(re.findall(r"^\s+(\S+) (v\S+)", block.group(1), re.M))


def repository_of(module: str) -> str | None:
    """The GitHub repository a module is developed in (``k8s.io/client-go`` ->
    ``kubernetes/client-go``)."""
    host, _, name = module.partition("/")
    owner = {"k8s.io": "kubernetes", "sigs.k8s.io": "kubernetes-sigs"}.get(host)
    return f"{owner}/{name}" if owner and "/" not in name else None


@cache
def module_cache() -> Path | None:
    """The Go module cache (``go env GOMODCACHE``), or None without Go."""
    go = shutil.which("go")
    if go is None:
        return None
    found = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=False)
    return Path(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip() else None


def escaped(module: str) -> str:
    """The module cache's case encoding: an upper-case letter becomes ``!`` and the lower one."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), module)


@cache
def sources() -> dict[str, Source]:
    """Repository (``owner/name``) -> its pinned version and folder."""
    found: dict[str, Source] = {}
    cache_dir = module_cache()
    for module, version in pinned_modules().items():
        repository = repository_of(module)
        if repository and cache_dir:
            found[repository] = Source(version, cache_dir / f"{escaped(module)}@{version}")
    pinned = re.search(r"^kubernetes==(\S+)$", REQUIREMENTS.read_text(), re.M)
    if pinned:
        import importlib.util

        spec = importlib.util.find_spec("kubernetes")
        if spec and spec.origin:
            found["kubernetes-client/python"] = Source(
                f"v{pinned.group(1)}", Path(spec.origin).parent, python=True
            )
    return found


def missing_sources() -> list[str]:
    """Why links cannot be checked here (no Go, or a pinned module not downloaded), or []."""
    if module_cache() is None:
        return ["no Go toolchain: `go env GOMODCACHE` is needed to find the pinned sources"]
    return [
        f"{repository} {source.version} is not in the module cache "
        f"(run `go mod download` in {PINS.parent.relative_to(ROOT)})"
        for repository, source in sorted(sources().items())
        if not source.python and not source.directory.is_dir()
    ]


def download_pinned_sources() -> None:
    """``go mod download`` in tests/upstream: the pinned modules' sources, into the module cache."""
    environment = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
    subprocess.run(["go", "mod", "download"], cwd=PINS.parent, env=environment, check=True)


def source_file(link: Link) -> tuple[Path, str] | str:
    """The file a link points at, and its repository's pinned version; or why there is none."""
    parts = link.parts
    repository = f"{parts.group('owner')}/{parts.group('repo')}"
    path = parts.group("path")
    if repository == "kubernetes/kubernetes" and path.startswith("staging/src/k8s.io/"):
        name, _, path = path.removeprefix("staging/src/k8s.io/").partition("/")
        if parts.group("tag") != sources()["kubernetes/kubernetes"].version:
            return f"tag {parts.group('tag')} is not the pinned kubernetes/kubernetes version"
        repository = f"kubernetes/{name}"
        source = sources().get(repository)
        if source is None:
            return f"{repository} is not pinned in tests/upstream/go.mod"
        return source.directory / path, source.version
    source = sources().get(repository)
    if source is None:
        return f"{repository} is not pinned in tests/upstream/go.mod"
    if parts.group("tag") != source.version:
        pinned = f"the pinned version {source.version} of {repository}"
        return f"tag {parts.group('tag')} is not {pinned}"
    if source.python:
        path = path.removeprefix("kubernetes/").removeprefix("base/")
    return source.directory / path, source.version


def named_identifier(text: str) -> str | None:
    """The identifier a link's text names: its last backticked word (``Type.Method()`` ->
    ``Method``), or the whole text when that is one identifier; None for a file path."""
    quoted = re.findall(r"`([^`]+)`", text)
    candidate = (quoted[-1] if quoted else text).strip()
    if candidate.endswith((".go", ".py")) or "/" in candidate:
        return None
    candidate = re.sub(r"\(.*\)$", "", candidate)
    candidate = re.sub(r"\[.*\]$", "", candidate)  # a generic type's parameters
    last = candidate.rsplit(".", 1)[-1]
    return last if IDENTIFIER.fullmatch(last) else ""


def defines(lines: Iterable[str], name: str, python: bool) -> bool:
    """Whether one of ``lines`` defines ``name``."""
    n = re.escape(name)
    if python:
        patterns = [
            rf"^\s*(async\s+)?def\s+{n}\b",
            rf"^\s*class\s+{n}\b",
            rf"^\s*(self\.)?{n}\s*(:[^=]*)?=",
        ]
    else:
        patterns = [
            rf"^func\s+(\([^)]*\)\s*)?{n}\s*[\[(]",  # a function or a method
            rf"^\s*(type\s+)?{n}(\[[^\]]*\])?\s+(struct|interface|func|=|[\w.*\[\]]+)",  # a type
            rf"^\s*(const|var)\s+{n}\b",  # a constant or variable, alone
            rf"^\s+{n}(\s*,\s*\w+)*(\s+[\w.*\[\]]+)?\s*=",  # one in a block
            rf"^\s+{n}\s*\(",  # an interface method
            rf"^\s+{n}(\s*,\s*\w+)*\s+[\w.*\[\]]",  # a struct field
        ]
    return any(re.search(pattern, line) for line in lines for pattern in patterns)


def problem(link: Link) -> str | None:
    """What is wrong with one link, or None."""
    parts = link.parts
    repository = f"{parts.group('owner')}/{parts.group('repo')}"
    if repository in DOCUMENTATION_REPOSITORIES:
        return None
    if parts.group("kind") == "tree":
        found = source_file(link)
        if isinstance(found, str):
            return found
        return None if found[0].is_dir() else f"no folder {found[0]}"
    found = source_file(link)
    if isinstance(found, str):
        return found
    path, _ = found
    if not path.is_file():
        return f"no file {parts.group('path')} at {parts.group('tag')}"
    lines = path.read_text(errors="replace").splitlines()
    start = int(parts.group("start") or 0)
    end = int(parts.group("end") or start)
    if start and not 1 <= start <= end <= len(lines):
        return f"lines {start}-{end} are not inside the file's {len(lines)} lines"
    if link.text is None:
        return None
    name = named_identifier(link.text)
    if name is None:
        return None
    if name == "":
        return f"the link text {link.text!r} names no identifier (put it in backticks)"
    if not start:
        return f"a link naming `{name}` needs the lines that define it (#L<first>-L<last>)"
    if not defines(lines[start - 1 : end], name, source_is_python(link)):
        return f"`{name}` is not defined in lines {start}-{end} of {parts.group('path')}"
    return None


def source_is_python(link: Link) -> bool:
    return link.parts.group("path").endswith(".py")


def check(paths: Iterable[Path]) -> tuple[list[str], int]:
    """The problems of every link in ``paths``, and how many links were checked."""
    problems, checked = [], 0
    for path in paths:
        for link in links_in_file(path):
            checked += 1
            found = problem(link)
            if found:
                problems.append(f"{link.where}: {found}\n    {link.url}")
    return problems, checked


def main(arguments: list[str]) -> int:
    if missing := missing_sources():
        print("cannot check the links here:", "; ".join(missing))
        return 2
    problems, checked = check(Path(argument).resolve() for argument in arguments)
    print("\n".join(problems))
    print(f"{checked} links checked, {len(problems)} wrong")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
