"""Build the course's book: ``python -m book.build [--out build/book]`` (``make book``).

The sources are staged in a temporary folder (``book.stage``) and built there by Sphinx with
warnings as errors: a broken link, a missing picture or a heading Sphinx cannot place stops
the build instead of publishing a page with a hole in it. Only the finished site is copied to
``--out``, which must be empty, missing, or an earlier build of the book (it holds
:data:`BOOK_MARKER`, which this build writes): it is replaced whole. Open ``<out>/index.html``;
nothing on the site needs a network.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from book.stage import stage
from helpers.errors import CourseError

ROOT = Path(__file__).resolve().parents[1]
CONFIG = Path(__file__).resolve().parent
DEFAULT_OUT = ROOT / "build" / "book"
BOOK_MARKER = ".controllers-from-scratch-book"
"""Written at the top of every build of the book: a folder holding it may be replaced. Not
Sphinx's ``.buildinfo``, which every Sphinx HTML build holds, the course's or not."""


def build(root: Path, out: Path) -> int:
    """Build the book of the course in ``root`` into ``out``; returns its number of chapters."""
    _check_replaceable(out)
    with tempfile.TemporaryDirectory(prefix="cfs-book-") as scratch:
        work = Path(scratch)
        chapters = stage(root, work / "src")
        sphinx = [
            sys.executable, "-m", "book.sphinx_build", "--builder", "html", "--quiet",
            "--fail-on-warning", "--keep-going", "--fresh-env",
            "--conf-dir", str(CONFIG), "--doctree-dir", str(work / "doctrees"),
            str(work / "src"), str(work / "html"),
        ]  # fmt: skip
        if subprocess.run(sphinx, cwd=ROOT, check=False).returncode != 0:
            raise CourseError(
                "Sphinx could not build the book without warnings (above; the file names are "
                "the staged copies in a temporary folder, named as in the repository).",
                "fix what the warnings name in the notebook or page, then run `make book` again.",
            )
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(work / "html", out)
        (out / BOOK_MARKER).write_text(
            "The course's book, written by `make book` (python -m book.build), which replaces "
            "this folder whole.\n"
        )
    return len(chapters)


def _check_replaceable(out: Path) -> None:
    """Refuse to delete a folder that is not an earlier build of the book."""
    if out.exists() and any(out.iterdir()) and not (out / BOOK_MARKER).exists():
        raise CourseError(
            f"{out} is not empty and holds no earlier build of the book (no {BOOK_MARKER}), so "
            "it is left alone.",
            "choose another --out, or empty that folder yourself (a book built before the "
            f"builds were marked with {BOOK_MARKER} is one to delete).",
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book.build", description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the site's folder")
    parser.add_argument("--root", type=Path, default=ROOT, help="the course's folder")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        chapters = build(args.root.resolve(), args.out.resolve())
    except CourseError as exc:
        print(f"error: {exc.problem}\nnext step: {exc.next_step}", file=sys.stderr)
        return 2
    seconds = time.monotonic() - started
    index = args.out.resolve() / "index.html"
    print(f"the book: {chapters} chapters in {seconds:.0f} s; open {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
