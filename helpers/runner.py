"""The controller as a child process: start it, read its log, put leaders on a timeline.

Not a client-go counterpart, and not built by a chapter: an instrument, with which
chapters 08 and 08a (and the tests) watch real controller processes. Each
:class:`ControllerRun` is one ``python -m helpers.program`` process (or another
module of the course that logs the same lines, such as chapter 08's
``helpers.lease_worker``). A reader
thread (named, joined when the process's stderr closes) collects its log lines
and notifies a Condition, so a caller waits for a line instead of sleeping. The
"started/stopped leading ... (monotonic T)" lines carry the system-wide monotonic
clock, so the lines of several processes and our own ``time.monotonic()`` (the
moment we sent SIGKILL, say) lie on one timeline.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import kubernetes

import helpers
from helpers.waiting import wait_for

ROOT = Path(helpers.__file__).resolve().parents[1]
"""Where ``python -m helpers.program`` finds the package (its parent folder)."""
LEADERSHIP = re.compile(
    r"(?P<what>started|stopped) leading lease (?P<lease>\S+) as (?P<who>\S+) "
    r"\(monotonic (?P<at>[\d.]+)\)"
)
STARTED_LEADING = r"started leading lease \S+ as \S+ \(monotonic (?P<at>[\d.]+)\)"
"""A process's log line when it starts leading; ``at`` is its monotonic clock then."""
WROTE = re.compile(r"wrote (?P<what>\S+) \(monotonic (?P<at>[\d.]+)\)")
"""A lease worker's log line for each write that the API server answered."""


class ControllerRun:
    """One controller process; its stderr lines, and when it ended.

    ``kubeconfig`` goes first on its command line as ``--kubeconfig``: chapters pass the file
    their kernel connected with (:func:`helpers.kube.default_kubeconfig`), so the process
    talks to the same cluster whether or not ``$KUBECONFIG`` is set.
    """

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        name: str = "controller",
        condition: threading.Condition | None = None,
        module: str = "helpers.program",
        kubeconfig: str | Path | None = None,
    ) -> None:
        self.name = name
        # The program finds its kubeconfig as controller-runtime does (--kubeconfig, $KUBECONFIG,
        # a Pod's service account, ~/.kube/config), never the course's by itself: name it here.
        self.args = ["--kubeconfig", str(kubeconfig), *args] if kubeconfig else list(args)
        self.lines: list[str] = []
        # Notified for every new line; runs that share it can be waited on together.
        self.changed = condition if condition is not None else threading.Condition()
        self.started_at = time.monotonic()
        self.killed_at: float | None = None
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, *self.args],
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, name=f"log-reader-{name}")
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    # -- waiting ------------------------------------------------------------------------------

    def wait_for_line(self, pattern: str, timeout: float, after: int = 0) -> re.Match[str]:
        """The first log line matching ``pattern`` (from line ``after`` on: pass
        ``len(run.lines)`` to wait for a new one); fails if the process ends without one."""
        regex = re.compile(pattern)

        def found() -> re.Match[str] | None:
            return next((m for m in map(regex.search, self.lines[after:]) if m), None)

        with self.changed:
            ok = self.changed.wait_for(
                lambda: found() is not None or not self._reader.is_alive(), timeout
            )
            match = found()
        assert ok and match, f"{self.name}: no line matching {pattern!r}:\n{self.log()}"
        return match

    def started_leading(self, timeout: float) -> float:
        """When this process started leading (monotonic, from its own log line); waits for it."""
        return float(self.wait_for_line(STARTED_LEADING, timeout).group("at"))

    def has_line(self, pattern: str) -> bool:
        with self.changed:
            return any(re.search(pattern, line) for line in self.lines)

    def wait(self, timeout: float) -> int:
        """Wait for the process to end; its exit code."""
        code = self.process.wait(timeout)
        self._reader.join(timeout)
        return code

    def url(self, name: str, timeout: float = 30) -> str:
        """Where the process serves ``name`` ("metrics" or "probes"; one server may do both)."""
        return self.wait_for_line(
            rf"serving [\w ]*\b{name}\b[\w ]* on (http://\S+) ", timeout
        ).group(1)

    def wait_until_ready(self, timeout: float = 60) -> None:
        """Until ``/readyz`` answers 200, asked every 0.1 s as a kubelet's readiness probe asks.

        A poll, on purpose: readiness is a question a process answers when asked, and
        the program logs no line when its caches have synced.
        """
        url, deadline = self.url("probes") + "/readyz", time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as answer:
                    if answer.status == 200:
                        return
            except urllib.error.HTTPError as not_ready:
                not_ready.close()
            assert time.monotonic() < deadline, f"{self.name}: not ready within {timeout:g} s"
            time.sleep(0.1)  # the probe's period

    # -- ending -------------------------------------------------------------------------------

    def signal(self, signum: int) -> float:
        """Send ``signum``; return when (monotonic)."""
        at = time.monotonic()
        self.process.send_signal(signum)
        if signum == signal.SIGKILL:
            self.killed_at = at
        return at

    def stop(self) -> None:
        """Make sure the process is gone (SIGKILL if it is still there), and join the reader."""
        if self.process.poll() is None:
            self.signal(signal.SIGKILL)
        self.process.wait(30)
        self._reader.join(30)

    def log(self) -> str:
        with self.changed:
            return "\n".join(self.lines)

    # -- leadership ---------------------------------------------------------------------------

    def leadership(self) -> list[tuple[str, str, float]]:
        """``(what, identity, monotonic time)`` for each started/stopped line, in order."""
        with self.changed:
            return [
                (m["what"], m["who"], float(m["at"]))
                for m in map(LEADERSHIP.search, self.lines)
                if m
            ]

    def writes(self) -> list[tuple[float, str]]:
        """``(monotonic time, what)`` of each write the process logged as answered."""
        with self.changed:
            return [(float(m["at"]), m["what"]) for m in map(WROTE.search, self.lines) if m]

    def intervals(self) -> list[tuple[float, float]]:
        """When this process led: from "started" to "stopped", or to its SIGKILL, or to now."""
        spans, began = [], None
        for what, _, at in self.leadership():
            if what == "started":
                began = at
            elif began is not None:
                spans.append((began, at))
                began = None
        if began is not None:
            end = self.killed_at if self.killed_at is not None else time.monotonic()
            spans.append((began, end))
        return spans


