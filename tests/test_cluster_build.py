"""The binary cache: one build at a time, keyed by everything that shapes a binary.

The real components take 12 minutes to build, so these tests build a tiny Go
module of their own (a ``main`` that does nothing, in a wrapper module shaped
like the ones in ``cluster/go/``) with the same code path and the machine's Go.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cluster import build
from helpers.cluster.build import ETCD, KUBERNETES, GoComponent, cache_key

ROOT = Path(__file__).resolve().parents[1]
GO = "go1.26.8"

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="building needs Go on PATH")

# Run in a child process: set where the wrapper modules are, then build "hello".
BUILD_HELLO = """
import sys
from pathlib import Path
from helpers.cluster import build
from helpers.home import CourseHome
build.GO_MODULES_DIR = Path(sys.argv[1])
hello = build.GoComponent("hello", "example.com/hello", ("example.com/hello",), "hello")
print(build.ensure_built(CourseHome(Path(sys.argv[2])), hello)["hello"])
"""


def wrapper_modules(folder: Path) -> Path:
    """``folder/hello``: a wrapper module that pins example.com/hello (a local module)."""
    wrapper = folder / "hello"
    (wrapper / "hello").mkdir(parents=True)
    (wrapper / "go.mod").write_text(
        "module example.com/cfs-build-test\n\ngo 1.26\n\n"
        "require example.com/hello v1.0.0\n\nreplace example.com/hello => ./hello\n"
    )
    (wrapper / "go.sum").write_text("")
    (wrapper / "hello" / "go.mod").write_text("module example.com/hello\n\ngo 1.26\n")
    (wrapper / "hello" / "main.go").write_text("package main\n\nfunc main() {}\n")
    return folder


def start_build(modules: Path, home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", BUILD_HELLO, str(modules), str(home)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_a_second_build_waits_for_the_first_and_orphans_are_removed(tmp_path: Path) -> None:
    modules = wrapper_modules(tmp_path / "modules")
    home = tmp_path / "home"
    cache = home / "bin"
    orphan = cache / ".hello-k1lled"  # a scratch folder left by a build that was killed
    orphan.mkdir(parents=True)
    (orphan / "hello").write_text("half a binary")

    with (cache / ".build.lock").open("a") as lock:  # another `make up`, building right now
        fcntl.flock(lock, fcntl.LOCK_EX)
        waiting = start_build(modules, home)
        assert waiting.stderr is not None
        first_line = waiting.stderr.readline()
        assert "waiting for another build" in first_line, first_line
        assert not list(cache.glob("hello-*")), "it built while another build held the lock"
        fcntl.flock(lock, fcntl.LOCK_UN)
    out, err = waiting.communicate(timeout=300)

    assert waiting.returncode == 0, first_line + err
    built = Path(out.strip())
    assert built.is_file() and os.access(built, os.X_OK)
    assert (built.parent / ".complete").exists()
    assert not orphan.exists(), "the killed build's scratch folder is still there"
    assert [path.name for path in cache.iterdir() if path.name.startswith(".hello-")] == []


def test_a_cached_build_is_found_without_building(tmp_path: Path) -> None:
    modules = wrapper_modules(tmp_path / "modules")
    home = tmp_path / "home"
    first = start_build(modules, home)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert "building hello" in err

    second = start_build(modules, home)
    again, err = second.communicate(timeout=300)

    assert second.returncode == 0, err
    assert again == out
    assert "building" not in err


def test_the_cache_key_changes_with_every_build_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """A binary built with other flags is another binary: it must not be found under this key."""
    keys = {cache_key(ETCD, GO)}
    assert cache_key(ETCD, GO) in keys, "the key must not depend on where a build writes"

    def changed() -> str:
        key = cache_key(ETCD, GO)
        assert key not in keys, "a build input changed but the cache key did not"
        keys.add(key)
        return key

    with monkeypatch.context() as patch:
        patch.setitem(build.BUILD_ENVIRONMENT, "CGO_ENABLED", "1")
        changed()
    with monkeypatch.context() as patch:
        patch.setitem(build.BUILD_ENVIRONMENT, "GOFLAGS", "-mod=mod")
        changed()
    with monkeypatch.context() as patch:
        patch.setattr(build, "BUILD_FLAGS", ())  # without -trimpath
        changed()
    with monkeypatch.context() as patch:
        patch.setattr(GoComponent, "ldflags", lambda self: "-s")
        changed()
    assert cache_key(dataclasses.replace(ETCD, packages=(*ETCD.packages, "x/y")), GO) not in keys
    assert cache_key(ETCD, "go1.26.9") not in keys
    assert cache_key(ETCD, GO) in keys  # and back to the same key when nothing changed


def test_kubernetes_version_flags_are_part_of_its_key() -> None:
    """The -X flags that give the binaries their version string are in the recipe."""
    recipe = build.build_recipe(KUBERNETES)
    assert "-trimpath" in recipe["command"]
    assert any("gitVersion=v1." in part for part in recipe["command"])
    assert recipe["environment"]["CGO_ENABLED"] == "0"
