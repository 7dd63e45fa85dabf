"""Build the local control plane's binaries from Go modules, once per version.

Machines without Docker run a real upstream control plane: etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok and
kwokctl. None of them is downloaded as a prebuilt binary; each is compiled
from its Go module with the machine's Go, through the Go module proxy. The
small wrapper modules in ``cluster/go/`` pin the versions and hold the
``go.sum`` that makes the build reproducible.

A cold build takes tens of minutes on two cores, so results go to a cache
outside the checkout (see :mod:`helpers.home`), keyed by the module's
version, the Go version, and a hash of its ``go.mod``, ``go.sum`` and the build
recipe (flags, environment, packages). A second ``up`` finds them and starts in
seconds; a changed pin or flag builds a new folder beside the old one, which
running clusters may still use.

Two ``make up`` at once must not build into the same folder: a file lock in the
cache lets one build while the other waits, and whoever holds it removes the
scratch folders a killed build left behind.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CourseError
from ..home import CourseHome
from .progress import step

GO_MODULES_DIR = Path(__file__).resolve().parents[2] / "cluster" / "go"

# How every component is built; all of it is part of the cache key.
BUILD_ENVIRONMENT = {
    "CGO_ENABLED": "0",
    # Never let `go` fetch a different toolchain: the machine's Go is the one we checked.
    "GOTOOLCHAIN": "local",
    "GOFLAGS": "-mod=readonly -buildvcs=false",
}
BUILD_FLAGS = ("-trimpath",)
LOCK_FILE = ".build.lock"


@dataclass(frozen=True)
class GoComponent:
    """One wrapper module in ``cluster/go/`` and the commands it builds."""

    name: str
    module: str
    packages: tuple[str, ...]
    # A module's root package builds a binary named after the module's last
    # path element ("v3" for etcd); name it explicitly when that is unhelpful.
    single_binary_name: str | None = None
    # Where the wrapper module lives, when not in ``cluster/go/<name>`` (the
    # benchmarks keep theirs beside the Python benchmarks, in benchmarks/go).
    directory: Path | None = None

    @property
    def source_dir(self) -> Path:
        return self.directory or GO_MODULES_DIR / self.name

    def version(self) -> str:
        """The pinned version of ``module``, read from the wrapper's go.mod."""
        go_mod = (self.source_dir / "go.mod").read_text()
        found = re.search(rf"^\s*(?:require\s+)?{re.escape(self.module)}\s+(v\S+)", go_mod, re.M)
        if not found:
            raise CourseError(
                f"{self.source_dir / 'go.mod'} does not require {self.module}.",
                "restore the file with `git checkout cluster/go`.",
            )
        return found.group(1)

    def ldflags(self) -> str:
        flags = ["-s", "-w"]
        if self.name == "kubernetes":
            # Without these, the binaries call themselves v0.0.0 and kwokctl
            # and `kubectl version` report nonsense.
            version = self.version()
            major, minor = version.lstrip("v").split(".")[:2]
            package = "k8s.io/component-base/version"
            flags += [
                f"-X {package}.gitVersion={version}",
                f"-X {package}.gitMajor={major}",
                f"-X {package}.gitMinor={minor}",
                f"-X {package}.gitTreeState=clean",
            ]
        return " ".join(flags)

    def binary_names(self) -> list[str]:
        if self.single_binary_name:
            return [self.single_binary_name]
        return [package.rstrip("/").rsplit("/", 1)[-1] for package in self.packages]


KUBERNETES = GoComponent(
    name="kubernetes",
    module="k8s.io/kubernetes",
    packages=tuple(
        f"k8s.io/kubernetes/cmd/{command}"
        for command in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
    ),
)
ETCD = GoComponent(
    name="etcd",
    module="go.etcd.io/etcd/server/v3",
    packages=("go.etcd.io/etcd/server/v3",),
    single_binary_name="etcd",
)
KWOK = GoComponent(
    name="kwok",
    module="sigs.k8s.io/kwok",
    packages=("sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kwok/cmd/kwokctl"),
)
COMPONENTS = (ETCD, KWOK, KUBERNETES)


