"""A pytest plugin for the mutation drill: stop each notebook at its first failing cell.

Loaded with ``-p tests.mutation_plugin`` by ``tests/mutation_drill.py`` (never by
``make test``'s session). A notebook stops at its first failure, as ``-x`` would
stop the run, but the unit tests after it still run; they stop at their first
failure too. What failed first, and where, goes as JSON to the file that
``CFS_MUTATION_REPORT`` names, rewritten after every failure, so that a session the
drill has to kill still says what it found.

A mutation can make a unit test hang (a reflector that never re-lists loops
forever): each unit test gets ``UNIT_TEST_LIMIT`` seconds, then fails with
:class:`UnitTestTimeout`, raised in the main thread, which counts as caught. It is a
``BaseException``, raised again every second, so that the code under test cannot
swallow it in an ``except Exception`` and loop on. Threads such a test left running
would keep the process alive, so the session ends with ``os._exit`` when any are left.

Only a failure of a test's or a cell's own code (the call phase) counts as a catch;
an error in setup (no kernel, no cluster) is reported as an error: the drill must
not count a run that did not work as a mutation caught.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPORT_ENV = "CFS_MUTATION_REPORT"
UNIT_TEST_LIMIT = 30.0
"""Seconds one unit test may take under a mutation (the slowest of them takes about 11 s)."""

_first: dict[str, dict[str, Any]] = {}  # group -> its first failure
_errors: list[str] = []
_exit_status = [0]
_spans: dict[str, list[float]] = {}  # group -> [first setup, last teardown] (monotonic)


def _group(item: pytest.Item) -> str:
    """A notebook is a group of its own; all the unit tests are one group."""
    return str(item.path) if item.path.suffix == ".ipynb" else "unit"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    group = _group(item)
    _spans.setdefault(group, [time.monotonic(), 0.0])
    if group in _first:
        pytest.skip(f"the mutation drill stops {group} at its first failure")


class UnitTestTimeout(BaseException):
    """A unit test ran past ``UNIT_TEST_LIMIT`` (not an ``Exception``: it must not be caught)."""


def _time_is_up(signum: int, frame: Any) -> None:
    raise UnitTestTimeout(f"the mutation drill's limit of {UNIT_TEST_LIMIT:g} s per unit test")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    if _group(item) != "unit":
        yield  # a notebook's cells have nbval's own limit
        return
    previous = signal.signal(signal.SIGALRM, _time_is_up)
    signal.setitimer(signal.ITIMER_REAL, UNIT_TEST_LIMIT, 1.0)  # then every second
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    group = _group(item)
    if group in _spans:
        _spans[group][1] = time.monotonic()
    if not report.failed:
        return
    if group in _first:
        return
    if report.when != "call":
        _errors.append(f"{item.nodeid} ({report.when}): {_last_line(report)}")
        _first[group] = {"nodeid": item.nodeid, "error": True}
    else:
        _first[group] = {
            "nodeid": item.nodeid,
            "cell": getattr(item, "cell_num", None),  # nbval: the code cell's number
            "message": _last_line(report),
            "error": False,
        }
    _write()


def _last_line(report: pytest.TestReport) -> str:
    lines = [line for line in report.longreprtext.splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def _write() -> None:
    path = os.environ.get(REPORT_ENV)
    if path:
        seconds = {group: end - start for group, (start, end) in _spans.items()}
        report = {"first": _first, "errors": _errors, "exit": _exit_status[0], "seconds": seconds}
        Path(path).write_text(json.dumps(report))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _exit_status[0] = int(exitstatus)
    _write()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Do not wait for threads a timed-out test left running: they may never end."""
    left = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if left:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[0])
