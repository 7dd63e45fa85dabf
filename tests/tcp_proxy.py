"""A loopback TCP proxy that can cut every open connection on demand.

To test what a watch does when its connection dies mid-stream, the client
talks to the API server through this proxy; :meth:`TcpProxy.cut` then
shuts down every connection at once, as a network failure or a load balancer
restart would. TLS passes through untouched (the API server's certificate is
valid for 127.0.0.1, which the proxy also is).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from pathlib import Path

import yaml


class TcpProxy:
    """Forward ``127.0.0.1:<port>`` to ``target``; ``cut()`` severs live connections."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = self._listen(0)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._blocked = threading.Event()
        self._lock = threading.Lock()
        self._connections: set[tuple[socket.socket, socket.socket]] = set()
        self._threads: list[threading.Thread] = []
        self.accepted = 0
        self._acceptor = threading.Thread(target=self._accept, name="tcp-proxy-accept")

    def __enter__(self) -> TcpProxy:
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._acceptor.join()
        self.cut()
        for thread in self._threads:
            thread.join(timeout=5)
        self._listener.close()

    @staticmethod
    def _listen(port: int) -> socket.socket:
        listener = socket.create_server(("127.0.0.1", port))  # sets SO_REUSEADDR
        listener.settimeout(0.2)
        return listener

    def block(self) -> None:
        """Refuse new connections (connection refused, as if the server were down).

        Connections already open carry on: only new ones are refused, until
        :meth:`unblock`.
        """
        with self._lock:
            self._blocked.set()
            self._listener.close()

    def unblock(self) -> None:
        with self._lock:
            self._listener = self._listen(self.port)
            self._blocked.clear()

    def cut(self) -> int:
        """Shut down every open connection, both directions; return how many."""
        with self._lock:
            pairs = list(self._connections)
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        return len(pairs)

    def _accept(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                listener = self._listener
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed by block(); unblock() opens a new one
                self._stop.wait(0.05)
                continue
            upstream = socket.create_connection(self.target)
            pair = (client, upstream)
            with self._lock:
                self._connections.add(pair)
                self.accepted += 1
            thread = threading.Thread(target=self._pump, args=(pair,), name="tcp-proxy-pump")
            self._threads.append(thread)
            thread.start()

    def _pump(self, pair: tuple[socket.socket, socket.socket]) -> None:
        client, upstream = pair
        peer = {client: upstream, upstream: client}
        with selectors.DefaultSelector() as selector:
            selector.register(client, selectors.EVENT_READ)
            selector.register(upstream, selectors.EVENT_READ)
            try:
                while not self._stop.is_set():
                    for key, _ in selector.select(timeout=0.5):
                        data = key.fileobj.recv(65536)
                        if not data:
                            return
                        peer[key.fileobj].sendall(data)
            except OSError:
                return
            finally:
                with self._lock:
                    self._connections.discard(pair)
                client.close()
                upstream.close()


def kubeconfig_through(proxy: TcpProxy, source: Path, destination: Path) -> Path:
    """A copy of ``source`` whose current cluster's server is the proxy."""
    document = yaml.safe_load(source.read_text())
    for cluster in document["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    destination.write_text(yaml.safe_dump(document))
    return destination
