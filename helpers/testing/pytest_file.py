"""From test functions in a notebook to a file pytest runs, and a pytest run in a child process.

Chapters 09a and 09b write their tests as plain functions (``test_*``,
parameters named after fixtures, the controller class as a parameter with a
default, which pytest leaves alone). :func:`write_pytest_file` puts their source
in a file under the imports and the two fixtures they use; :func:`run_pytest` runs pytest
on it as a terminal would, and reads the counts off its summary line.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEADER = '''\
# Tests for the Foo controller, written by chapter 09a of Controllers from Scratch.
# Run them with `python -m pytest` from the course's environment, KUBECONFIG set.

import kubernetes
import pytest

from helpers import kube, namespaces
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, FooController
from helpers.controller import ResourceExistsError
from helpers.faults.stale_cache import stale_cache, touch
from helpers.testing.on_cluster import ControllerUnderTest
from helpers.testing.recording import cached_deployment, cached_foo, sync_once


@pytest.fixture(scope="session")
def api():
    """A client for the cluster the kubeconfig names, as the notebooks connect."""
    return kube.connect()


@pytest.fixture
def namespace(api):
    """Chapter 09a's namespace (made again if the chapter deleted it; a workshop attendee's own)."""
    return namespaces.ensure_namespace(api, "ch09a-testing")
'''

PYTEST_TIMEOUT = 300.0
"""Seconds the whole pytest run may take before it is stopped."""


def write_pytest_file(path: Path, tests: Iterable[Callable[..., Any]]) -> Path:
    """Write ``tests`` (functions, by their source) below :data:`HEADER` into ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "".join("\n\n" + inspect.getsource(test) for test in tests))
    return path


@dataclass(frozen=True)
class PytestRun:
    """How a pytest run ended: its counts, exit code and output."""

    passed: int
    failed: int
    exit_code: int
    output: str


def run_pytest(path: Path, *arguments: str) -> PytestRun:
    """Run pytest on ``path`` in a child process, from the file's folder, as a terminal would.

    Third-party pytest plugins are not loaded (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``):
    the course's environment has two (nbval's and hypothesis's) that take seconds
    to import on a busy machine, and the file needs neither.
    """
    command = [sys.executable, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider",
               *arguments, path.name]  # fmt: skip
    environment = os.environ | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        command, cwd=path.parent, env=environment, capture_output=True, text=True,
        timeout=PYTEST_TIMEOUT, check=False,
    )  # fmt: skip
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    counts = {word: int(number) for number, word in re.findall(r"(\d+) (passed|failed)", summary)}
    return PytestRun(counts.get("passed", 0), counts.get("failed", 0), done.returncode,
                     done.stdout + done.stderr)  # fmt: skip
