"""The mutation drill: would a broken mechanism fail the chapter that teaches it?

``python -m tests.mutation_drill`` (``make mutations``; ``make test`` runs it after its
pytest session) takes each mutation of ``tests/mutations.py`` in turn and:

1. copies the repository's files, as git sees them (tracked, and new ones not
   ignored), to a temporary folder: the checkout is never edited;
2. applies the edit to the chapter's ``#| export`` cell there, and runs
   ``python -m helpers.export`` there, so the chapter and the module carry the same bug;
3. runs, with PYTHONPATH at the copy, one pytest session: the chapter under strict
   nbval (the sanitizer, as ``make test`` runs it), stopped at its first failing
   cell, and the unit tests of the mutated module, stopped at their first failure
   (``tests/mutation_plugin.py``);
4. stops what the run started: processes still running in the copy (chapter 08's
   controllers), the chapter's namespace (deleted, as the chapter's last cell
   would), and the copy.

It prints one row per mutation: the chapter cell that caught it (its 0-based index
and the heading of its section, flagged when that is not the mutation's ``lesson``),
the unit test that caught it, and the seconds it took. A mutation that nothing
caught fails the drill, by name. Mutations of
different chapters alternate, so that one chapter's namespace is deleted while the
next chapter runs; they run one at a time (two chapters at once overload two cores).

    python -m tests.mutation_drill                 # every mutation
    python -m tests.mutation_drill --only bucket   # those whose name contains "bucket"
    python -m tests.mutation_drill --write-readme  # ... and put the table in README.md
    python -m tests.mutation_drill --list          # the mutations, checked, nothing run
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.mutations import MUTATIONS, UNIT_TESTS, Mutation

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DIRECTIVE = "#| export "
TABLE_START = "<!-- mutation table: python -m tests.mutation_drill --write-readme -->"
TABLE_END = "<!-- end of the mutation table -->"
SESSION_LIMIT = 600.0
"""Seconds one mutation's pytest session may take before the drill kills it."""
MEMORY_LIMIT = 3 * 2**30
"""Bytes the session's process may hold (unmutated, it holds about 0.3 GiB)."""
NAMESPACE_CALL = re.compile(r"fresh_namespace\(api, \"([a-z0-9-]+)\"\)")
NBVAL = ["--nbval", "--nbval-sanitize-with", "tests/nbval-sanitize.cfg",
         "--nbval-cell-timeout=120"]  # fmt: skip


class MutationError(Exception):
    """A mutation that cannot be applied; the message names it."""


# --- applying a mutation -------------------------------------------------------------------


