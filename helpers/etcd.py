"""A tiny etcd client, to look underneath the API server.

Everything the API server stores lives in etcd under ``/registry/...``, and an
object's ``resourceVersion`` is the etcd revision at which it last changed.
etcd serves a JSON gateway to its gRPC API over HTTP, so a few lines of
``urllib`` are enough to read a key, learn the current revision, or compact
old revisions away (which is how chapter 01 makes a watch's resourceVersion
expire for real, and the API server answer 410 Gone).

Only the local control plane exposes etcd on 127.0.0.1; kind keeps it inside
the node container. The local control plane's etcd speaks HTTPS and answers
only a client that shows a certificate signed by the cluster's CA (as the API
server does): the cluster's own key, readable by the user who started it and
nobody else. :attr:`helpers.cluster.local.LocalCluster.etcd_url` remembers where
those files are for its URL (:func:`remember_tls`), so ``EtcdClient(url)`` with
the URL it gave finds them; a cluster started by an older version of the course
still answers plain HTTP.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EtcdValue:
    key: str
    value: bytes
    mod_revision: int
    create_revision: int


@dataclass(frozen=True)
class EtcdTLS:
    """What an HTTPS etcd asks of a client: the CA that signed its certificate, and a client
    certificate and key signed by a CA it trusts."""

    ca: Path
    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        return context


_KNOWN_TLS: dict[str, EtcdTLS] = {}


def remember_tls(url: str, tls: EtcdTLS) -> None:
    """Let ``EtcdClient(url)`` find the client certificate for etcd at ``url``."""
    _KNOWN_TLS[url.rstrip("/")] = tls


@dataclass(frozen=True)
class EtcdClient:
    """Talks to one etcd endpoint, e.g. ``https://127.0.0.1:2379``.

    An ``https`` endpoint needs ``tls``; without it, the files remembered for
    that URL (:func:`remember_tls`) are used.
    """

    url: str
    timeout: float = 5.0
    tls: EtcdTLS | None = field(default=None, repr=False)

    def _context(self) -> ssl.SSLContext | None:
        if not self.url.startswith("https:"):
            return None
        tls = self.tls or _KNOWN_TLS.get(self.url.rstrip("/"))
        if tls is None:
            raise ValueError(
                f"etcd at {self.url} answers only a client with a certificate, and none is known "
                "for it: take the URL from helpers.cluster.info.describe(), which knows where "
                "the cluster keeps its certificate, or pass tls=EtcdTLS(ca, cert, key)."
            )
        return tls.context()

    def _request(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method="GET" if body is None else "POST"
        )
        with urllib.request.urlopen(
            request, timeout=self.timeout, context=self._context()
        ) as response:
            return json.load(response)

    def _call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._request(f"/v3/{method}", body)

    def healthy(self) -> bool:
        """Does etcd say it is healthy (its ``/health``)?"""
        return self._request("/health").get("health") == "true"

    def get(self, key: str) -> EtcdValue | None:
        """The value stored at ``key``, or None."""
        reply = self._call("kv/range", {"key": _b64(key)})
        for kv in reply.get("kvs", []):
            return EtcdValue(
                key=key,
                value=base64.b64decode(kv.get("value", "")),
                mod_revision=int(kv["mod_revision"]),
                create_revision=int(kv["create_revision"]),
            )
        return None

    def revision(self) -> int:
        """etcd's current revision: the newest resourceVersion anywhere in the cluster."""
        reply = self._call("kv/range", {"key": _b64("/registry/"), "limit": 1})
        return int(reply["header"]["revision"])

    def compact(self, revision: int) -> None:
        """Forget every revision older than ``revision``; watches from before it get 410."""
        self._call("kv/compaction", {"revision": revision, "physical": True})


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
