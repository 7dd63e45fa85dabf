"""The benchmarks' Go programs, built and cached like the control plane's binaries.

benchmarks/ measures the course's informer and FooController against client-go
and sample-controller themselves. The Go programs come from one wrapper module,
``benchmarks/go``: its ``informerbench`` command (client-go's informer on the
Python benchmark's workloads), its ``configmaps`` command (makes and updates the
benchmarks' objects, faster than a Python client can), and
k8s.io/sample-controller, which the module proxy will not ``go install`` at a
version but builds as a tool of a module that requires it. They go through
:func:`helpers.cluster.build.ensure_built`, so they share its cache, its lock and
its key (client-go's version, the Go version, and a hash of go.mod, go.sum and
the recipe): the first run builds for minutes, every later one finds the
binaries in a second. The wrapper module's own source is hashed into the key
too, since it lives there rather than in a versioned module.

A third program, ``sample-controller-paced``, is sample-controller's own
controller.go with a main.go of ours that takes ``-kube-api-qps`` and
``-kube-api-burst`` (benchmarks/go/_paced-sample-controller/main.go says why and
how it differs). Go builds a package from one folder, and will not let an
overlay replace a file of the module cache, so the two files are put side by
side in a staging copy of the wrapper module (go.mod, go.sum, the package
folder), which :func:`helpers.cluster.build.ensure_built` builds and caches
like the rest; the staging copy is removed afterwards.

Run ``python -m helpers.cluster.gobuild`` to build (or find) them and print their
paths as JSON.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import CourseError
from ..home import CourseHome
from . import build

BENCHMARKS_GO_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "go"

BENCHMARK_PROGRAMS = build.GoComponent(
    name="benchmarks",
    module="k8s.io/client-go",
    packages=(
        "controllers-from-scratch/benchmarks/go/informerbench",
        "controllers-from-scratch/benchmarks/go/configmaps",
        "k8s.io/sample-controller",
    ),
    directory=BENCHMARKS_GO_DIR,
)


def source_digest(folder: Path = BENCHMARKS_GO_DIR) -> str:
    """A short hash of the module's own Go files, which go.mod and go.sum do not pin.

    Folders whose name starts with "_" are left out, as the go command leaves
    them out: the paced sample-controller's main.go has a build of its own.
    """
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.go")):
        if any(part.startswith("_") for part in path.relative_to(folder).parts):
            continue
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:8]


def component(folder: Path = BENCHMARKS_GO_DIR) -> build.GoComponent:
    """The wrapper module as a build component, named so an edit to its source rebuilds."""
    return dataclasses.replace(
        BENCHMARK_PROGRAMS, name=f"benchmarks-{source_digest(folder)}", directory=folder
    )


PACED_MAIN = BENCHMARKS_GO_DIR / "_paced-sample-controller" / "main.go"
PACED_PACKAGE = "sample-controller-paced"
"""The staged package's folder, and so the binary's name."""


def paced_component(staging: Path) -> build.GoComponent:
    """sample-controller-paced, built from ``staging`` (see :func:`stage_paced`)."""
    digest = hashlib.sha256(PACED_MAIN.read_bytes()).hexdigest()[:8]
    return build.GoComponent(
        name=f"benchmarks-paced-{digest}",
        module="k8s.io/client-go",
        packages=(f"controllers-from-scratch/benchmarks/go/{PACED_PACKAGE}",),
        directory=staging,
    )


def sample_controller_source() -> Path:
    """The folder of k8s.io/sample-controller in the module cache, downloaded if missing."""
    output = subprocess.run(
        ["go", "mod", "download", "-json", "k8s.io/sample-controller"],
        cwd=BENCHMARKS_GO_DIR, env={**os.environ, **build.BUILD_ENVIRONMENT},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if output.returncode != 0:
        raise CourseError(
            f"`go mod download k8s.io/sample-controller` failed: {output.stderr.strip()}",
            "check that the Go module proxy is reachable (`go env GOPROXY`), then run again.",
        )
    return Path(json.loads(output.stdout)["Dir"])


def stage_paced(staging: Path) -> None:
    """The wrapper module's go.mod and go.sum, and a package of main.go (ours) and controller.go."""
    for name in ("go.mod", "go.sum"):
        shutil.copyfile(BENCHMARKS_GO_DIR / name, staging / name)
    package = staging / PACED_PACKAGE
    package.mkdir()
    shutil.copyfile(PACED_MAIN, package / "main.go")
    shutil.copyfile(sample_controller_source() / "controller.go", package / "controller.go")


def ensure_benchmark_programs(home: CourseHome | None = None) -> dict[str, Path]:
    """Each program's path by name, built first if the cache lacks it.

    The names: informerbench, configmaps, sample-controller, sample-controller-paced.
    """
    home = home or CourseHome.from_environment()
    programs = build.ensure_built(home, component())
    with tempfile.TemporaryDirectory(prefix="paced-sample-controller-") as staging:
        stage_paced(Path(staging))
        programs |= build.ensure_built(home, paced_component(Path(staging)))
    return programs


def main() -> None:
    programs = ensure_benchmark_programs()
    print(json.dumps({name: str(path) for name, path in programs.items()}, indent=2))


if __name__ == "__main__":
    main()
