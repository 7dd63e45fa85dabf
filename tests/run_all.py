"""The README's test command (``make test``): lint, start the cluster, run everything.

1. ``ruff`` over the whole tree, ``mypy`` over helpers/ (``[tool.mypy]`` in
   pyproject.toml), and ``python -m helpers.export --check``: does every module
   the chapters write still match its chapter's cells? Seconds, before any
   cluster starts, so drift is reported at once.
2. ``python -m helpers.cluster up --backend local``: build (cached) and start
   the real control plane. Its log shows each step with elapsed time.
3. ``go mod download`` in tests/upstream: the upstream sources the chapters
   link to (client-go, Kubernetes, sample-controller, controller-runtime at the
   pinned versions), so tests/test_upstream_links.py checks every link and is
   never skipped here (``CFS_REQUIRE_UPSTREAM_SOURCES=1``).
4. One pytest run: the unit tests, the tests against the cluster, and every
   notebook under strict nbval with the sanitizer file. The summary at the
   end lists failures, errors, and every skipped or expected-to-fail test with
   its reason (``-rfEsxX``): a skip must never pass as a silent "s".
5. The mutation drill (``python -m tests.mutation_drill``, README "The mutation
   drill"): each planted bug must fail its chapter or a unit test; it names those
   that did not. It runs after the pytest run, and only if that passed: a chapter
   that fails unmutated would seem to catch every bug planted in it.
6. Stop the cluster again, unless it was already running before (a learner's
   or maintainer's cluster is left as it was found). This happens also when
   ``up`` failed half way, since it may have started processes by then.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from helpers.cluster.backends import recorded_backend
from helpers.cluster.local import LocalCluster
from helpers.home import DEFAULT_CLUSTER_NAME, CourseHome
from tests import upstream_links

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PYTEST = [
    sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--durations=15", "-rfEsxX",
    "--nbval", "--nbval-sanitize-with", "tests/nbval-sanitize.cfg", "--nbval-cell-timeout=120",
    "tests", "notebooks",
]  # fmt: skip
MUTATION_DRILL = [sys.executable, "-m", "tests.mutation_drill"]


def run(*command: str, env: dict[str, str] | None = None) -> int:
    print(f"\n$ {' '.join(command)}", flush=True)
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def static_checks() -> int:
    """Lint, types and the notebook-to-module drift check: 0, or 1 with what to run next."""
    if run(str(BIN / "ruff"), "check", ".") or run(str(BIN / "ruff"), "format", "--check", "."):
        print("ruff found problems: run `.venv/bin/ruff check --fix . && .venv/bin/ruff format .`")
        return 1
    if run(str(BIN / "mypy")):
        print("mypy found type errors in helpers/: fix them, or ignore one saying why beside it")
        return 1
    if run(sys.executable, "-m", "helpers.export", "--check"):
        print("the modules above differ from their chapters: nothing was started.")
        return 1
    return 0


def main() -> int:
    started = time.monotonic()
    if static_checks():
        return 1
    up = [sys.executable, "-m", "helpers.cluster", "up", "--backend", "local"]
    code = with_cluster(CourseHome.from_environment(), DEFAULT_CLUSTER_NAME, up, run_tests)
    minutes, seconds = divmod(int(time.monotonic() - started), 60)
    print(f"\nmake test finished in {minutes}m{seconds:02d}s with exit code {code}")
    return code


def run_tests(env: dict[str, str]) -> int:
    """The pytest run, once the pinned upstream sources are in the Go module cache."""
    print("\n$ go mod download  (in tests/upstream: the sources the chapters link to)", flush=True)
    try:
        upstream_links.download_pinned_sources()
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"error: the upstream sources could not be downloaded ({error}).")
        print("next step: check `go env GOPROXY` and the network, then run make test again.")
        return 2
    return then_mutations(run(*PYTEST, env={**env, "CFS_REQUIRE_UPSTREAM_SOURCES": "1"}), env)


def then_mutations(code: int, env: dict[str, str]) -> int:
    """The mutation drill, once the pytest run (exit ``code``) has passed; its exit code."""
    if code:
        print("\nThe mutation drill did not run: the pytest run must pass first.")
        return code
    return run(*MUTATION_DRILL, env=env)


def with_cluster(
    home: CourseHome, name: str, up: list[str], tests: Callable[[dict[str, str]], int]
) -> int:
    """Start cluster ``name`` with the command ``up``, run ``tests(env)``, stop what was started.

    ``env`` has KUBECONFIG pointing at the cluster. The cluster is stopped
    afterwards unless it was healthy before we began, and also when ``up``
    fails or is interrupted half way: kwokctl may have started every process
    before, say, the Foo CRD step failed.
    """
    backend = recorded_backend(home, name)
    if backend not in (None, "local"):
        print(
            f"error: the course's cluster is a {backend} cluster; the tests run on the local "
            "control plane.\nnext step: `make down` first, or set CFS_HOME to another folder."
        )
        return 2
    cluster = LocalCluster(home, name)
    was_running = backend == "local" and cluster.health_problem() is None
    env = {**os.environ, "CFS_HOME": str(home.root)}
    try:
        if run(*up, env=env):
            return 2
        return tests({**env, "KUBECONFIG": str(cluster.kubeconfig)})
    finally:
        if not was_running:
            run(sys.executable, "-m", "helpers.cluster", "down", "--name", name, env=env)


if __name__ == "__main__":
    sys.exit(main())