def assert_never_two_leaders(runs: Sequence[ControllerRun]) -> list[tuple[float, float, str]]:
    """No two processes' leading intervals overlap; returns the timeline, sorted."""
    timeline = sorted((start, end, run.name) for run in runs for start, end in run.intervals())
    for (_, end, first), (start, _, second) in itertools.pairwise(timeline):
        assert end <= start, f"{first} still led at {end:.3f} when {second} began at {start:.3f}"
    return timeline


def first_to_log(runs: Sequence[ControllerRun], pattern: str, timeout: float) -> ControllerRun:
    """The run that logs ``pattern`` first (the runs must share one condition)."""
    condition = runs[0].changed
    assert all(run.changed is condition for run in runs), "give the runs one shared condition"

    def found() -> ControllerRun | None:
        return next((run for run in runs if any(re.search(pattern, x) for x in run.lines)), None)

    with condition:
        condition.wait_for(lambda: found() is not None, timeout)
        run = found()
    assert run is not None, f"no run logged {pattern!r}:\n" + "\n---\n".join(r.log() for r in runs)
    return run


def wait_for_lease_renewals(
    api: kubernetes.client.ApiClient, namespace: str, name: str, renewals: int = 2
) -> None:
    """Until Lease ``namespace/name`` has been renewed ``renewals`` times by a holder.

    A watch, not a poll: so that a leader has led for a moment before a cell
    stops it, and the picture shows its leadership.
    """
    seen: set[str] = set()

    def renewed(leases: dict[str, Any]) -> bool:
        spec = (leases.get(name) or {}).get("spec") or {}
        if spec.get("holderIdentity"):
            seen.add(spec.get("renewTime") or "")
        return len(seen) > renewals

    wait_for(
        kubernetes.client.CoordinationV1Api(api).list_namespaced_lease,
        renewed,
        what=f"{renewals} renewals of Lease {namespace}/{name}",
        timeout=60,
        namespace=namespace,
    )
