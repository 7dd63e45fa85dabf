"""The test proxy itself: it survives an upstream that refuses, can stall and slow connections.

A proxy whose accepting thread died would turn every later drill into a hang
(clients connect to a listener nobody accepts from), so a refused upstream
costs only that one client, counted, and the next connection works.
"""

from __future__ import annotations

import socket
import threading

import kubernetes
import pytest

from helpers.faults.tcp_proxy import TcpProxy, proxied_client


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


class RecordingServer:
    """Accepts one connection on a free port and keeps what arrives, for tests to wait on."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()
        self.received = b""
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._serve, name="recording-server")
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            while data := connection.recv(1024):
                with self.changed:
                    self.received += data
                    self.changed.notify_all()

    def wait_for(self, expected: bytes, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.received == expected, timeout)

    def close(self) -> None:
        self.listener.close()
        self.thread.join(5)


def test_stall_passes_on_nothing_that_arrives_after_it() -> None:
    """Not even a chunk that arrives while the connection's thread waits in select().

    The proxy used to read and pass on that one chunk; whether this test sees
    it depends on where that thread was when stall() came (about one run in
    three did), so the test guards the property more than it reproduces the bug.
    """
    server = RecordingServer()
    try:
        with TcpProxy(server.address) as proxy, through(proxy) as client:
            client.sendall(b"before")
            assert server.wait_for(b"before", 5)
            proxy.stall()
            client.sendall(b"after")
            # Waiting for something that must not happen: the timeout is the good outcome.
            assert not server.wait_for(b"beforeafter", 1.0), "a chunk crossed a stalled connection"
            proxy.cut()
    finally:
        server.close()


def test_slow_holds_every_chunk_on_old_and_new_connections_until_lowered() -> None:
    server = EchoServer()
    try:
        with TcpProxy(server.address) as proxy, through(proxy) as old:
            old.sendall(b"quick")
            assert old.recv(1024) == b"quick"
            proxy.slow(60)
            old.sendall(b"slow")
            with through(proxy) as new:
                new.sendall(b"new")
                for client in (old, new):
                    client.settimeout(0.5)
                    with pytest.raises(TimeoutError):  # the good outcome: nothing for now
                        client.recv(1024)
                proxy.slow(0)  # the held chunks go at once
                for client, sent in ((old, b"slow"), (new, b"new")):
                    client.settimeout(5)
                    assert client.recv(1024) == sent
            proxy.cut()
    finally:
        server.close()


def test_leaving_the_proxy_frees_chunks_held_by_slow() -> None:
    """A test that forgot slow(0) must not hang in the proxy's __exit__ for a minute."""
    server = EchoServer()
    try:
        with TcpProxy(server.address) as proxy, through(proxy) as client:
            proxy.slow(60)
            client.sendall(b"held")
            left = threading.Event()

            def leave() -> None:
                proxy.__exit__(None, None, None)
                left.set()

            leaving = threading.Thread(target=leave, name="leave-proxy")
            leaving.start()
            assert left.wait(10), "leaving the proxy waited for a held chunk"
            leaving.join(5)
    finally:
        server.close()


@pytest.mark.cluster
def test_proxied_client_without_a_folder_goes_through_the_proxy() -> None:
    """The drills of chapter 09b give no folder: the kubeconfig copy lives in a temporary one."""
    with proxied_client() as (proxy, client):
        kubernetes.client.CoreV1Api(client).list_namespace(limit=1)
        assert proxy.accepted >= 1
