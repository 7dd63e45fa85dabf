"""A cluster the course did not create, for the tests that prove it is never sent a request.

The decoy is a TCP listener on loopback that counts every connection made to it; a kubeconfig
points at it (tests/test_course_cluster_only.py, tests/test_not_the_courses.py,
tests/test_fault_drills.py). A support module of the tests, not a test module.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import yaml

DECOY_CONTEXT = "work-cluster"
# A real self-signed CA certificate (made once with `openssl req -x509`), for the identity tests.
CA_PEM = """-----BEGIN CERTIFICATE-----
MIIBiDCCAS2gAwIBAgIUZ7ZMi2uaqnx6jZxZscabNtKYRSAwCgYIKoZIzj0EAwIw
GDEWMBQGA1UEAwwNZGVjb3ktdGVzdC1jYTAgFw0yNjEyMDQwMjQ0MzlaGA8yMTI2
MTExMDAyNDQzOVowGDEWMBQGA1UEAwwNZGVjb3ktdGVzdC1jYTBZMBMGByqGSM49
AgEGCCqGSM49AwEHA0IABNHXtcOkmuMbo1j48CCdtOtzYMPwojsZgZGp71mBp6xa
zJDn4v9CzLA487mWL2XrTeflgkNgKINY3ZVw/B9MKQejUzBRMB0GA1UdDgQWBBRh
xL+RfJvWcEFo6/tH6izrGLLM7DAfBgNVHSMEGDAWgBRhxL+RfJvWcEFo6/tH6izr
GLLM7DAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQDvFpem62kT
zlH2CdYVflmueIphRLkJ7Ve6kwvZkMpNagIhALCcYGMXYN1D/dc+EzfaF3f1kChG
WWIkrUJfhpNnEOqu
-----END CERTIFICATE-----
"""


class Decoy:
    """A listener on 127.0.0.1 that accepts, counts and closes every connection."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="decoy-accept")

    def __enter__(self) -> Decoy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.close()


def write_decoy_kubeconfig(path: Path, port: int) -> Path:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "work", "cluster": {
            "server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "me", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": DECOY_CONTEXT, "context": {"cluster": "work", "user": "me"}}],
        "current-context": DECOY_CONTEXT,
    }  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path
