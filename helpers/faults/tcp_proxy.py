"""A loopback TCP proxy that can cut, reset, refuse, stall or slow connections on demand.

To test what a watch does when its connection dies mid-stream, the client
talks to the API server through this proxy; :meth:`TcpProxy.cut` then
shuts down every connection at once, as a network failure or a load balancer
restart would (the client reads an unexpected end of stream); :meth:`TcpProxy.reset`
makes it read a connection reset instead. :meth:`TcpProxy.stall` is the quieter
failure: the connections stay open but nothing crosses them any more (a peer
that went to sleep, a NAT entry that expired), which only a client-side read
timeout notices. :meth:`TcpProxy.slow` is a slow link: every chunk, on every
connection old or new, waits before it is passed on (a request that takes a
minute, for as long as a test wants one). TLS passes through untouched (the
API server's certificate is valid for 127.0.0.1, which the proxy also is).

An upstream that refuses a connection costs only that client (closed, and
counted in ``refused``); the proxy carries on accepting.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import yaml

from helpers import kube
from helpers.private_files import write_private

Pair = tuple[socket.socket, socket.socket]


class TcpProxy:
    """Forward ``127.0.0.1:<port>`` to ``target``; ``cut()`` severs live connections."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = self._listen(0)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._blocked = threading.Event()
        self._lock = threading.Lock()
        # Each open connection, and whether it still forwards (cleared by stall()).
        self._connections: dict[Pair, threading.Event] = {}
        self._threads: list[threading.Thread] = []
        self.accepted = 0
        self.refused = 0
        self._delay = 0.0  # seconds each chunk waits before it is passed on (slow())
        self._delay_changed = threading.Condition()
        self._acceptor = threading.Thread(target=self._accept, name="tcp-proxy-accept")

    def __enter__(self) -> TcpProxy:
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        with self._delay_changed:  # chunks held back by slow() go (nowhere) now
            self._delay_changed.notify_all()
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

    def stall(self) -> int:
        """Stop forwarding on every open connection, leaving it open; return how many.

        New connections forward as usual: only the stalled ones go silent.
        """
        with self._lock:
            flows = list(self._connections.values())
        for flowing in flows:
            flowing.clear()
        return len(flows)

    def slow(self, seconds: float) -> None:
        """Hold every chunk ``seconds`` before passing it on, on every connection (0: at once).

        Unlike :meth:`stall`, new connections are slow too, so a client cannot
        escape to a fresh one. Lowering the delay lets chunks that wait go as
        soon as their new time has come (at once, for 0).
        """
        with self._delay_changed:
            self._delay = max(0.0, seconds)
            self._delay_changed.notify_all()

    def _hold_back(self, received: float) -> None:
        """Wait until a chunk received at ``received`` may go, as slow() says now."""
        with self._delay_changed:
            while not self._stop.is_set():
                left = received + self._delay - time.monotonic()
                if left <= 0:
                    return
                self._delay_changed.wait(left)

    def cut(self) -> int:
        """Shut down every open connection, both directions; return how many."""
        with self._lock:
            pairs = list(self._connections)
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        return len(pairs)

    def reset(self) -> int:
        """Reset every open connection (the client reads ECONNRESET); return how many.

        A socket closed with a zero linger time sends RST instead of FIN. The pump
        thread does the closing: shutting down our reading side wakes it, and its
        ``finally`` closes the client socket, now with that linger setting.
        """
        with self._lock:
            pairs = list(self._connections)
        for client, _ in pairs:
            with contextlib.suppress(OSError):
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.shutdown(socket.SHUT_RD)
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
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:  # refused (the server is down), unreachable, timed out
                with self._lock:  # counted before the client can see its connection end
                    self.refused += 1
                client.close()
                continue
            upstream.settimeout(None)
            pair = (client, upstream)
            flowing = threading.Event()
            flowing.set()
            with self._lock:
                self._connections[pair] = flowing
                self.accepted += 1
            thread = threading.Thread(
                target=self._pump, args=(pair, flowing), name="tcp-proxy-pump"
            )
            self._threads.append(thread)
            thread.start()

    def _pump(self, pair: Pair, flowing: threading.Event) -> None:
        client, upstream = pair
        with selectors.DefaultSelector() as selector:  # each socket's data: (it, its peer)
            selector.register(client, selectors.EVENT_READ, (client, upstream))
            selector.register(upstream, selectors.EVENT_READ, (upstream, client))
            try:
                while not self._stop.is_set():
                    if not flowing.is_set():  # stalled: read nothing, send nothing, stay open
                        self._stop.wait(0.5)
                        continue
                    for key, _ in selector.select(timeout=0.5):
                        if not flowing.is_set():  # stalled while we waited: leave it unread
                            break
                        source, sink = key.data
                        data = source.recv(65536)
                        if not data:
                            return
                        if self._delay:
                            self._hold_back(time.monotonic())
                        sink.sendall(data)
            except OSError:
                return
            finally:
                with self._lock:
                    self._connections.pop(pair, None)
                client.close()
                upstream.close()


def kubeconfig_through(proxy: TcpProxy, source: Path, destination: Path) -> Path:
    """A copy of ``source`` whose current cluster's server is the proxy."""
    document = yaml.safe_load(source.read_text())
    for cluster in document["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    write_private(destination, yaml.safe_dump(document))  # it holds the cluster's credentials
    return destination


@contextlib.contextmanager
def proxied_client(
    directory: Path | None = None,
) -> Iterator[tuple[TcpProxy, kubernetes.client.ApiClient]]:
    """A TcpProxy to the course's API server, and an ApiClient whose connections go through it.

    The client is made as the ``api`` fixture makes it, from a copy of the
    default kubeconfig (written into ``directory``, or into a temporary folder
    deleted on the way out: the copy holds the cluster's credentials) that
    points at the proxy.
    """
    with contextlib.ExitStack() as stack:
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="proxied-")))
        kubeconfig = kube.default_kubeconfig()
        _, server = kube.describe_context(kubeconfig, None)
        proxy = stack.enter_context(TcpProxy(("127.0.0.1", int(server.rsplit(":", 1)[1]))))
        yield proxy, kube.connect(kubeconfig_through(proxy, kubeconfig, directory / "proxied"))
