"""One set of fakes (helpers/testing/fakes.py), and test modules that stand alone.

A ListerWatcher stand-in is written once, typed against the Protocol (mypy checks it), and the
unit tests and the exercise checks use it; a test module imports support modules
(``tests/decoys.py``, ``tests/program_harness.py``, ...), never another test module, so running
one file never runs (or depends on the fixtures of) another.
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers.testing.fakes import FakeSource, ScriptedStream, SilentStream, StaticSource

ROOT = Path(__file__).resolve().parents[1]

STAND_INS = {
    # what a class with both list() and watch() may be, outside helpers/testing/fakes.py
    ("helpers/listwatch.py", "ListerWatcher"): "the Protocol",
    ("helpers/listwatch.py", "ListWatch"): "the real one",
    ("helpers/testing/recording.py", "NotWatched"): "chapter 09a's own, part of its lesson",
}


def classes_with_list_and_watch() -> dict[tuple[str, str], list[str]]:
    found = {}
    for folder in ("helpers", "tests", "benchmarks", "book"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                    if {"list", "watch"} <= methods:
                        where = (path.relative_to(ROOT).as_posix(), node.name)
                        found[where] = [ast.unparse(base) for base in node.bases]
    return found


def test_every_list_and_watch_stand_in_is_one_of_the_fakes() -> None:
    others = {
        where: bases
        for where, bases in classes_with_list_and_watch().items()
        if where[0] != "helpers/testing/fakes.py"
        and where not in STAND_INS
        and bases != ["ListWatch"]  # the real ListWatch, instrumented: no stand-in
    }
    assert not others, f"a hand-written ListerWatcher outside helpers/testing/fakes.py: {others}"
    fakes = {name for path, name in classes_with_list_and_watch() if path.endswith("fakes.py")}
    assert fakes == {"FakeSource", "StaticSource"}


def test_no_test_module_imports_another() -> None:
    found = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(name.startswith("tests.test_") for name in names):
                found.append(f"{path.name}:{node.lineno}")
    assert not found, f"test modules importing test modules: {found}"


def test_a_scripted_stream_plays_its_events_then_ends() -> None:
    script = [{"type": "ADDED", "object": {"metadata": {"name": "a"}}}]
    stream = ScriptedStream(script, end=True)
    events = list(stream)
    assert events == script and events[0] is not script[0]  # copies: readers may change them
    assert not stream.open


def test_a_source_feeds_its_own_streams_and_leaves_a_scripted_answer_alone() -> None:
    source = FakeSource()
    fed = source.watch("0", 60)
    silent = SilentStream()
    source.on_watch = lambda call: silent
    assert source.watch("0", 60) is silent
    source.add("a")
    assert source.open_streams() == [fed]
    assert next(iter(fed))["object"]["metadata"]["name"] == "a"
    silent.close()
    fed.close()


def test_a_static_source_lists_copies_and_its_watch_stays_silent() -> None:
    item = {"metadata": {"name": "a", "resourceVersion": "3"}}
    source = StaticSource(item)
    listed = source.list()
    assert listed["items"] == [item] and listed["items"][0] is not item
    watch = source.watch("10", 60)
    watch.close()
    assert list(watch) == []
