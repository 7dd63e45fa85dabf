"""The import graph points one way: machinery never loads the cluster orchestration.

A learner who imports the reflector should get a reflector, not kind, kwokctl and
the Go build (helpers/cluster/). Each module is imported in a fresh interpreter,
and the ``helpers.cluster`` modules that came with it are compared with what it
may use:

* every module of ``helpers`` (the machinery the chapters build, the program
  around it, the widgets, and connecting to a cluster: ``helpers.kube`` finds
  the course's kubeconfig through :mod:`helpers.home`, a leaf outside
  ``helpers.cluster``): nothing of ``helpers.cluster``, with no exception;
* the exercise checks, which compact etcd and so must find the cluster, the
  fault drills, which stop the API server, and ``helpers.cluster`` itself:
  anything.

The same rule is checked in the code too (an import inside a function counts):
no module outside those may name ``helpers.cluster`` at all.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAY_LOAD_ANYTHING = ("helpers.cluster", "helpers.exercises.", "helpers.faults")


def course_modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not name.startswith(MAY_LOAD_ANYTHING):
            names.append(name)
    return names


PROBE = (
    "import importlib, sys; importlib.import_module(sys.argv[1]); "
    "print(' '.join(sorted(m for m in sys.modules if m.startswith('helpers.cluster'))))"
)


def cluster_modules_loaded_by(module: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, module], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"importing {module} failed:\n{done.stderr}"
    return set(done.stdout.split())


@pytest.fixture(scope="module")
def loaded() -> dict[str, set[str]]:
    modules = course_modules()
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(modules, pool.map(cluster_modules_loaded_by, modules), strict=True))


def test_the_machinery_loads_nothing_of_the_cluster_orchestration(
    loaded: dict[str, set[str]],
) -> None:
    offenders = {module: sorted(found) for module, found in loaded.items() if found}
    assert not offenders, f"these modules load cluster orchestration on import: {offenders}"
    assert loaded["helpers.kube"] == set() and "helpers.home" in course_modules()


def test_no_module_below_the_orchestration_names_it() -> None:
    """No import up into ``helpers.cluster``, not even one inside a function."""
    graph = helpers_import_graph()
    offenders = {
        module: sorted(t for t in targets if t.split(".")[:2] == ["helpers", "cluster"])
        for module, targets in graph.items()
        if not module.startswith(MAY_LOAD_ANYTHING)
    }
    assert not {module: up for module, up in offenders.items() if up}


def test_the_probe_sees_an_import_of_the_orchestration() -> None:
    """The check can fail: an exercise check does load the cluster's backends."""
    assert "helpers.cluster.local" in cluster_modules_loaded_by("helpers.exercises.ch02")
    assert "helpers.reflector" in course_modules()


def helpers_import_graph() -> dict[str, set[str]]:
    """Which helpers module imports which, anywhere in its file (inside functions too)."""
    import ast

    modules = {}
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            found.update(target for target in targets if target in modules and target != name)
        graph[name] = found
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first walk (each reported once, from its first module)."""
    cycles: list[list[str]] = []
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in path:
                cycles.append([*path[path.index(target) :], target])
            elif target not in done:
                walk(target, [*path, target])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            walk(module, [module])
    return cycles


def test_no_module_of_helpers_imports_itself_round_a_circle() -> None:
    """controller -> program -> controller was one: chapter 05's module ran chapter 08's program."""
    assert import_cycles(helpers_import_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


RECORDERS = ("helpers.timeline", "helpers.chain", "helpers.attribution", "helpers.chain_table")
"""Modules that record or reason about a record; drawing it is timeline_plot's and swimlanes'."""
TRANSPORT = ("helpers.listwatch", "helpers.decode")


def test_what_records_or_moves_bytes_draws_nothing() -> None:
    """A recorder loads no plotting library, and neither do the list and watch and the decoder:
    recording apart from drawing, as swimlanes.py draws what chain.py records."""
    probe = (
        "import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]; "
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *RECORDERS, *TRANSPORT],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.split() == []