def go_version() -> str:
    """The machine's Go version (``go1.26.8``), or a CourseError saying how to get Go."""
    go = shutil.which("go")
    if go is None:
        raise CourseError(
            "Neither Docker (for kind) nor Go (to build the local control plane) was found.",
            "install Docker and kind (https://kind.sigs.k8s.io), or Go 1.26 or newer "
            "(https://go.dev/dl), then run the command again.",
        )
    output = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    version = output.stdout.strip()
    if output.returncode != 0 or not version.startswith("go"):
        raise CourseError(f"`go env GOVERSION` failed: {output.stderr.strip()}", "reinstall Go.")
    numbers = [int(part) for part in re.findall(r"\d+", version)[:2]]
    if numbers < [1, 26]:
        raise CourseError(
            f"Go {version} is too old to build Kubernetes 1.36 (it needs go1.26 or newer).",
            "install Go 1.26 or newer (https://go.dev/dl), then run the command again.",
        )
    return version


def build_command(component: GoComponent, output_dir: Path) -> list[str]:
    return [
        "go", "build", *BUILD_FLAGS, "-ldflags", component.ldflags(),
        "-o", _output_path(component, output_dir), *component.packages,
    ]  # fmt: skip


def build_recipe(component: GoComponent) -> dict[str, Any]:
    """Everything besides the sources that decides what a build produces."""
    return {
        "command": build_command(component, Path("<output>")),
        "environment": dict(BUILD_ENVIRONMENT),
    }


def cache_key(component: GoComponent, go: str) -> str:
    """``kubernetes-v1.36.3-go1.26.8-1a2b3c4d5e6f``: changes whenever an input changes."""
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((component.source_dir / name).read_bytes())
    digest.update(json.dumps(build_recipe(component), sort_keys=True).encode())
    return f"{component.name}-{component.version()}-{go}-{digest.hexdigest()[:12]}"


def ensure_built(home: CourseHome, component: GoComponent) -> dict[str, Path]:
    """Return ``{binary name: path}``, building the component first if the cache lacks it."""
    go = go_version()
    target = home.bin_cache / cache_key(component, go)
    binaries = {name: target / name for name in component.binary_names()}

    def cached() -> bool:
        return (target / ".complete").exists() and all(path.exists() for path in binaries.values())

    if cached():
        return binaries
    with build_lock(home):
        if cached():  # built by whoever held the lock before us
            return binaries
        for orphan in home.bin_cache.glob(f".{component.name}-*"):
            shutil.rmtree(orphan, ignore_errors=True)  # a killed build's scratch folder
        # Build into a scratch folder and rename it into place, so an interrupted
        # build never leaves a cache entry that looks complete.
        scratch = Path(tempfile.mkdtemp(prefix=f".{component.name}-", dir=home.bin_cache))
        try:
            with step(f"building {component.name} {component.version()} ({', '.join(binaries)})"):
                _go_build(component, scratch)
            (scratch / ".complete").write_text(f"{component.module} {component.version()} {go}\n")
            if target.exists():
                shutil.rmtree(target)
            scratch.rename(target)
        finally:
            if scratch.exists():
                shutil.rmtree(scratch, ignore_errors=True)
    return binaries


@contextmanager
def build_lock(home: CourseHome) -> Iterator[None]:
    """Hold the cache's build lock (waiting, and saying so, while another build has it)."""
    home.make_root()  # the course's folder first, 0700, before anything is written in it
    home.bin_cache.mkdir(parents=True, exist_ok=True)
    with (home.bin_cache / LOCK_FILE).open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with step(f"waiting for another build in {home.bin_cache} to finish"):
                fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_all_built(home: CourseHome) -> dict[str, Path]:
    """Every binary the local control plane needs, by name."""
    binaries: dict[str, Path] = {}
    for component in COMPONENTS:
        binaries.update(ensure_built(home, component))
    return binaries


def _output_path(component: GoComponent, output_dir: Path) -> str:
    """``go build -o`` takes a file for one package, a folder (trailing slash) for several."""
    if component.single_binary_name:
        return str(output_dir / component.single_binary_name)
    return f"{output_dir}{os.sep}"


def _go_build(component: GoComponent, output_dir: Path) -> None:
    command = build_command(component, output_dir)
    result = subprocess.run(
        command, cwd=component.source_dir, env={**os.environ, **BUILD_ENVIRONMENT},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-15:])
        raise CourseError(
            f"Building {component.name} failed (`{' '.join(command[:2])} ...` in "
            f"{component.source_dir}):\n{tail}",
            "check that the Go module proxy is reachable (`go env GOPROXY`) and that the disk "
            "has a few GB free, then run the command again; the build resumes from Go's cache.",
        )