def _source(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def locate(mutation: Mutation, notebook: dict[str, Any]) -> int:
    """The index of the mutation's cell; refuses a cell that is no export cell, or whose
    text holds ``old`` other than exactly once."""
    found = [i for i, cell in enumerate(notebook["cells"]) if cell.get("id") == mutation.cell]
    if len(found) != 1:
        raise MutationError(f"{mutation.name}: {mutation.notebook} has no cell {mutation.cell}")
    index = found[0]
    cell = notebook["cells"][index]
    text = _source(cell)
    if cell["cell_type"] != "code" or not text.startswith(DIRECTIVE):
        raise MutationError(f"{mutation.name}: cell {index} is not an `#| export` cell")
    times = text.count(mutation.old)
    if times != 1:
        where = f"{mutation.notebook} cell {index}"
        raise MutationError(
            f"{mutation.name}: its old text occurs {times} times in {where}, not once"
        )
    return index


def apply(mutation: Mutation, root: Path) -> int:
    """Edit the notebook under ``root`` (a copy, never the checkout); the cell's index."""
    if _inside(root, ROOT):
        raise MutationError(f"{mutation.name}: refusing to edit the checkout {ROOT}")
    path = root / "notebooks" / mutation.notebook
    notebook = json.loads(path.read_text())
    index = locate(mutation, notebook)
    cell = notebook["cells"][index]
    cell["source"] = _source(cell).replace(mutation.old, mutation.new).splitlines(keepends=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return index


def export_target(mutation: Mutation, notebook: dict[str, Any]) -> str:
    """The module the mutation's cell is exported to."""
    first = _source(notebook["cells"][locate(mutation, notebook)]).partition("\n")[0]
    return first[len(DIRECTIVE) :].strip()


def _inside(path: Path, root: Path) -> bool:
    path, root = path.resolve(), root.resolve()
    return path == root or root in path.parents


def make_copy(checkout: Path = ROOT, parent: Path | None = None) -> Path:
    """A copy of the checkout's files as git sees them (tracked, and new ones not ignored),
    in a new temporary folder outside the checkout."""
    parent = Path(parent if parent is not None else tempfile.gettempdir())
    if _inside(parent, checkout):
        raise MutationError(f"a copy in {parent} would overlap the checkout {checkout}")
    target = Path(tempfile.mkdtemp(prefix="cfs-mutant-", dir=parent))
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=checkout,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = checkout / name
        if not source.is_file():  # deleted in the working tree
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name)
    return target


# --- running one ---------------------------------------------------------------------------


@dataclass
class Result:
    mutation: Mutation
    chapter: str | None = None
    """The chapter cell that caught it: ``index, heading``."""
    unit: str | None = None
    seconds: float = 0.0
    problem: str | None = None
    """Why the run did not work (not a catch): an export that failed, a setup error."""
    phases: dict[str, float] = field(default_factory=dict)
    """Where the seconds went: copy and export, the chapter, the unit tests, the rest."""

    @property
    def caught(self) -> bool:
        return self.chapter is not None or self.unit is not None


def cell_of(notebook: dict[str, Any], code_cell: int) -> tuple[int, str]:
    """nbval's ``Cell N`` (N counts code cells) as the notebook index and its section heading."""
    code = [i for i, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code"]
    index = code[code_cell]
    return index, heading_of(notebook, index)


def heading_of(notebook: dict[str, Any], index: int) -> str:
    """The last markdown heading at or before cell ``index``, without its #s."""
    for cell in reversed(notebook["cells"][: index + 1]):
        if cell["cell_type"] != "markdown":
            continue
        headings = [line for line in _source(cell).splitlines() if line.startswith("#")]
        if headings:
            return headings[-1].lstrip("#").strip()
    return ""


def namespace_of(notebook: dict[str, Any]) -> str | None:
    for cell in notebook["cells"]:
        match = NAMESPACE_CALL.search(_source(cell))
        if match:
            return match.group(1)
    return None


def run_one(mutation: Mutation, env: dict[str, str], keep: bool = False) -> Result:
    started = time.monotonic()
    result = Result(mutation)
    original = json.loads((ROOT / "notebooks" / mutation.notebook).read_text())
    namespace = namespace_of(original)
    copy = make_copy()
    try:
        apply(mutation, copy)
        env = {**env, "PYTHONPATH": str(copy), "CFS_MUTATION_REPORT": str(copy / "report.json")}
        target = export_target(mutation, original)
        before = (copy / target).read_text()
        exported = subprocess.run(
            [sys.executable, "-m", "helpers.export", f"notebooks/{mutation.notebook}"],
            cwd=copy, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if exported.returncode or (copy / target).read_text() == before:
            result.problem = (
                f"the export did not carry the mutation into {target}: "
                + (exported.stdout + exported.stderr).strip()
            )
            return result
        tests = [t for t in UNIT_TESTS.get(target, ()) if (copy / t).exists()]
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                   "-p", "tests.mutation_plugin", "-q", "--no-header", *NBVAL,
                   f"notebooks/{mutation.notebook}", *tests]  # fmt: skip
        result.phases["copy and export"] = time.monotonic() - started
        output = _session(command, copy, env)
        _read_report(result, copy / "report.json", original, output)
        if keep:
            print(f"  kept {copy}; its pytest output:\n{output[-4000:]}", flush=True)
    finally:
        _stop_processes_in(copy)
        if namespace is not None:
            _delete_namespace(namespace)
        if not keep:
            shutil.rmtree(copy, ignore_errors=True)
        result.seconds = time.monotonic() - started
    return result


def _session(command: list[str], copy: Path, env: dict[str, str]) -> str:
    """Run the pytest session in a process group of its own; its output. A session past
    ``SESSION_LIMIT`` seconds, or ``MEMORY_LIMIT`` bytes (a hot loop that logs fills pytest's
    log capture), is killed, the group by its id: its report says what it found."""
    log = copy / "pytest.log"
    with log.open("w") as output, subprocess.Popen(
        command, cwd=copy, env=env, stdout=output, stderr=subprocess.STDOUT,
        start_new_session=True,
    ) as session:  # fmt: skip
        deadline = time.monotonic() + SESSION_LIMIT
        why = None
        while session.poll() is None and why is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                session.wait(timeout=1.0)
            try:
                memory = psutil.Process(session.pid).memory_info().rss
            except psutil.NoSuchProcess:
                memory = 0
            if memory > MEMORY_LIMIT:
                why = f"killed it: it used {memory / 2**30:.1f} GiB"
            elif time.monotonic() > deadline:
                why = f"killed it after {SESSION_LIMIT:g} s"
        if why is not None:
            os.killpg(session.pid, signal.SIGKILL)
            session.wait()
    text = log.read_text(errors="replace")
    return text if why is None else f"{text}\n(the drill {why})"


def _read_report(result: Result, path: Path, notebook: dict[str, Any], output: str) -> None:
    if not path.exists():
        tail = output.strip().splitlines()[-15:]
        result.problem = "pytest wrote no report:\n" + "\n".join(tail)
        return
    report = json.loads(path.read_text())
    for group, seconds in report.get("seconds", {}).items():
        result.phases["unit tests" if group == "unit" else "chapter"] = seconds
    for group, first in report["first"].items():
        if first["error"]:
            continue
        if group == "unit":
            result.unit = first["nodeid"]
        else:
            index, heading = cell_of(notebook, first["cell"])
            result.chapter = f"{index}, {heading}"
    problems = [f"errors, not failures: {'; '.join(report['errors'])}"] if report["errors"] else []
    if output.endswith(")") and "\n(the drill killed it" in output:
        problems.append(output.rpartition("\n(")[2].rstrip(")"))
    result.problem = "; ".join(problems) or None


def _stop_processes_in(copy: Path) -> None:
    """End the processes the run left behind in the copy (a chapter's controllers), by id."""
    for process in psutil.process_iter(["pid", "cwd"]):
        cwd = process.info.get("cwd")
        if cwd and process.pid != os.getpid() and _inside(Path(cwd), copy):
            try:
                process.send_signal(signal.SIGKILL)
                process.wait(10)
            except (psutil.NoSuchProcess, psutil.TimeoutExpired):
                pass


def _delete_namespace(name: str) -> None:
    """The chapter's clean-up, for a run that stopped before its last cell."""
    from helpers import kube, namespaces

    try:
        namespaces.delete_namespace(kube.connect(), name)
    except Exception as error:  # a clean-up must not hide the drill's result
        print(f"  could not delete namespace {name}: {error}", flush=True)


# --- the drill -----------------------------------------------------------------------------


def interleaved(mutations: Sequence[Mutation]) -> list[Mutation]:
    """The mutations, chapters taking turns, so that a chapter's namespace is being deleted
    while another chapter runs: each time, the chapter with the most left that did not just
    run (ties: the first in the list)."""
    left: dict[str, list[Mutation]] = {}
    for mutation in mutations:
        left.setdefault(mutation.notebook, []).append(mutation)
    order: list[Mutation] = []
    while any(left.values()):
        last = order[-1].notebook if order else None
        candidates = [c for c in left if left[c] and c != last] or [c for c in left if left[c]]
        chapter = max(candidates, key=lambda c: len(left[c]))
        order.append(left[chapter].pop(0))
    return order


def chapter_of(mutation: Mutation) -> str:
    return mutation.notebook.removesuffix(".ipynb")


def table(results: Iterable[Result]) -> list[str]:
    rows = [
        "| mutation | chapter cell that caught it | unit test that caught it | seconds |",
        "|---|---|---|---|",
    ]
    for result in results:
        chapter = "**not caught**"
        if result.chapter is not None:
            index, _, heading = result.chapter.partition(", ")
            chapter = f"`{chapter_of(result.mutation)}` cell {index}, *{heading}*"
            if heading != result.mutation.lesson:
                chapter += f" (not in its lesson, *{result.mutation.lesson}*)"
        unit = f"`{result.unit.removeprefix('tests/')}`" if result.unit else "none"
        rows.append(f"| {result.mutation.name} | {chapter} | {unit} | {result.seconds:.0f} |")
    return rows


def write_readme(rows: list[str], summary: str, readme: Path = README) -> None:
    text = readme.read_text()
    start, end = text.index(TABLE_START), text.index(TABLE_END)
    block = "\n".join([TABLE_START, *rows, "", summary, TABLE_END])
    readme.write_text(text[:start] + block + text[end + len(TABLE_END) :])


def readme_names(readme: Path = README) -> list[str]:
    """The mutation names in the README's table, in order."""
    text = readme.read_text()
    block = text[text.index(TABLE_START) : text.index(TABLE_END)]
    rows = [line for line in block.splitlines() if line.startswith("| ")][1:]
    return [row.split(" | ")[0].removeprefix("| ") for row in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.mutation_drill",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--only", action="append", default=[], metavar="TEXT",
        help="run the mutations whose name contains TEXT (repeatable)",
    )  # fmt: skip
    parser.add_argument("--list", action="store_true", help="check and list; run nothing")
    parser.add_argument(
        "--write-readme", action="store_true",
        help="put the table in README.md's testing section (all mutations)",
    )  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep each copy, print its output")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or any(t in m.name for t in args.only)]
    if not chosen:
        parser.error(f"no mutation's name contains {' or '.join(map(repr, args.only))}")
    if args.write_readme and len(chosen) != len(MUTATIONS):
        parser.error("--write-readme runs every mutation: leave out --only")
    try:
        for mutation in chosen:
            locate(mutation, json.loads((ROOT / "notebooks" / mutation.notebook).read_text()))
    except MutationError as error:
        print(f"error: {error}\nnext step: fix the mutation in tests/mutations.py")
        return 2
    if args.list:
        for mutation in chosen:
            print(f"{chapter_of(mutation):28} {mutation.name}")
        return 0
    env = dict(os.environ)
    started = time.monotonic()
    results: dict[str, Result] = {}
    print(f"mutation drill: {len(chosen)} mutations, one at a time", flush=True)
    for mutation in interleaved(chosen):
        result = run_one(mutation, env, keep=args.keep)
        results[mutation.name] = result
        verdict = "caught" if result.caught else "NOT CAUGHT"
        phases = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in result.phases.items())
        print(f"  {verdict:10} {result.seconds:5.0f} s  {mutation.name}  ({phases})", flush=True)
        if result.problem:
            print(f"    ({result.problem})", flush=True)
    total = time.monotonic() - started
    ordered = [results[m.name] for m in chosen]
    rows = table(ordered)
    missed = [r.mutation.name for r in ordered if not r.caught]
    minutes, seconds = divmod(round(total), 60)
    load = os.getloadavg()[1]
    summary = (
        f"{len(ordered)} mutations, {len(ordered) - len(missed)} caught, in {minutes} min "
        f"{seconds:02d} s ({os.cpu_count()} cores, load average {load:.0f} over the last 5 min)."
    )
    print("\n" + "\n".join(rows) + "\n\n" + summary)
    if args.write_readme:
        write_readme(rows, summary)
        print(f"wrote the table into {README.name}")
    if missed:
        print("\nmutations nothing caught (a chapter, or a unit test, must fail on each):")
        for name in missed:
            print(f"  {name}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
