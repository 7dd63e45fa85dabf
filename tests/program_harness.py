"""Test helpers for controller processes: their flags, a stalling proxy, the API server's address.

The processes themselves are :class:`helpers.runner.ControllerRun` (chapter 08 uses them too).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from helpers.faults.tcp_proxy import TcpProxy
from helpers.runner import ROOT, ControllerRun, assert_never_two_leaders, first_to_log

__all__ = [
    "ROOT",
    "ControllerRun",
    "StallingProxy",
    "api_server_address",
    "assert_never_two_leaders",
    "eventually",
    "first_to_log",
    "program_args",
]


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
