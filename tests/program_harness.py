"""Run the controller as real processes, read their logs, check their leadership timeline.

Each :class:`ControllerRun` is one ``python -m helpers.program`` process. A
reader thread (named, joined when the process's stderr closes) collects its log
lines, so a test can wait for a line without sleeping. The "started/stopped
leading ... (monotonic T)" lines carry the system-wide monotonic clock, so the
lines of several processes, and the test's own ``time.monotonic()`` (say, the
moment it sent SIGKILL), lie on one timeline.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from tests.tcp_proxy import TcpProxy

ROOT = Path(__file__).resolve().parents[1]
LEADERSHIP = re.compile(
    r"(?P<what>started|stopped) leading lease (?P<lease>\S+) as (?P<who>\S+) "
    r"\(monotonic (?P<at>[\d.]+)\)"
)


class ControllerRun:
    """One controller process; its stderr lines, and when it ended."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        name: str = "controller",
        condition: threading.Condition | None = None,
    ) -> None:
        self.name = name
        self.args = list(args)
        self.lines: list[str] = []
        # Notified for every new line; runs that share it can be waited on together.
        self.changed = condition if condition is not None else threading.Condition()
        self.started_at = time.monotonic()
        self.killed_at: float | None = None
        self.process = subprocess.Popen(
            [sys.executable, "-m", "helpers.program", *self.args],
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

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match[str]:
        """The first log line matching ``pattern``; fails if the process ends without one."""
        regex = re.compile(pattern)

        def found() -> re.Match[str] | None:
            return next((m for m in map(regex.search, self.lines) if m), None)

        with self.changed:
            ok = self.changed.wait_for(
                lambda: found() is not None or not self._reader.is_alive(), timeout
            )
            match = found()
        assert ok and match, f"{self.name}: no line matching {pattern!r}:\n{self.log()}"
        return match

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


def program_args(
    namespace: str,
    *extra: str,
    identity: str | None = None,
    lease_namespace: str | None = None,
    durations: tuple[float, float, float] | None = None,
) -> list[str]:
    """Flags for a controller in ``namespace`` with leader election (a Lease there)."""
    args = [
        "--namespace", namespace,
        "--leader-elect",
        "--leader-elect-lease-namespace", lease_namespace or namespace,
        "--metrics-bind-address", "127.0.0.1:0",
        "--health-probe-bind-address", "127.0.0.1:0",
    ]  # fmt: skip
    if identity:
        args += ["--leader-elect-identity", identity]
    if durations:
        lease, renew, retry = durations
        args += [
            "--leader-elect-lease-duration", str(lease),
            "--leader-elect-renew-deadline", str(renew),
            "--leader-elect-retry-period", str(retry),
        ]  # fmt: skip
    return [*args, *extra]


def eventually(check: Callable[[], bool], timeout: float, what: str) -> None:
    """For what announces nothing (an HTTP endpoint): ask again every 0.1 s."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


class StallingProxy(TcpProxy):
    """A :class:`TcpProxy` whose :meth:`stall` also silences connections opened later.

    While stalled, every request is sent and never answered, as when a network
    path goes quiet: exactly the case a request timeout exists for (a client
    that reconnects must not get through either).
    """

    def __init__(self, target: tuple[str, int]) -> None:
        super().__init__(target)
        self._stall_new = threading.Event()

    def stall(self) -> int:
        self._stall_new.set()
        return super().stall()

    def _pump(self, pair: tuple[socket.socket, socket.socket], flowing: threading.Event) -> None:
        if self._stall_new.is_set():
            flowing.clear()
        super()._pump(pair, flowing)


def api_server_address(kubeconfig: Path) -> tuple[str, int]:
    """Host and port of the current context's server."""
    document = yaml.safe_load(kubeconfig.read_text())
    current = next(c for c in document["contexts"] if c["name"] == document["current-context"])
    cluster = next(c for c in document["clusters"] if c["name"] == current["context"]["cluster"])
    url = urlsplit(cluster["cluster"]["server"])
    assert url.hostname and url.port
    return url.hostname, url.port
