"""The README's test command (``make test``): lint, start the cluster, run everything.

1. ``ruff`` over the whole tree.
2. ``python -m helpers.cluster up --backend local``: build (cached) and start
   the real control plane. Its log shows each step with elapsed time.
3. One pytest run: the unit tests, the tests against the cluster, and every
   notebook under strict nbval with the sanitizer file.
4. Stop the cluster again, unless it was already running before (a learner's
   or maintainer's cluster is left as it was found).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from helpers.cluster.backends import recorded_backend
from helpers.cluster.local import LocalCluster
from helpers.cluster.paths import DEFAULT_CLUSTER_NAME, CourseHome

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(*command: str, env: dict[str, str] | None = None) -> int:
    print(f"\n$ {' '.join(command)}", flush=True)
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def main() -> int:
    started = time.monotonic()
    if run(str(BIN / "ruff"), "check", ".") or run(str(BIN / "ruff"), "format", "--check", "."):
        print("ruff found problems: run `.venv/bin/ruff check --fix . && .venv/bin/ruff format .`")
        return 1

    home = CourseHome.from_environment()
    backend = recorded_backend(home, DEFAULT_CLUSTER_NAME)
    if backend not in (None, "local"):
        print(
            f"error: the course's cluster is a {backend} cluster; the tests run on the local "
            "control plane.\nnext step: `make down` first, or set CFS_HOME to another folder."
        )
        return 2
    cluster = LocalCluster(home, DEFAULT_CLUSTER_NAME)
    was_running = backend == "local" and cluster.health_problem() is None

    python = sys.executable
    if run(python, "-m", "helpers.cluster", "up", "--backend", "local"):
        return 2
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    try:
        code = run(
            python, "-m", "pytest", "-p", "no:cacheprovider", "--durations=15",
            "--nbval", "--nbval-sanitize-with", "tests/nbval-sanitize.cfg",
            "--nbval-cell-timeout=120",
            "tests", "notebooks",
            env=env,
        )  # fmt: skip
    finally:
        if not was_running:
            run(python, "-m", "helpers.cluster", "down")
    minutes, seconds = divmod(int(time.monotonic() - started), 60)
    print(f"\nmake test finished in {minutes}m{seconds:02d}s with exit code {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
