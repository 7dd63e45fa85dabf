"""The test proxy itself: it survives an upstream that refuses, and can stall connections.

A proxy whose accepting thread died would turn every later drill into a hang
(clients connect to a listener nobody accepts from), so a refused upstream
costs only that one client, counted, and the next connection works.
"""

from __future__ import annotations

import socket
import threading

import pytest

from helpers.faults.tcp_proxy import TcpProxy


class EchoServer:
    """Echoes every connection on 127.0.0.1:``port`` (0: any free port) until closed."""

    def __init__(self, port: int = 0) -> None:
        self.listener = socket.create_server(("127.0.0.1", port))
        self.address = self.listener.getsockname()
        self.threads = [threading.Thread(target=self._accept, name="echo-accept")]
        self.threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            thread = threading.Thread(target=self._echo, args=(connection,), name="echo")
            self.threads.append(thread)
            thread.start()

    @staticmethod
    def _echo(connection: socket.socket) -> None:
        with connection:
            try:
                while data := connection.recv(1024):
                    connection.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for thread in self.threads:
            thread.join(5)


def through(proxy: TcpProxy) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    return client


def test_a_refused_upstream_costs_one_client_and_the_next_one_works() -> None:
    with socket.socket() as probe:  # a port nothing listens on, for now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with TcpProxy(("127.0.0.1", port)) as proxy:
        with through(proxy) as refused:
            assert refused.recv(1) == b"", "the proxy should close a client it cannot forward"
        assert proxy.refused == 1

        server = EchoServer(port)  # the upstream comes back on the same port
        try:
            with through(proxy) as client:
                client.sendall(b"still here")
                assert client.recv(1024) == b"still here"
        finally:
            proxy.cut()  # our end closes first, so the server's threads see the end too
            server.close()
        assert proxy.accepted == 1
        assert proxy.refused == 1


def test_stall_keeps_connections_open_and_silent_while_new_ones_flow() -> None:
    server = EchoServer()
    try:
        with TcpProxy(server.address) as proxy, through(proxy) as stalled:
            stalled.sendall(b"before")
            assert stalled.recv(1024) == b"before"

            assert proxy.stall() == 1
            stalled.sendall(b"lost")
            stalled.settimeout(0.5)
            try:
                got = stalled.recv(1024)
            except TimeoutError:
                got = None
            assert got is None, "a stalled connection must neither answer nor close"

            with through(proxy) as fresh:
                fresh.sendall(b"new")
                assert fresh.recv(1024) == b"new"
            proxy.cut()
    finally:
        server.close()


def test_cut_ends_the_stream_and_reset_resets_it() -> None:
    """cut(): the client reads end of stream; reset(): the client reads ECONNRESET."""
    server = EchoServer()
    try:
        with TcpProxy(server.address) as proxy:
            with through(proxy) as cut:
                cut.sendall(b"ping")
                assert cut.recv(1024) == b"ping"
                assert proxy.cut() == 1
                assert cut.recv(1024) == b""
            with through(proxy) as reset:
                reset.sendall(b"ping")
                assert reset.recv(1024) == b"ping"
                assert proxy.reset() == 1
                with pytest.raises(ConnectionResetError):
                    reset.recv(1024)
    finally:
        server.close()
