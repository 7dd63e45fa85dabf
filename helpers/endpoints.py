"""The controller's HTTP side: ``/metrics`` for Prometheus, ``/healthz`` and ``/readyz``.

Counterparts: controller-runtime's metrics server (``--metrics-bind-address``)
and health probe server (``--health-probe-bind-address``) with
``healthz.Ping``; kube-controller-manager's ``/healthz`` with a leader election
check (client-go ``HealthzAdaptor``).

Why two kinds of check:

* **liveness** (``/healthz``): is the process able to make progress at all? A
  failed liveness probe makes the kubelet *restart* the container; so it only
  fails for what a restart fixes (a leader that stopped renewing: a deadlock).
* **readiness** (``/readyz``): should this replica count as available? Ours is
  ready once its informers' caches have synced. A failed readiness probe only
  takes the Pod out of service; during a rolling update the next Pod is not
  started until this one is ready.

A check is a function returning ``None`` when all is well, or a sentence
saying what is wrong. The answer lists every check the way the API server's own
``/healthz?verbose`` does (``[+]ping ok``, ``[-]informers failed: ...``).

``serve(address, routes)`` runs a ``ThreadingHTTPServer`` on a thread named
``http-<name>``; ``stop()`` shuts it down and joins it. An address ``"0"``
means "do not serve" (as in controller-runtime).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

log = logging.getLogger("helpers.endpoints")

Check = Callable[[], "str | None"]
"""A health check: None if fine, else why not."""

Route = Callable[[Mapping[str, str]], tuple[int, str, bytes]]
"""A handler: request headers in, (status, content type, body) out."""


def parse_address(address: str) -> tuple[str, int] | None:
    """``":8080"`` -> ``("", 8080)`` (every interface); ``"127.0.0.1:0"``; ``"0"`` -> None."""
    if address in ("", "0"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address {address!r} is not [host]:port (or 0 to turn it off)")
    return host.strip("[]"), int(port)


def metrics_route(registry: CollectorRegistry) -> Route:
    """``/metrics``: the registry in the format the scraper asks for (text or OpenMetrics)."""

    def handle(headers: Mapping[str, str]) -> tuple[int, str, bytes]:
        encoder, content_type = choose_encoder(headers.get("Accept", ""))
        return 200, content_type, encoder(registry)

    return handle


def checks_route(kind: str, checks: Mapping[str, Check]) -> Route:
    """``/healthz`` or ``/readyz``: 200 "ok" if every check passes, else 500 with the list."""

    def handle(headers: Mapping[str, str]) -> tuple[int, str, bytes]:
        lines, failed = [], False
        for name, check in checks.items():
            try:
                problem = check()
            except Exception as err:  # a broken check is a failed check, not a crash
                problem = f"{type(err).__name__}: {err}"
            failed = failed or problem is not None
            lines.append(f"[+]{name} ok" if problem is None else f"[-]{name} failed: {problem}")
        lines.append(f"{kind} check failed" if failed else f"{kind} check passed")
        return (500 if failed else 200), "text/plain; charset=utf-8", "\n".join(lines).encode()

    return handle


class Endpoint:
    """One HTTP server for some routes, on a thread this object owns."""

    def __init__(self, name: str, address: tuple[str, int], routes: Mapping[str, Route]) -> None:
        self.name = name
        self.routes = dict(routes)
        self._server = ThreadingHTTPServer(address, _handler_for(self.routes))
        self._server.daemon_threads = True  # one per request; a stuck scraper must not block stop
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"http-{name}", kwargs={"poll_interval": 0.2}
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
        return f"http://{shown}:{port}"

    def start(self) -> Endpoint:
        self._thread.start()
        log.info("serving %s on %s (%s)", self.name, self.url, ", ".join(self.routes))
        return self

    def stop(self) -> None:
        """Stop serving, close the socket, join the thread."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()


def serve(name: str, address: str, routes: Mapping[str, Route]) -> Endpoint | None:
    """Start an :class:`Endpoint` at ``address``; None when the address is ``"0"``."""
    parsed = parse_address(address)
    if parsed is None:
        return None
    return Endpoint(name, parsed, routes).start()


def _handler_for(routes: Mapping[str, Route]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            route = routes.get(urlsplit(self.path).path)
            if route is None:
                status, content_type, body = 404, "text/plain", b"not found\n"
            else:
                status, content_type, body = route(dict(self.headers.items()))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("%s %s", self.address_string(), format % args)

    return Handler
