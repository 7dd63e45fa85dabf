"""The benchmarks' Go programs, built and cached like the control plane's binaries.

benchmarks/ measures the course's informer and FooController against client-go
and sample-controller themselves. Both Go programs come from one wrapper module,
``benchmarks/go``: its ``informerbench`` command (client-go's informer on the
Python benchmark's workloads) and k8s.io/sample-controller, which the module
proxy will not ``go install`` at a version but builds as a tool of a module that
requires it. They go through :func:`helpers.cluster.build.ensure_built`, so they
share its cache, its lock and its key (client-go's version, the Go version, and a
hash of go.mod, go.sum and the recipe): the first run builds for minutes, every
later one finds the binaries in a second. informerbench's own source is hashed
into the key too, since it lives in the wrapper module rather than in a
versioned module.

Run ``python -m helpers.cluster.gobuild`` to build (or find) them and print their
paths as JSON.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from . import build
from .paths import CourseHome

BENCHMARKS_GO_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "go"

BENCHMARK_PROGRAMS = build.GoComponent(
    name="benchmarks",
    module="k8s.io/client-go",
    packages=("controllers-from-scratch/benchmarks/go/informerbench", "k8s.io/sample-controller"),
    directory=BENCHMARKS_GO_DIR,
)


def source_digest(folder: Path = BENCHMARKS_GO_DIR) -> str:
    """A short hash of the module's own Go files, which go.mod and go.sum do not pin."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.go")):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:8]


def component(folder: Path = BENCHMARKS_GO_DIR) -> build.GoComponent:
    """The wrapper module as a build component, named so an edit to its source rebuilds."""
    return dataclasses.replace(
        BENCHMARK_PROGRAMS, name=f"benchmarks-{source_digest(folder)}", directory=folder
    )


def ensure_benchmark_programs(home: CourseHome | None = None) -> dict[str, Path]:
    """``{"informerbench": path, "sample-controller": path}``, built first if not cached."""
    return build.ensure_built(home or CourseHome.from_environment(), component())


def main() -> None:
    programs = ensure_benchmark_programs()
    print(json.dumps({name: str(path) for name, path in programs.items()}, indent=2))


if __name__ == "__main__":
    main()
